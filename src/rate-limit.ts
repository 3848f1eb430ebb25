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

/** The RateLimit-* headers (IETF draft names) of a verdict; a refusal adds Retry-After. */
export function rateLimitHeaders(info: RateLimitInfo, refused = false): Record<string, string> {
  return {
    ...(refused ? { 'Retry-After': String(info.reset) } : {}),
    'RateLimit-Limit': String(info.limit),
    'RateLimit-Remaining': String(Math.max(0, info.remaining)),
    'RateLimit-Reset': String(info.reset),
  };
}

/** 429 carrying its own Retry-After and RateLimit-* headers. */
export class RateLimitedError extends AppError {
  constructor(
    message: string,
    readonly info: RateLimitInfo,
  ) {
    super('RATE_LIMITED', message, rateLimitHeaders(info, true));
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

/**
 * The limits one operation has consumed: every count a call makes goes through here, and the
 * door that answers sends the strictest verdict as its RateLimit-* headers.
 */
export class OperationLimits {
  private strictest: RateLimitInfo | undefined;

  constructor(
    private readonly limits: RateLimits,
    private readonly keyId: string | undefined,
  ) {}

  /** Counts the call itself against its key's overall limit (every door, once per operation). */
  request(): Promise<void> {
    return this.count((keyId) => this.limits.request(keyId));
  }

  /** Counts an account look-up against its key's stricter limit. */
  lookup(): Promise<void> {
    return this.count((keyId) => this.limits.lookup(keyId));
  }

  /** The verdict with the fewest requests left, for the response headers. */
  get verdict(): RateLimitInfo | undefined {
    return this.strictest;
  }

  private async count(consume: (keyId: string) => Promise<RateLimitInfo>): Promise<void> {
    if (!this.keyId) return;
    const info = await consume(this.keyId);
    if (!this.strictest || info.remaining < this.strictest.remaining) this.strictest = info;
  }
}
