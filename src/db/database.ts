import { MikroORM } from '@mikro-orm/postgresql';
import type { Options } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import ormConfig from '../../mikro-orm.config.js';
import { runningEmbeddedUrl, startEmbeddedPostgres, type EmbeddedPostgres } from './embedded.js';
import { SqlPool } from './sql.js';

/** How long a statement waits for a lock before giving up (PostgreSQL lock_timeout). */
export const LOCK_TIMEOUT_MS = 3000;

export interface DatabaseOptions {
  /** A PostgreSQL URL; without it an embedded PostgreSQL (PGlite) is started. */
  url?: string | undefined;
  /** Where the embedded database keeps its files; `memory://` for a throwaway one. */
  dataDir?: string;
  poolMax?: number;
  /** Apply pending migrations before returning (default true). */
  migrate?: boolean;
  /** Where the driver's own messages go (e.g. "Connection Error"); without it, the console. */
  logger?: Logger;
  /**
   * A data-directory tarball (PGlite `dumpDataDir`) the embedded database starts from instead of
   * an empty one: the tests migrate one database per run and give every file a copy of it.
   */
  loadDataDir?: Blob;
  /**
   * An embedded PostgreSQL already running, that its owner closes (the tests keep one per Jest
   * worker, reset between files): used like one this call starts, but not closed with the database.
   */
  embedded?: EmbeddedPostgres;
}

/** The query builder's logger routed to pino: one JSON line, first line of the message only (no stack, no SQL). */
function driverLog(logger: Logger) {
  const line = (message: unknown): string => String(message).split('\n')[0]!.slice(0, 200);
  return {
    warn: (m: unknown) => logger.warn({ detail: line(m) }, 'database driver warning'),
    error: (m: unknown) => logger.error({ detail: line(m) }, 'database driver error'),
    deprecate: (m: unknown) => logger.debug({ detail: line(m) }, 'database driver deprecation'),
    debug: (m: unknown) => logger.debug({ detail: line(m) }, 'database driver debug'),
  };
}

/** An open database: the ORM plus whatever must be closed with it. */
export interface Database {
  readonly orm: MikroORM;
  /** The ORM's connection pool, for named statements and units of work (src/db/unit-of-work.ts). */
  readonly sql: SqlPool;
  /** The embedded PostgreSQL, when one was started. */
  readonly embedded: EmbeddedPostgres | undefined;
  readonly url: string;
  close(): Promise<void>;
}

/** Opens the ORM on DATABASE_URL or on an embedded PostgreSQL and runs pending migrations. */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const poolMax = opts.poolMax ?? 10;
  let embedded: EmbeddedPostgres | undefined = opts.url ? undefined : opts.embedded;
  const ownsEmbedded = !embedded;
  let url = opts.url ?? embedded?.url;
  if (!url) {
    const dataDir = opts.dataDir ?? '.data';
    const dir = dataDir.startsWith('memory://') ? dataDir : path.resolve(dataDir, 'pg');
    if (!dir.startsWith('memory://')) await mkdir(dir, { recursive: true });
    url = dir.startsWith('memory://') ? undefined : await runningEmbeddedUrl(dir);
    if (!url) {
      embedded = await startEmbeddedPostgres(dir, poolMax + 10, opts.loadDataDir);
      url = embedded.url;
    }
  }
  // PGlite is a single session and its socket server interleaves the protocol messages of
  // concurrent connections outside transactions, so the embedded database gets exactly one
  // connection: statements queue in the pool instead, and a wait there is for our own work.
  const pool = embedded ? 1 : poolMax;
  // On a server, fail fast while the database is unreachable: a request waits at most ~2.5 s
  // for a connection and then answers 503, instead of hanging until the client gives up.
  const acquireMs = embedded ? 60_000 : 2500;
  const options: Options = {
    ...ormConfig,
    clientUrl: url,
    pool: { min: 0, max: pool, idleTimeoutMillis: 10_000, acquireTimeoutMillis: acquireMs, createTimeoutMillis: 2500 },
    driverOptions: {
      acquireConnectionTimeout: acquireMs,
      ...(opts.logger ? { log: driverLog(opts.logger) } : {}),
      // A statement waits at most 3 s for a row lock (a stuck transaction elsewhere) and runs at most
      // 15 s: the request then answers 503 'The database is busy' instead of hanging (src/errors.ts).
      connection: { connectionTimeoutMillis: 2500, statement_timeout: 15_000, lock_timeout: LOCK_TIMEOUT_MS },
    },
  };
  let orm: MikroORM;
  try {
    orm = await MikroORM.init(options);
    if (opts.migrate ?? true) await orm.getMigrator().up();
  } catch (err) {
    if (ownsEmbedded) await embedded?.close();
    throw err;
  }
  const finalUrl = url;
  return {
    orm,
    sql: new SqlPool(orm.em.getKnex().client),
    embedded,
    url: finalUrl,
    async close() {
      await orm.close(true);
      if (ownsEmbedded) await embedded?.close();
    },
  };
}
