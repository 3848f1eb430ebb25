import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { badInput } from '../errors.js';
import type { Developer } from './developer.entity.js';
import { paginate, type Page } from '../db/pagination.js';
import type { Queryable } from '../db/sql.js';
import { Developer as DeveloperEntity } from './developer.entity.js';

/** Developer accounts. */
export class DeveloperService {
  async create(db: Queryable, name: string): Promise<Developer> {
    const trimmed = typeof name === 'string' ? name.trim() : '';
    if (trimmed.length < 1 || trimmed.length > 100) throw badInput('name must be 1-100 characters');
    const [row] = await db.query<{ id: string; name: string; created_at: Date }>(
      'insert into developers (id, name, created_at) values ($1, $2, now()) returning id, name, created_at',
      [randomUUID(), trimmed],
    );
    return { id: row!.id, name: row!.name, createdAt: new Date(row!.created_at) };
  }

  /** Newest first, a cursor page (internal tools). */
  list(em: EntityManager, first?: number, after?: string): Promise<Page<Developer>> {
    return paginate(em, DeveloperEntity, {}, first, after);
  }
}
