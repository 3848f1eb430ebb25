import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { badInput } from '../errors.js';
import { Developer } from './developer.entity.js';
import { paginate, type Page } from '../db/pagination.js';

/** Developer accounts. */
export class DeveloperService {
  async create(em: EntityManager, name: string): Promise<Developer> {
    const trimmed = typeof name === 'string' ? name.trim() : '';
    if (trimmed.length < 1 || trimmed.length > 100) throw badInput('name must be 1-100 characters');
    const developer = em.create(Developer, { id: randomUUID(), name: trimmed, createdAt: new Date() });
    await em.persistAndFlush(developer);
    return developer;
  }

  /** Newest first, a cursor page (internal tools). */
  list(em: EntityManager, first?: number, after?: string): Promise<Page<Developer>> {
    return paginate(em, Developer, {}, first, after);
  }
}
