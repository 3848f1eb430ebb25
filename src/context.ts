import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Principal } from './auth/principal.js';
import type { UnitOfWork, UnitsOfWork } from './db/unit-of-work.js';
import type { ResolverContainer } from './graphql/container.js';
import { OperationLimits, type RateLimits } from './rate-limit.js';

/**
 * What every resolver receives: who is calling, the operation's unit of work (its database work
 * and what it commits) and the limits it consumed. Services come to resolvers by injection
 * (src/resolvers.ts), never through the context.
 */
export interface Context {
  readonly principal: Principal;
  /** The operation's unit of work: services read and write through it (src/db/unit-of-work.ts). */
  readonly work: UnitOfWork;
  readonly requestId: string;
  readonly log: Logger;
  /** The rate limits this operation consumed (the door sends the strictest as RateLimit-*). */
  readonly limits: OperationLimits;
  /** Where type-graphql finds this gateway's resolvers (read by type-graphql only; src/graphql/container.ts). */
  readonly container: ResolverContainer;
  /**
   * State a feature keeps for the length of this one operation, made by `create` on first use and
   * the same object afterwards (e.g. the internal tools' batch loaders, which read through the
   * operation's EntityManager and must not outlive it).
   */
  scoped<T>(create: (em: EntityManager) => T): T;
}

/** What building a context needs from the gateway. */
export interface ContextDeps {
  readonly works: UnitsOfWork;
  readonly rateLimits: RateLimits;
  readonly container: ResolverContainer;
}

export interface ContextOptions {
  principal: Principal;
  /** The caller's network address (the pay page's limit), when the door knows it. */
  clientAddress?: string | undefined;
  /** The door already counted this operation against its caller's limit (graphql-ws counts at subscribe). */
  counted?: boolean;
  /** The request id of the call (HTTP: X-Request-Id); a new one when absent. */
  requestId?: string;
  /** The process logger; the context's logger carries the request id. */
  logger: Logger;
}

/**
 * The one way an operation's context is built, for every door (REST, GraphQL over HTTP and
 * WebSocket, the CLI). A call made with a secret key counts against that key's overall limit
 * here, and one made with a user token against its user's (USER_RATE_LIMIT_PER_SECOND), whatever
 * the door (throws RateLimitedError past it).
 */
export async function createContext(deps: ContextDeps, opts: ContextOptions): Promise<Context> {
  const requestId = opts.requestId ?? randomUUID();
  const keyId = opts.principal.kind === 'developer' ? opts.principal.keyId : undefined;
  const userId = opts.principal.kind === 'user' ? opts.principal.userId : undefined;
  const limits = new OperationLimits(deps.rateLimits, keyId, userId, opts.clientAddress);
  if (!opts.counted) await limits.request();
  const work = deps.works.begin();
  const scopes = new Map<(em: EntityManager) => unknown, unknown>();
  return {
    principal: opts.principal,
    work,
    requestId,
    log: opts.logger.child({ requestId }),
    limits,
    container: deps.container,
    scoped<T>(create: (em: EntityManager) => T): T {
      if (!scopes.has(create)) scopes.set(create, create(work.em));
      return scopes.get(create) as T;
    },
  };
}
