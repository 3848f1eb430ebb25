import type { EntityManager } from '@mikro-orm/postgresql';
import type { Knex } from '@mikro-orm/postgresql';
import { escapeLiteral } from 'pg';
import { EventType, type EntityClass, type EntityData, type TransactionEventArgs } from '@mikro-orm/core';

/** The part of a pooled `pg` connection these statements use (a `pg.Client`). */
interface PooledConnection {
  query(config: { name?: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * PostgreSQL's "prepared statement already exists" and "… does not exist": the connection's
 * session is not what the driver believes (connections sharing one session, as the embedded
 * PGlite behind its socket does; a pooler such as PgBouncer in transaction mode, or a `DISCARD
 * ALL`/`DEALLOCATE ALL`, between the driver and PostgreSQL).
 */
const SESSION_MISMATCH = new Set(['42P05', '26000']);

/**
 * The ORM's connection pool, through knex's declared `Client` API (`acquireConnection` /
 * `releaseConnection` in knex's own type definitions, the calls its query runner makes): the fast
 * paths share the pool, its size (DB_POOL_MAX), its timeouts and the embedded database's single
 * connection with every other statement, instead of opening connections of their own.
 */
class Pool {
  /**
   * Whether statements are prepared by name on this pool's connections. pg remembers, per
   * connection object, which names it prepared; that holds only while each connection is its own
   * PostgreSQL session. The first SESSION_MISMATCH shows that they are not (see above): from then
   * on this pool prepares nothing by name (statements still run, parsed per call).
   */
  named = true;

  constructor(private readonly client: Knex.Client) {}

  acquire(): Promise<PooledConnection> {
    return this.client.acquireConnection() as Promise<PooledConnection>;
  }

  release(connection: PooledConnection): Promise<void> {
    return this.client.releaseConnection(connection) as Promise<void>;
  }

  /** Runs one statement, by name while the sessions allow it (see `named`). */
  async run<T>(connection: PooledConnection, name: string, text: string, values: readonly unknown[]): Promise<T[]> {
    try {
      return (await connection.query(this.named ? { name, text, values } : { text, values })).rows as T[];
    } catch (err) {
      // The statement (with $n placeholders, never values) for the log, which keeps only its shape (src/logger.ts).
      if (err && typeof err === 'object' && !('query' in err)) Object.assign(err, { query: text });
      throw err;
    }
  }

  /** Whether `err` shows that connections share a session; turns naming off if so (true: run the work again). */
  lostSession(err: unknown): boolean {
    if (!this.named || !SESSION_MISMATCH.has((err as { code?: string }).code ?? '')) return false;
    this.named = false;
    return true;
  }
}

const pools = new WeakMap<Knex.Client, Pool>();

function poolOf(em: EntityManager): Pool {
  const client = em.getKnex().client as Knex.Client;
  let pool = pools.get(client);
  if (!pool) pools.set(client, (pool = new Pool(client)));
  return pool;
}

/** A transaction `runInTransaction` opened, while its body runs: its statements and its token. */
interface OpenTransaction {
  readonly query: TransactionQuery;
  readonly trx: object;
}

/**
 * The transaction `runInTransaction` has open on an EntityManager (an operation's own, see
 * Context.em): `runInTransaction` and `preparedRead` on that EntityManager join it, as the ORM's
 * `em.transactional` joins a transaction begun on its EntityManager. A door that wraps an
 * operation (the REST door's Idempotency-Key) opens the transaction; the operation's writes
 * become part of it without knowing about the door.
 */
const openOn = new WeakMap<EntityManager, OpenTransaction>();

/**
 * A hot read as a named prepared statement on a pooled connection: PostgreSQL parses and plans it
 * once per connection, and the ORM's query formatting (values inlined into the SQL text) is
 * skipped (#10: about half the CPU of the read, on both sides). For statements with an explicit
 * column list only (a cached plan of `select *` breaks when a migration adds a column). Inside a
 * `runInTransaction` open on `em` it runs there (prepared); inside an ORM transaction on `em`, on
 * that transaction (unprepared).
 */
export async function preparedRead<T>(em: EntityManager, name: string, text: string, values: readonly unknown[]): Promise<T[]> {
  const open = openOn.get(em);
  if (open) return open.query<T>(name, text, values);
  if (em.getTransactionContext()) return em.execute<T[]>(text.replace(/\$\d+/g, '?'), [...values]);
  const pool = poolOf(em);
  const connection = await pool.acquire();
  try {
    try {
      return await pool.run<T>(connection, name, text, values);
    } catch (err) {
      // Run once more, unnamed, when the session did not hold what the driver believed it prepared there.
      if (!pool.lostSession(err)) throw err;
      return await pool.run<T>(connection, name, text, values);
    }
  } finally {
    await pool.release(connection);
  }
}

/** A statement on a pooled connection, prepared by name (see preparedRead): for short autocommitting writes too. */
export const preparedStatement = preparedRead;

declare const detached: unique symbol;

/**
 * An entity's fields as a plain, read-only object (what `detachedEntity` returns): not an
 * instance of the entity class, not managed by any EntityManager, never flushed. Passing one where
 * the entity is expected reads it; changing or persisting it is a type error.
 */
export type Detached<T extends object> = Readonly<T> & { readonly [detached]: true };

/**
 * A row with the entity's fields, mapped by the ORM's own column mapping, as a plain object: not
 * an instance and not in the unit of work (an instance runs the ORM's tracking setters for every
 * field). For rows that are only read afterwards (views, event payloads): no identity map entry,
 * no change-tracking snapshot, nothing for a flush to compare (#10).
 */
export function detachedEntity<T extends object>(em: EntityManager, entity: EntityClass<T>, row: Record<string, unknown>): Detached<T> {
  return em.getDriver().mapResult(row as EntityData<T>, em.getMetadata(entity)) as Detached<T>;
}

/** A statement of a `runInTransaction` body: a name (prepared once per connection), its text with $n parameters, its values. */
export type TransactionQuery = <T>(name: string, text: string, values: readonly unknown[]) => Promise<T[]>;

/** A statement with $n parameters whose values are plain text, numbers or null. */
export interface SimpleStatement {
  readonly text: string;
  readonly values: ReadonlyArray<string | number | null>;
}

/**
 * Statements a transaction runs in the same round trip as its BEGIN and its COMMIT (PostgreSQL's
 * simple protocol: one message, the values inlined as literals by pg's `escapeLiteral`, parsed
 * per call). Each round trip costs both sides a write and a wake-up (on two cores, the largest
 * part of a create's gateway CPU): a door's statements around an operation ride on the two
 * round trips the transaction makes anyway.
 */
export interface TransactionEnds<T> {
  /** Runs right after BEGIN; its rows are handed to the body. */
  readonly begin?: SimpleStatement;
  /** Built from the body's result, runs right before COMMIT (nothing when undefined). */
  readonly commit?: (result: T) => SimpleStatement | undefined;
}

/** The statement with its values as SQL literals (numbers as they are, text escaped, null). */
function inline(statement: SimpleStatement): string {
  return statement.text.replace(/\$(\d+)/g, (_m, n: string) => {
    const value = statement.values[Number(n) - 1];
    if (value === undefined) throw new Error(`no value for $${n}`);
    if (value === null) return 'null';
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw new Error(`$${n} is not a finite number`);
      return String(value);
    }
    return escapeLiteral(value);
  });
}

/**
 * Sends a simple-protocol message of `ends` statements. A failure carries the statements' shape
 * ($n placeholders) as its `query` for the log, never the inlined values (src/logger.ts).
 */
async function simple(connection: PooledConnection, text: string, shape: string): Promise<unknown> {
  try {
    return await connection.query({ text, values: [] });
  } catch (err) {
    if (err && typeof err === 'object') Object.assign(err, { query: shape });
    throw err;
  }
}

/** The rows of the last statement of a simple-protocol message (pg answers one result per statement). */
const lastRows = (result: unknown): unknown[] => {
  const results = Array.isArray(result) ? result : [result];
  return ((results[results.length - 1] as { rows?: unknown[] } | undefined)?.rows ?? []) as unknown[];
};

/**
 * A hot write as one database transaction of named prepared statements on a pooled connection:
 * BEGIN, the body's statements, COMMIT, each one round trip, with neither the ORM's unit of work
 * nor its query formatting (#17). `trx` identifies the transaction to the outbox (outbox.ts
 * `recordWritten`): after the commit the ORM's afterTransactionCommit event is dispatched with it,
 * as for the ORM's own transactions. `ends` adds statements to the BEGIN and COMMIT round trips.
 * Any error rolls back and is rethrown; a session that lost the driver's prepared statements runs
 * the body once more, unnamed (see Pool.named). While the body runs, `runInTransaction` and
 * `preparedRead` on the same `em` join this transaction (see `openOn`): a door can wrap an
 * operation's writes in a transaction of its own.
 */
export async function runInTransaction<T>(
  em: EntityManager,
  body: (query: TransactionQuery, trx: object, begun: unknown[]) => Promise<T>,
  ends: TransactionEnds<T> = {},
): Promise<T> {
  const open = openOn.get(em);
  if (open) {
    // Joined: one transaction; the outermost commits (or rolls back: any error here reaches it).
    const begun = ends.begin ? await open.query('', ends.begin.text, ends.begin.values) : [];
    const result = await body(open.query, open.trx, begun);
    const last = ends.commit?.(result);
    if (last) await open.query('', last.text, last.values);
    return result;
  }
  const pool = poolOf(em);
  for (;;) {
    const trx = {};
    const connection = await pool.acquire();
    let result: T;
    try {
      const query: TransactionQuery = (name, text, values) => pool.run(connection, name, text, values);
      openOn.set(em, { query, trx });
      try {
        const begun = ends.begin ? lastRows(await simple(connection, `begin; ${inline(ends.begin)}`, `begin; ${ends.begin.text}`)) : [];
        if (!ends.begin) await connection.query({ text: 'begin', values: [] });
        result = await body(query, trx, begun);
        const last = ends.commit?.(result);
        await simple(connection, last ? `${inline(last)}; commit` : 'commit', last ? `${last.text}; commit` : 'commit');
      } catch (err) {
        // Also after a failed BEGIN message (its statement ran inside the block): nothing stays open.
        await connection.query({ text: 'rollback', values: [] }).catch(() => undefined);
        await em.getEventManager().dispatchEvent(EventType.afterTransactionRollback, { em, transaction: trx } as TransactionEventArgs);
        if (pool.lostSession(err)) continue;
        throw err;
      } finally {
        openOn.delete(em);
      }
    } finally {
      await pool.release(connection);
    }
    await em.getEventManager().dispatchEvent(EventType.afterTransactionCommit, { em, transaction: trx } as TransactionEventArgs);
    return result;
  }
}
