import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Principal } from './auth/principal.js';
import type { SecretKeyVerifier } from './auth/secret-keys.js';
import { AppError } from './errors.js';
import type { PaymentRequestService } from './payment-requests/payment-request.service.js';
import type { AccountService } from './accounts/account.service.js';
import type { TransactionService } from './transactions/transaction.service.js';
import type { DeveloperService } from './developers/developer.service.js';
import type { EventHub } from './events/event-hub.js';
import type { RateLimitInfo, RateLimits } from './rate-limit.js';
import type { Metrics } from './observability/metrics.js';

/** The stateless services, built once per process. */
export interface Services {
  readonly config: Config;
  readonly payments: PaymentRequestService;
  readonly accounts: AccountService;
  readonly transactions: TransactionService;
  readonly developers: DeveloperService;
  readonly keys: SecretKeyVerifier;
  /** This instance's event fan-out to subscribers. */
  readonly events: EventHub;
  /** Per-secret-key limits shared by all instances. */
  readonly limits: RateLimits;
  readonly metrics: Metrics;
}

/** What every resolver receives: the caller, a fresh EntityManager and the services. */
export interface Context {
  readonly principal: Principal;
  readonly em: EntityManager;
  readonly services: Services;
  readonly requestId: string;
  readonly log: Logger;
  /** The strictest rate-limit verdict of this operation, for the RateLimit-* headers. */
  rateLimit?: RateLimitInfo;
}

/** The developer behind the call, or UNAUTHENTICATED/FORBIDDEN. */
export function asDeveloper(ctx: Context): { developerId: string; keyId: string } {
  const p = ctx.principal;
  if (p.kind === 'developer') return p;
  if (p.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'Missing bearer token');
  throw new AppError('FORBIDDEN', 'This operation needs a secret key');
}

/** The wallet user behind the call, or UNAUTHENTICATED/FORBIDDEN. */
export function asUser(ctx: Context): { userId: string } {
  const p = ctx.principal;
  if (p.kind === 'user') return p;
  if (p.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'Missing access token');
  throw new AppError('FORBIDDEN', 'This operation needs a user access token');
}

/** Internal tools only. */
export function asAdmin(ctx: Context): void {
  const p = ctx.principal;
  if (p.kind === 'admin') return;
  if (p.kind === 'anonymous') throw new AppError('UNAUTHENTICATED', 'Missing admin token');
  throw new AppError('FORBIDDEN', 'This operation needs the admin token');
}
