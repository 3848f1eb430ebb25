import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Principal } from './auth/principal.js';
import { OperationLimits } from './rate-limit.js';
import type { Services } from './services.js';

export type { Services } from './services.js';

/** What every resolver receives: the caller, a fresh EntityManager and the services. */
export interface Context {
  readonly principal: Principal;
  readonly em: EntityManager;
  readonly services: Services;
  readonly requestId: string;
  readonly log: Logger;
  /** The rate limits this operation consumed (the door sends the strictest as RateLimit-*). */
  readonly limits: OperationLimits;
  /**
   * State a feature keeps for the length of this one operation, made by `create` on first use and
   * the same object afterwards (e.g. the internal tools' batch loaders, which must not outlive
   * the operation's EntityManager).
   */
  scoped<T>(create: (em: EntityManager) => T): T;
}

export interface ContextOptions {
  principal: Principal;
  /** The request id of the call (HTTP: X-Request-Id); a new one when absent. */
  requestId?: string;
  /** The process logger; the context's logger carries the request id. */
  logger: Logger;
}

/**
 * The one way an operation's context is built, for every door (REST, GraphQL over HTTP and
 * WebSocket, the CLI). A call made with a secret key counts against that key's overall limit
 * here, whatever the door (throws RateLimitedError past it).
 */
export async function createContext(services: Services, opts: ContextOptions): Promise<Context> {
  const requestId = opts.requestId ?? randomUUID();
  const keyId = opts.principal.kind === 'developer' ? opts.principal.keyId : undefined;
  const limits = new OperationLimits(services.rateLimits, keyId);
  await limits.request();
  const em = services.forkEm();
  const scopes = new Map<(em: EntityManager) => unknown, unknown>();
  return {
    principal: opts.principal,
    em,
    services,
    requestId,
    log: opts.logger.child({ requestId }),
    limits,
    scoped<T>(create: (em: EntityManager) => T): T {
      if (!scopes.has(create)) scopes.set(create, create(em));
      return scopes.get(create) as T;
    },
  };
}
