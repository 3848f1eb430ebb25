import type { Knex } from '@mikro-orm/postgresql';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type IRateLimiterStoreOptions } from 'rate-limiter-flexible';
import { AppError } from './errors.js';

/** A rate-limit verdict, for the RateLimit-* headers. */
export interface RateLimitInfo {
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
}

/** 429 with the seconds to wait (the REST door sends them as Retry-After). */
export class RateLimitedError extends AppError {
  constructor(
    message: string,
    readonly info: RateLimitInfo,
  ) {
    super('RATE_LIMITED', message);
    this.extensions.retryAfter = info.reset;
  }
}

export interface RateLimitOptions {
  requestsPerSecond: number;
  lookupsPerMinute: number;
}

/**
 * Per-secret-key limits (SPEC §11), counted in PostgreSQL so that every instance shares them
 * (the embedded database included). If the store fails, an in-memory limiter of the same size
 * takes over on this instance rather than letting everything through.
 */
export class RateLimits {
  private readonly requests: RateLimiterPostgres;
  private readonly lookups: RateLimiterPostgres;

  constructor(knex: Knex, private readonly opts: RateLimitOptions) {
    const base = (keyPrefix: string, points: number, duration: number): IRateLimiterStoreOptions => ({
      storeClient: knex,
      storeType: 'knex',
      tableName: 'rate_limits',
      tableCreated: true,
      keyPrefix,
      points,
      duration,
      // Once a key is over its limit, refuse it from memory until the window ends: abuse costs no writes.
      inMemoryBlockOnConsumed: points + 1,
      inMemoryBlockDuration: duration,
      insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
    });
    this.requests = new RateLimiterPostgres(base('req', opts.requestsPerSecond, 1));
    this.lookups = new RateLimiterPostgres(base('lookup', opts.lookupsPerMinute, 60));
  }

  /** Counts one request of a key; throws RateLimitedError past the limit. */
  request(keyId: string): Promise<RateLimitInfo> {
    return this.consume(this.requests, keyId, this.opts.requestsPerSecond, 'Too many requests');
  }

  /** Counts one account look-up of a key (the enumeration risk); throws past the limit. */
  lookup(keyId: string): Promise<RateLimitInfo> {
    return this.consume(this.lookups, keyId, this.opts.lookupsPerMinute, 'Too many account look-ups');
  }

  private async consume(limiter: RateLimiterPostgres, keyId: string, limit: number, message: string): Promise<RateLimitInfo> {
    try {
      const res = await limiter.consume(keyId);
      return { limit, remaining: res.remainingPoints, reset: Math.ceil(res.msBeforeNext / 1000) };
    } catch (err) {
      if (err instanceof RateLimiterRes) {
        throw new RateLimitedError(message, { limit, remaining: 0, reset: Math.max(1, Math.ceil(err.msBeforeNext / 1000)) });
      }
      throw err;
    }
  }
}

/** The stricter of two verdicts (fewer requests left). */
export function stricter(a: RateLimitInfo | undefined, b: RateLimitInfo): RateLimitInfo {
  return !a || b.remaining < a.remaining ? b : a;
}
