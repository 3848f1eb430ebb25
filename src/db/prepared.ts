import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityClass, EntityData } from '@mikro-orm/core';

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

/**
 * A hot read as a named prepared statement on a pooled connection: PostgreSQL parses and plans it
 * once per connection, and the ORM's query formatting (values inlined into the SQL text) is
 * skipped (#10: about half the CPU of the read, on both sides). For statements with an explicit
 * column list only (a cached plan of `select *` breaks when a migration adds a column). Inside a
 * transaction it runs on the transaction, unprepared.
 */
export async function preparedRead<T>(em: EntityManager, name: string, text: string, values: readonly unknown[]): Promise<T[]> {
  if (em.getTransactionContext()) return em.execute<T[]>(text.replace(/\$\d+/g, '?'), [...values]);
  const client = em.getKnex().client as { acquireConnection(): Promise<PooledClient>; releaseConnection(c: PooledClient): Promise<void> };
  const connection = await client.acquireConnection();
  try {
    if (named) {
      try {
        return (await connection.query({ name, text, values })).rows as T[];
      } catch (err) {
        // The session does not hold what the driver believes it prepared there: prepare nothing
        // by name from then on (the read itself runs again, unnamed).
        if (!SESSION_MISMATCH.has((err as { code?: string }).code ?? '')) throw err;
        named = false;
      }
    }
    return (await connection.query({ text, values })).rows as T[];
  } finally {
    await client.releaseConnection(connection);
  }
}

/**
 * A row with the entity's fields, mapped by the ORM's own column mapping, as a plain object: not
 * an instance and not in the unit of work (an instance runs the ORM's tracking setters for every
 * field). For rows that are only read afterwards (views, event payloads): no identity map entry,
 * no change-tracking snapshot, nothing for a flush to compare (#10).
 */
export function detachedEntity<T extends object>(em: EntityManager, entity: EntityClass<T>, row: Record<string, unknown>): T {
  return em.getDriver().mapResult(row as EntityData<T>, em.getMetadata(entity)) as T;
}
