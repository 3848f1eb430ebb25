import type { Knex } from '@mikro-orm/postgresql';
import { escapeLiteral } from 'pg';

/**
 * A named SQL statement with `$n` parameters and the shape of its rows. PostgreSQL parses and
 * plans it once per connection (a prepared statement), and no query builder touches it. For
 * statements with an explicit column list only (a cached plan of `select *` breaks when a
 * migration adds a column).
 */
export interface Statement<Row> {
  readonly name: string;
  readonly text: string;
  /** The row type (never set; it only carries `Row` to the caller). */
  readonly row?: Row;
}

/** Declares a named statement (graphile-worker's habit: one statement, one name, defined once). */
export function sql<Row = Record<string, unknown>>(name: string, text: string): Statement<Row> {
  return { name, text };
}

/** What runs statements: the pool (each statement its own transaction) or an open transaction. */
export interface Queryable {
  /** A named statement, prepared once per connection. */
  run<Row>(statement: Statement<Row>, values: readonly unknown[]): Promise<Row[]>;
  /** A statement built at run time (filters, lists), `$n` parameters, parsed per call. */
  query<Row = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<Row[]>;
}

/** A statement whose values are plain text, numbers or null (it may ride in a simple-protocol message, see `inline`). */
export interface SimpleStatement {
  readonly text: string;
  readonly values: ReadonlyArray<string | number | null>;
}

/** The part of a pooled `pg` connection used here (a `pg.Client`). */
export interface Connection {
  query(config: { name?: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] } | Array<{ rows: unknown[] }>>;
}

/**
 * PostgreSQL's "prepared statement already exists" and "… does not exist": the connection's
 * session is not what the driver believes (connections sharing one session, as the embedded
 * PGlite behind its socket does; a pooler such as PgBouncer in transaction mode, or a `DISCARD
 * ALL`/`DEALLOCATE ALL`, between the driver and PostgreSQL).
 */
const SESSION_MISMATCH = new Set(['42P05', '26000']);

/** Attaches the statement's text ($n placeholders, never values) to a failure, for the log (src/logger.ts keeps only its shape). */
function withQuery(err: unknown, text: string): unknown {
  if (err && typeof err === 'object' && !('query' in err)) Object.assign(err, { query: text });
  return err;
}

/** The statement with its values as SQL literals (numbers as they are, text escaped, null). */
export function inline(statement: SimpleStatement): string {
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
 * The ORM's connection pool, through knex's declared `Client` API (`acquireConnection` /
 * `releaseConnection`, the calls its own query runner makes): every statement shares the pool,
 * its size (DB_POOL_MAX), its timeouts and the embedded database's single connection.
 */
export class SqlPool implements Queryable {
  /**
   * Whether statements are prepared by name on this pool's connections. pg remembers, per
   * connection object, which names it prepared; that holds only while each connection is its own
   * PostgreSQL session. The first SESSION_MISMATCH shows that they are not (see above): from then
   * on nothing is prepared by name (statements still run, parsed per call).
   */
  private named = true;

  constructor(private readonly client: Knex.Client) {}

  acquire(): Promise<Connection> {
    return this.client.acquireConnection() as Promise<Connection>;
  }

  release(connection: Connection): Promise<void> {
    return this.client.releaseConnection(connection) as Promise<void>;
  }

  /** Runs one statement on `connection`, by name while the sessions allow it. */
  async exec<Row>(connection: Connection, name: string | undefined, text: string, values: readonly unknown[]): Promise<Row[]> {
    try {
      const result = await connection.query(name && this.named ? { name, text, values } : { text, values });
      return (Array.isArray(result) ? result.at(-1)?.rows ?? [] : result.rows) as Row[];
    } catch (err) {
      throw withQuery(err, text);
    }
  }

  /**
   * Sends a simple-protocol message (several statements, values inlined, one round trip) and
   * returns the rows of its last statement. A failure carries `shape` (the statements with $n
   * placeholders) as its `query`, never the inlined values.
   */
  async simple<Row>(connection: Connection, text: string, shape: string): Promise<Row[]> {
    try {
      const result = await connection.query({ text, values: [] });
      return (Array.isArray(result) ? result.at(-1)?.rows ?? [] : result.rows) as Row[];
    } catch (err) {
      throw withQuery(err, shape);
    }
  }

  /** Whether `err` shows that connections share a session; turns naming off if so (true: run the work again). */
  lostSession(err: unknown): boolean {
    if (!this.named || !SESSION_MISMATCH.has((err as { code?: string }).code ?? '')) return false;
    this.named = false;
    return true;
  }

  run<Row>(statement: Statement<Row>, values: readonly unknown[]): Promise<Row[]> {
    return this.once(statement.name, statement.text, values);
  }

  query<Row = Record<string, unknown>>(text: string, values: readonly unknown[] = []): Promise<Row[]> {
    return this.once(undefined, text, values);
  }

  /** One statement on a pooled connection, autocommitting; once more, unnamed, when the session lost what the driver prepared. */
  private async once<Row>(name: string | undefined, text: string, values: readonly unknown[]): Promise<Row[]> {
    const connection = await this.acquire();
    try {
      try {
        return await this.exec<Row>(connection, name, text, values);
      } catch (err) {
        if (!this.lostSession(err)) throw err;
        return await this.exec<Row>(connection, name, text, values);
      }
    } finally {
      await this.release(connection);
    }
  }
}
