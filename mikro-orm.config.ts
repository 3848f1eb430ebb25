import { defineConfig } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './src/db/entities.js';
import { migrationsList } from './src/db/migrations/index.js';

/**
 * MikroORM settings shared by the gateway, the CLI and the tests. The connection URL is
 * supplied by `openDatabase()` (DATABASE_URL or the embedded PostgreSQL).
 */
export default defineConfig({
  entities,
  extensions: [Migrator],
  migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
  forceUtcTimezone: true,
  discovery: { warnWhenNoEntities: false },
  allowGlobalContext: false,
  debug: false,
});
