import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityName, FilterQuery } from '@mikro-orm/core';
import { Field, ObjectType, type ClassType } from 'type-graphql';
import { badInput } from '../errors.js';

/** A page of results, newest first, with an opaque cursor for the next page (null at the end). */
export interface Page<T> {
  nodes: T[];
  nextCursor: string | null;
}

/** Declares the GraphQL connection type of one node type. */
export function Connection<T extends object>(Node: ClassType<T>, name: string): ClassType<Page<T>> {
  @ObjectType(name)
  class ConnectionClass implements Page<T> {
    @Field(() => [Node])
    nodes!: T[];

    @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page; null at the end.' })
    nextCursor!: string | null;
  }
  return ConnectionClass;
}


function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [iso, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    const createdAt = new Date(typeof iso === 'string' ? iso : Number.NaN);
    const year = createdAt.getUTCFullYear();
    // Ids are uuids or wlt_ wallet ids; anything else (NUL, SQL, out-of-range dates) is no cursor of ours.
    if (Number.isNaN(year) || year < 2000 || year > 9999 || typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
      throw new Error('bad cursor');
    }
    return { createdAt, id };
  } catch {
    throw badInput('after is not a valid cursor');
  }
}

/** Keyset pagination over (createdAt desc, id desc). */
export async function paginate<T extends { id: string; createdAt: Date }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  first: number | undefined,
  after: string | undefined,
): Promise<Page<T>> {
  const limit = first ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw badInput('first must be between 1 and 200');
  let cond = where;
  if (after) {
    const c = decodeCursor(after);
    cond = {
      $and: [where, { $or: [{ createdAt: { $lt: c.createdAt } }, { createdAt: c.createdAt, id: { $lt: c.id } }] }],
    } as FilterQuery<T>;
  }
  const rows = await em.find(entity, cond, { orderBy: { createdAt: 'desc', id: 'desc' } as never, limit: limit + 1 });
  const nodes = rows.slice(0, limit);
  const last = nodes[nodes.length - 1];
  const nextCursor =
    rows.length > limit && last
      ? Buffer.from(JSON.stringify([last.createdAt.toISOString(), last.id])).toString('base64url')
      : null;
  return { nodes, nextCursor };
}
