import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityName, FilterQuery } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { badInput } from '../errors.js';

// Cursor pages over the database, newest first: every list of the internal tools (and any other
// door's list) pages through here; the GraphQL connection type of a page is src/graphql/connection.ts.

/** A page of results, newest first, with an opaque cursor for the next page (null at the end). */
export interface Page<T> {
  nodes: T[];
  nextCursor: string | null;
}

/** The position a cursor names: the row it was made from (its id, checked against the table's key type). */
interface Cursor {
  id: string;
}

const KEY_SHAPES: Record<string, RegExp> = {
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  bigint: /^[0-9]{1,18}$/,
  text: /^[A-Za-z0-9_-]{1,64}$/,
};

function decodeCursor(cursor: string, keyType: string): Cursor {
  try {
    // [createdAt, id]: the time is only informative; the row's own (created_at, id) is compared.
    const [, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof id !== 'string' || !(KEY_SHAPES[keyType] ?? KEY_SHAPES.text!).test(id)) throw new Error('bad cursor');
    return { id };
  } catch {
    throw badInput('after is not a valid cursor');
  }
}

/** Where an entity's rows and their (createdAt, id) live, for the cursor condition. */
interface Keyset {
  table: string;
  createdAt: string;
  id: string;
  keyType: string;
}

function keysetOf<T extends object>(em: EntityManager, entity: EntityName<T>): Keyset {
  const meta = em.getMetadata().get(entity as never);
  const field = (name: string): string => meta.properties[name]!.fieldNames[0]!;
  // The key column's type: uuid, text, or a bigserial (compared as bigint).
  const column = String(meta.properties.id!.columnTypes[0]).toLowerCase();
  const keyType = column === 'bigserial' ? 'bigint' : column;
  return { table: meta.tableName, createdAt: field('createdAt'), id: field('id'), keyType: keyType in KEY_SHAPES ? keyType : 'text' };
}

/**
 * Rows after a cursor, newest first: `(created_at, id)` below the cursor row's own, read in the
 * database. A timestamp carried in the cursor would be JavaScript's milliseconds, while
 * PostgreSQL keeps microseconds: rows made within one millisecond would be skipped or repeated.
 */
function afterCursor(alias: string, k: Keyset): string {
  return `(${alias}.${k.createdAt}, ${alias}.${k.id}) < (select c.${k.createdAt}, c.${k.id} from ${k.table} c where c.${k.id} = ?::${k.keyType})`;
}

/** The same page with each node mapped (an entity into its GraphQL view). */
export const mapPage = <A, B>(page: Page<A>, f: (a: A) => B): Page<B> => ({ nodes: page.nodes.map(f), nextCursor: page.nextCursor });

/** The page size asked for, bounded (1–200, default 50). */
function pageSize(first: number | undefined): number {
  const limit = first ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw badInput('first must be between 1 and 200');
  return limit;
}

function encodeCursor(row: { createdAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.createdAt.toISOString(), String(row.id)])).toString('base64url');
}

function toPage<T extends { id: string; createdAt: Date }>(rows: T[], limit: number): Page<T> {
  const nodes = rows.slice(0, limit);
  const last = nodes[nodes.length - 1];
  return { nodes, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
}

/** A page of one parent's children. */
export interface ChildPageKey {
  parentId: string;
  first?: number | undefined;
  after?: string | undefined;
}

/**
 * Pages of children for many parents at once (a wallet's payment requests, for every wallet of
 * a page): one query per distinct (first, after), ranking each parent's rows with a window
 * function, so a nested list costs one query per level, not one per parent.
 */
export function childPageLoader<T extends { id: string; createdAt: Date }>(
  em: EntityManager,
  entity: EntityName<T>,
  table: string,
  parentColumn: string,
): DataLoader<ChildPageKey, Page<T>, string> {
  return new DataLoader<ChildPageKey, Page<T>, string>(
    async (keys) => {
      const groups = new Map<string, ChildPageKey[]>();
      for (const key of keys) {
        const group = `${pageSize(key.first)}|${key.after ?? ''}`;
        groups.set(group, [...(groups.get(group) ?? []), key]);
      }
      const pages = new Map<ChildPageKey, Page<T>>();
      const keyset = keysetOf(em, entity);
      for (const group of groups.values()) {
        const limit = pageSize(group[0]!.first);
        const after = group[0]!.after ? decodeCursor(group[0]!.after, keyset.keyType) : null;
        const rows = await em.execute<Array<Record<string, unknown>>>(
          `select * from (
             select t.*, row_number() over (partition by t.${parentColumn} order by t.created_at desc, t.id desc) as page_rank
               from ${table} t
              where t.${parentColumn}::text = any(array[?]::text[])
                ${after ? `and ${afterCursor('t', keyset)}` : ''}
           ) ranked where page_rank <= ?`,
          [group.map((k) => k.parentId), ...(after ? [after.id] : []), limit + 1],
        );
        const byParent = new Map<string, T[]>();
        for (const row of rows) {
          const parent = String(row[parentColumn]);
          byParent.set(parent, [...(byParent.get(parent) ?? []), em.map(entity, row as never)]);
        }
        for (const key of group) pages.set(key, toPage(byParent.get(key.parentId) ?? [], limit));
      }
      return keys.map((key) => pages.get(key)!);
    },
    { cacheKeyFn: (key) => `${key.parentId}|${key.first ?? ''}|${key.after ?? ''}` },
  );
}

/** Keyset pagination over (createdAt desc, id desc). */
export async function paginate<T extends { id: string; createdAt: Date }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  first: number | undefined,
  after: string | undefined,
): Promise<Page<T>> {
  const limit = pageSize(first);
  const qb = em
    .createQueryBuilder(entity, 'p')
    .where(where)
    .orderBy({ createdAt: 'desc', id: 'desc' } as never)
    .limit(limit + 1);
  if (after) {
    const keyset = keysetOf(em, entity);
    qb.andWhere(afterCursor('p', keyset), [decodeCursor(after, keyset.keyType).id]);
  }
  return toPage(await qb.getResultList(), limit);
}

/** Filters shared by the lists of money records: creation range and amount range. */
export interface RangeFilter {
  createdFrom?: Date | undefined;
  createdTo?: Date | undefined;
  amountMin?: number | undefined;
  amountMax?: number | undefined;
}

/** The ORM conditions of a RangeFilter (amounts compared exactly, as NUMERIC). */
export function rangeConditions(filter: RangeFilter): Record<string, unknown> {
  const amount = (value: number, name: string): string => {
    if (!Number.isFinite(value) || value < 0) throw badInput(`${name} must be a non-negative number`);
    return value.toFixed(2);
  };
  const created = {
    ...(filter.createdFrom ? { $gte: filter.createdFrom } : {}),
    ...(filter.createdTo ? { $lt: filter.createdTo } : {}),
  };
  const amounts = {
    ...(filter.amountMin !== undefined ? { $gte: amount(filter.amountMin, 'amountMin') } : {}),
    ...(filter.amountMax !== undefined ? { $lte: amount(filter.amountMax, 'amountMax') } : {}),
  };
  return {
    ...(Object.keys(created).length > 0 ? { createdAt: created } : {}),
    ...(Object.keys(amounts).length > 0 ? { amount: amounts } : {}),
  };
}
