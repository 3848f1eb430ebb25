import type { EntityManager } from '@mikro-orm/postgresql';
import { EventType, type EntityClass, type EntityData, type TransactionEventArgs } from '@mikro-orm/core';

/** The part of a pooled `pg` client a prepared read uses. */
interface PooledClient {
  query(config: { name?: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * PostgreSQL's "prepared statement already exists" and "… does not exist": the connection's
 * session is not what the driver believes (connections sharing one session, as the embedded
 * PGlite behind its socket does; a pooler such as PgBouncer in transaction mode, or a `DISCARD
 * ALL`/`DEALLOCATE ALL`, between the driver and PostgreSQL).
 */
const SESSION_MISMATCH = new Set(['42P05', '26000']);

/** Whether statements are prepared by name (off once connections turn out to share a session). */
let named = true;

type PoolClient = { acquireConnection(): Promise<PooledClient>; releaseConnection(c: PooledClient): Promise<void> };

const poolOf = (em: EntityManager): PoolClient => em.getKnex().client as PoolClient;

const isSessionMismatch = (err: unknown): boolean => SESSION_MISMATCH.has((err as { code?: string }).code ?? '');

/** Runs one statement on a connection, by name while the sessions allow it. */
async function run<T>(connection: PooledClient, name: string, text: string, values: readonly unknown[]): Promise<T[]> {
  try {
    return (await connection.query(named ? { name, text, values } : { text, values })).rows as T[];
  } catch (err) {
    // The statement (with $n placeholders, never values) for the log, which keeps only its shape (src/logger.ts).
    if (err && typeof err === 'object' && !('query' in err)) Object.assign(err, { query: text });
    throw err;
  }
}

/**
 * A hot read as a named prepared statement on a pooled connection: PostgreSQL parses and plans it
 * once per connection, and the ORM's query formatting (values inlined into the SQL text) is
 * skipped (#10: about half the CPU of the read, on both sides). For statements with an explicit
 * column list only (a cached plan of `select *` breaks when a migration adds a column). Inside a
 * transaction it runs on the transaction, unprepared.
 */
export async function preparedRead<T>(em: EntityManager, name: string, text: string, values: readonly unknown[]): Promise<T[]> {
  if (em.getTransactionContext()) return em.execute<T[]>(text.replace(/\$\d+/g, '?'), [...values]);
  const client = poolOf(em);
  const connection = await client.acquireConnection();
  try {
    if (named) {
      try {
        return (await connection.query({ name, text, values })).rows as T[];
      } catch (err) {
        // The session does not hold what the driver believes it prepared there: prepare nothing
        // by name from then on (the read itself runs again, unnamed).
        if (!isSessionMismatch(err)) throw err;
        named = false;
      }
    }
    return (await connection.query({ text, values })).rows as T[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/** A statement on a pooled connection, prepared by name (see preparedRead): for short autocommitting writes too. */
export const preparedStatement = preparedRead;

/**
 * A row with the entity's fields, mapped by the ORM's own column mapping, as a plain object: not
 * an instance and not in the unit of work (an instance runs the ORM's tracking setters for every
 * field). For rows that are only read afterwards (views, event payloads): no identity map entry,
 * no change-tracking snapshot, nothing for a flush to compare (#10).
 */
export function detachedEntity<T extends object>(em: EntityManager, entity: EntityClass<T>, row: Record<string, unknown>): T {
  return em.getDriver().mapResult(row as EntityData<T>, em.getMetadata(entity)) as T;
}

/** A statement of a `runInTransaction` body: a name (prepared once per connection), its text with $n parameters, its values. */
export type TransactionQuery = <T>(name: string, text: string, values: readonly unknown[]) => Promise<T[]>;

/**
 * A hot write as one database transaction of named prepared statements on a pooled connection:
 * BEGIN, the body's statements, COMMIT, each one round trip, with neither the ORM's unit of work
 * nor its query formatting (#17). `trx` identifies the transaction to the outbox (outbox.ts
 * `recordWritten`): after the commit the ORM's afterTransactionCommit event is dispatched with it,
 * as for the ORM's own transactions. Any error rolls back and is rethrown; a session that lost
 * the driver's prepared statements runs the body once more, unnamed (see preparedRead).
 */
export async function runInTransaction<T>(em: EntityManager, body: (query: TransactionQuery, trx: object) => Promise<T>): Promise<T> {
  const client = poolOf(em);
  for (let attempt = 0; ; attempt++) {
    const trx = {};
    const connection = await client.acquireConnection();
    let result: T;
    try {
      await connection.query({ text: 'begin', values: [] });
      try {
        result = await body((name, text, values) => run(connection, name, text, values), trx);
        await connection.query({ text: 'commit', values: [] });
      } catch (err) {
        await connection.query({ text: 'rollback', values: [] }).catch(() => undefined);
        await em.getEventManager().dispatchEvent(EventType.afterTransactionRollback, { em, transaction: trx } as TransactionEventArgs);
        if (named && attempt === 0 && isSessionMismatch(err)) {
          named = false;
          continue;
        }
        throw err;
      }
    } finally {
      await client.releaseConnection(connection);
    }
    await em.getEventManager().dispatchEvent(EventType.afterTransactionCommit, { em, transaction: trx } as TransactionEventArgs);
    return result;
  }
}
