import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.js';

/** A fresh, migrated database for one test file, dropped on close. */
export interface TestDatabase {
  db: Database;
  /** Connection URL (null for the embedded one). */
  url: string | undefined;
  close(): Promise<void>;
}

/**
 * On TEST_DATABASE_URL (CI: the machine's PostgreSQL) a new database is created per test file
 * and dropped afterwards; without it an in-memory embedded PostgreSQL (PGlite) is used.
 */
export async function createTestDatabase(poolMax = 10): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    const db = await openDatabase({ dataDir: 'memory://', poolMax });
    return { db, url: undefined, close: () => db.close() };
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
