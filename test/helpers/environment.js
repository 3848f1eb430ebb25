// Jest test environment: Node's, plus one embedded PostgreSQL per Jest worker.
//
// Plain JavaScript on purpose: Jest loads the environment with Node's own loader, once per
// worker process, outside the per-file module registry. What this module keeps therefore
// outlives a test file, which is the point: starting PGlite from the migrated template costs
// about 1.5 CPU-seconds, and most files want a fresh database. Here a worker starts PGlite once;
// before each file that asks for it (test/helpers/db.ts) it is put back to the migrated state
// (session reset, every table emptied, sequences restarted) and served on a new socket server,
// which is stopped after the file (rolling back whatever a connection left open).
// On TEST_DATABASE_URL (a PostgreSQL server) none of this runs: each file creates a database.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { TestEnvironment } from 'jest-environment-node';

/** Set by test/helpers/global-setup.ts: the migrated template (pg.tar). */
const TEMPLATE_VAR = 'WG_TEST_EMBEDDED_TEMPLATE';

/** The worker's PGlite: { pglite, tables, fingerprint, used } once started. */
let shared;

/** What must be the same as the template's after a reset: tables, columns, triggers, functions, sequences. */
const FINGERPRINT = `
  select md5(coalesce(string_agg(x, ',' order by x), '')) as f from (
    select c.relkind::text || ':' || c.relname || ':' || coalesce((select string_agg(a.attname || ' ' || a.atttypid::text, ';' order by a.attnum)
      from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), '') as x
      from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'
    union all select 't:' || tgrelid::regclass::text || ':' || tgname from pg_trigger where not tgisinternal
    union all select 'p:' || p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'
  ) s`;

async function startShared() {
  const template = process.env[TEMPLATE_VAR];
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = await PGlite.create('memory://', { loadDataDir: new Blob([await readFile(path.join(template, 'pg.tar'))]) });
  const { rows } = await pglite.query(
    `select quote_ident(tablename) as t from pg_tables where schemaname = 'public' and tablename <> 'mikro_orm_migrations' order by 1`,
  );
  const tables = rows.map((r) => r.t);
  const fingerprint = (await pglite.query(FINGERPRINT)).rows[0].f;
  return { pglite, tables, fingerprint, used: false };
}

/** Back to the migrated template: a clean session, empty tables, restarted sequences; a new PGlite if a file changed the schema. */
async function reset() {
  const { pglite } = shared;
  await pglite.exec('discard all');
  if ((await pglite.query(FINGERPRINT)).rows[0].f !== shared.fingerprint) {
    await pglite.close();
    shared = await startShared();
    return;
  }
  // Triggers off for the truncation only: the append-only audit log refuses TRUNCATE, rightly, to the gateway.
  if (shared.tables.length > 0) {
    await pglite.exec(`set session_replication_role = replica; truncate ${shared.tables.join(', ')} restart identity cascade; set session_replication_role = default`);
  }
}

/**
 * Closes this process's PGlite (test/helpers/global-teardown.js): needed when Jest runs the files
 * in its own process (one file, --runInBand), where PostgreSQL's timers would keep it alive;
 * worker processes are ended by Jest.
 */
export async function closeWorkerDatabase() {
  const s = shared;
  shared = undefined;
  await s?.pglite.close();
}

export default class GatewayTestEnvironment extends TestEnvironment {
  /** This file's socket server on the worker's PGlite, while it runs. */
  server;

  async setup() {
    await super.setup();
    // Without the template (the browser tests' config) each database migrates itself, as before.
    if (process.env.TEST_DATABASE_URL || !process.env[TEMPLATE_VAR]) return;
    // Called by test/helpers/db.ts for the file's first database: the worker's embedded
    // PostgreSQL, as the migrated template, on a loopback port of its own.
    this.global.__walletGatewayEmbedded = async (maxConnections) => {
      if (this.server) throw new Error('the worker database is already taken by this file');
      if (!shared) shared = await startShared();
      else if (shared.used) await reset();
      shared.used = true;
      // The gateway's own session server (TypeScript, loaded with Node's type stripping).
      const { sessionServer } = await import('../../src/db/pglite-session.ts');
      const server = sessionServer(shared.pglite, { host: '127.0.0.1', port: 0, maxConnections });
      await server.start();
      this.server = server;
      return { db: shared.pglite, url: `postgresql://postgres@${server.getServerConn()}/postgres`, close: async () => undefined };
    };
  }

  async teardown() {
    const server = this.server;
    this.server = undefined;
    await server?.stop();
    await super.teardown();
  }
}
