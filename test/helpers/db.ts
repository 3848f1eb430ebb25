import { randomBytes } from 'node:crypto';
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.js';
import type { EmbeddedPostgres } from '../../src/db/embedded.js';
import { databaseControl, startDatabaseProcess, stopDatabaseProcess } from './database-process.js';

/** A fresh, migrated database for one test file, dropped on close. */
export interface TestDatabase {
  db: Database;
  /** Connection URL (undefined for the embedded one). */
  url: string | undefined;
  close(): Promise<void>;
}

/** Whether the tests run on a PostgreSQL server (TEST_DATABASE_URL) rather than the embedded one. */
export const ON_SERVER = Boolean(process.env.TEST_DATABASE_URL);

/**
 * A `describe` block that needs a PostgreSQL server: transactions racing on several
 * connections, a LISTEN connection to cut. The embedded database serves one connection, on
 * which such tests pass without proving anything, so there the block is skipped and its title
 * says why (the run's summary lists it; see skipped-reporter.ts).
 */
export function describeOnServer(title: string, why: string, fn: () => void): void {
  if (ON_SERVER) describe(title, fn);
  else describe.skip(`${title} [skipped: needs TEST_DATABASE_URL, ${why}]`, fn);
}

/** Why a race test proves nothing on the embedded database. */
export const ONE_CONNECTION = 'the embedded database runs one transaction at a time, so nothing can race';

/**
 * The migrated embedded database test/helpers/global-setup.ts prepared for this run: `pg/` (a
 * data directory) and `pg.tar` (the same as a PGlite `dumpDataDir` tarball). Undefined under a
 * Jest config without that globalSetup (the browser tests): there each database migrates itself.
 */
const TEMPLATE: string | undefined = process.env.WG_TEST_EMBEDDED_TEMPLATE;

/**
 * The Jest worker's embedded databases (test/helpers/environment.js, served by a process of their
 * own), each put back to the migrated template when a file takes it, or undefined under another
 * test environment; it answers undefined when the file already holds all of them.
 */
const workerEmbedded = (globalThis as { __walletGatewayEmbedded?: (maxConnections: number) => Promise<EmbeddedPostgres | undefined> })
  .__walletGatewayEmbedded;

/**
 * On TEST_DATABASE_URL (CI: the machine's PostgreSQL) a new database is created per call and
 * dropped afterwards; without it, one of the Jest worker's embedded PostgreSQL databases (PGlite)
 * emptied back to the migrated template (a file's first, and each one it holds at the same time,
 * are loaded once per worker and reset between files). A second gateway that may share the
 * first one's database does (`startSecondInstance` in ./app.ts), as a second process would.
 */
export async function createTestDatabase(poolMax = 10): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    const embedded = await workerEmbedded?.(poolMax + 10);
    if (embedded) {
      try {
        const db = await openDatabase({ embedded, poolMax });
        return { db, url: undefined, close: () => db.close().finally(() => embedded.close()) };
      } catch (err) {
        await embedded.close();
        throw err;
      }
    }
    if (!TEMPLATE) return ownEmbedded(poolMax);
    // The file holds all of the worker's: a database process of its own for this one, so no
    // PGlite loads into the Jest worker.
    const { child, port } = await startDatabaseProcess(TEMPLATE);
    try {
      const { url } = await databaseControl(port, 'acquire', { maxConnections: poolMax + 10 });
      const db = await openDatabase({ embedded: { url: url!, close: () => stopDatabaseProcess(child) }, poolMax });
      return { db, url: undefined, close: () => db.close().finally(() => stopDatabaseProcess(child)) };
    } catch (err) {
      await stopDatabaseProcess(child);
      throw err;
    }
  }
  const name = `wg_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  const db = await openDatabase({ url: url.toString(), poolMax });
  return {
    db,
    url: url.toString(),
    async close() {
      await db.close();
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** Without the template (a Jest config without test/helpers/global-setup.ts): a PGlite in this process that migrates itself. */
async function ownEmbedded(poolMax: number): Promise<TestDatabase> {
  const db = await openDatabase({ dataDir: 'memory://', poolMax });
  return { db, url: undefined, close: () => db.close() };
}

/**
 * A new temporary DATA_DIR whose embedded database is already migrated (a copy of this run's
 * template), for tests that hand a process (`dist/src/main.js`, the CLI) its own directory
 * without waiting for PostgreSQL to initialise there (empty without a template). The caller
 * removes it.
 */
export async function migratedDataDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  if (TEMPLATE) await cp(path.join(TEMPLATE, 'pg'), path.join(dir, 'pg'), { recursive: true });
  return dir;
}
