import type { Knex } from '@mikro-orm/postgresql';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
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
  }
}

export interface RateLimitOptions {
  requestsPerSecond: number;
  lookupsPerMinute: number;
  /** Test sends per webhook endpoint per minute (POST /webhook-endpoints/{id}/test). */
  webhookTestsPerMinute: number;
  /** GraphQL operations per wallet user per second (USER_RATE_LIMIT_PER_SECOND). */
  userOperationsPerSecond: number;
  /** GET /pay/{code} and `paymentRequestByCode` together per client address per minute (PAY_PAGE_LIMIT_PER_MINUTE). */
  payPagePerMinute: number;
}

/** Most points an instance leases at once (see `LeasedLimiter`). */
export const MAX_LEASE = 100;

/** The points an instance leases at once for a limit: a tenth of it, 1 to MAX_LEASE. */
export const leaseSize = (points: number): number => Math.max(1, Math.min(MAX_LEASE, Math.floor(points / 10)));

/** One key's lease on this instance, for the store's current window of that key. */
interface Lease {
  /** End of the key's window (epoch ms), as the store holds it. */
  expire: number;
  /** Leased points not yet used here. */
  tokens: number;
  /** Points the store had handed out in this window at our last lease (all instances). */
  reserved: number;
  /** The store refused (part of) a lease: the window is used up, refuse here until it ends. */
  exhausted: boolean;
}

/**
 * A fixed-window limit of `points` per `duration` seconds per key, shared by every instance
 * through the `rate_limits` table, without a round trip per request: an instance leases
 * points in blocks (`leaseSize`, a tenth of the limit, at most 100) with one upsert that
 * grants only what is left in the key's window, and spends them from memory. The store never
 * hands out more than the limit, so instances together never admit more than the limit in a
 * window (no overshoot). The price is early refusal: points leased by one instance and not
 * used are lost to the others until the window ends — at most (instances × (leaseSize − 1))
 * per window, none with a limit under 20 (lease size 1: one round trip per request, as before).
 * Once the store says the window is used up, refusals come from memory until it ends.
 */
export class LeasedLimiter {
  private readonly leases = new Map<string, Lease>();
  private readonly pending = new Map<string, Promise<void>>();
  private readonly lease: number;
  private readonly insurance: RateLimiterMemory;

  constructor(
    private readonly knex: Knex,
    private readonly keyPrefix: string,
    readonly points: number,
    private readonly duration: number,
    /** Where windows are timed (epoch ms): Date, unless a test injects a clock. */
    private readonly clock: { now(): number } = Date,
  ) {
    this.lease = leaseSize(points);
    // If the store fails, a limiter of the same size in memory takes over rather than letting everything through.
    this.insurance = new RateLimiterMemory({ keyPrefix, points, duration });
  }

  /** Counts one point for a key; resolves with the verdict, or rejects with the window's end (ms from now) when refused. */
  async consume(key: string): Promise<{ remaining: number; msBeforeNext: number } | { refusedForMs: number }> {
    // Each pass takes a point, meets the exhausted window, or waits for a lease that does one of the
    // two; the bound only guards against a store whose answers never settle.
    for (let attempt = 0; attempt < 1000; attempt++) {
      const now = this.clock.now();
      const lease = this.leases.get(key);
      if (lease && lease.expire > now) {
        if (lease.tokens > 0) {
          lease.tokens--;
          return { remaining: Math.max(0, this.points - lease.reserved) + lease.tokens, msBeforeNext: lease.expire - now };
        }
        if (lease.exhausted) return { refusedForMs: lease.expire - now };
      }
      let inflight = this.pending.get(key);
      if (!inflight) {
        inflight = this.take(key, lease && lease.expire > now ? lease : undefined).finally(() => this.pending.delete(key));
        this.pending.set(key, inflight);
      }
      try {
        await inflight;
      } catch {
        return this.insured(key);
      }
    }
    return this.insured(key);
  }

  /** Leases a block from the store (one upsert) and records what was granted. */
  private async take(key: string, current: Lease | undefined): Promise<void> {
    const now = this.clock.now();
    const rows = (await this.knex.raw(
      `insert into rate_limits (key, points, expire) values (?, ?, ?)
       on conflict (key) do update set
         points = case when rate_limits.expire > ? then rate_limits.points + excluded.points else excluded.points end,
         expire = case when rate_limits.expire > ? then rate_limits.expire else excluded.expire end
       returning points, expire`,
      [`${this.keyPrefix}:${key}`, this.lease, now + this.duration * 1000, now, now],
    )) as { rows: Array<{ points: number; expire: string }> };
    const row = rows.rows[0]!;
    const reserved = Number(row.points);
    const expire = Number(row.expire);
    const granted = Math.max(0, Math.min(this.lease, this.points - (reserved - this.lease)));
    const carried = current && current.expire === expire ? current.tokens : 0;
    if (this.leases.size >= 10_000) this.prune(now);
    this.leases.set(key, { expire, tokens: carried + granted, reserved: Math.min(reserved, this.points), exhausted: granted < this.lease });
  }

  private async insured(key: string): Promise<{ remaining: number; msBeforeNext: number } | { refusedForMs: number }> {
    try {
      const res = await this.insurance.consume(key);
      return { remaining: res.remainingPoints, msBeforeNext: res.msBeforeNext };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { refusedForMs: err.msBeforeNext };
      throw err;
    }
  }

  private prune(now: number): void {
    for (const [key, lease] of this.leases) if (lease.expire <= now) this.leases.delete(key);
  }
}

/**
 * Per-secret-key limits (SPEC §11), per wallet user and per client address on the pay page (SPEC
 * §16), shared by every instance through PostgreSQL (the embedded database included), leased in
 * blocks (see `LeasedLimiter`: no overshoot, bounded early refusal).
 */
export class RateLimits {
  private readonly requests: LeasedLimiter;
  private readonly lookups: LeasedLimiter;
  private readonly webhookTests: LeasedLimiter;
  private readonly users: LeasedLimiter;
  private readonly payPages: LeasedLimiter;

  constructor(knex: Knex, opts: RateLimitOptions) {
    this.requests = new LeasedLimiter(knex, 'req', opts.requestsPerSecond, 1);
    this.lookups = new LeasedLimiter(knex, 'lookup', opts.lookupsPerMinute, 60);
    this.webhookTests = new LeasedLimiter(knex, 'whtest', opts.webhookTestsPerMinute, 60);
    this.users = new LeasedLimiter(knex, 'user', opts.userOperationsPerSecond, 1);
    this.payPages = new LeasedLimiter(knex, 'pay', opts.payPagePerMinute, 60);
  }

  /** Counts one GraphQL operation of a wallet user, on any door and instance; throws past the limit. */
  user(userId: string): Promise<RateLimitInfo> {
    return this.consume(this.users, userId, 'Too many requests');
  }

  /** Counts one read of a link by its code (the pay page or `paymentRequestByCode`) from a client address; throws past the limit. */
  payPage(address: string): Promise<RateLimitInfo> {
    return this.consume(this.payPages, address, 'Too many payment link reads from this address');
  }

  /** Counts one test send to a webhook endpoint (a request to someone else's server); throws past the limit. */
  webhookTest(endpointId: string): Promise<RateLimitInfo> {
    return this.consume(this.webhookTests, endpointId, 'Too many test sends to this webhook endpoint');
  }

  /** Counts one request of a key; throws RateLimitedError past the limit. */
  request(keyId: string): Promise<RateLimitInfo> {
    return this.consume(this.requests, keyId, 'Too many requests');
  }

  /** Counts one account look-up of a key (the enumeration risk); throws past the limit. */
  lookup(keyId: string): Promise<RateLimitInfo> {
    return this.consume(this.lookups, keyId, 'Too many account look-ups');
  }

  private async consume(limiter: LeasedLimiter, keyId: string, message: string): Promise<RateLimitInfo> {
    const limit = limiter.points;
    const res = await limiter.consume(keyId);
    if ('refusedForMs' in res) {
      throw new RateLimitedError(message, { limit, remaining: 0, reset: Math.max(1, Math.ceil(res.refusedForMs / 1000)) });
    }
    return { limit, remaining: res.remaining, reset: Math.ceil(res.msBeforeNext / 1000) };
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
    /** The wallet user calling (counted like a key, USER_RATE_LIMIT_PER_SECOND). */
    private readonly userId?: string,
    /** Where the call comes from (the pay page's limit), when a door knows it. */
    private readonly clientAddress?: string,
  ) {}

  /** Counts the call itself against its key's (or its wallet user's) overall limit (every door, once per operation). */
  async request(): Promise<void> {
    if (this.userId) return this.record(await this.limits.user(this.userId));
    return this.count((keyId) => this.limits.request(keyId));
  }

  /** Counts an account look-up against its key's stricter limit. */
  lookup(): Promise<void> {
    return this.count((keyId) => this.limits.lookup(keyId));
  }

  /** Counts a read of a link by its code against the client address's pay-page limit (nothing without an address: the CLI). */
  async payPage(): Promise<void> {
    if (this.clientAddress) this.record(await this.limits.payPage(this.clientAddress));
  }

  /** The verdict with the fewest requests left, for the response headers. */
  get verdict(): RateLimitInfo | undefined {
    return this.strictest;
  }

  private async count(consume: (keyId: string) => Promise<RateLimitInfo>): Promise<void> {
    if (!this.keyId) return;
    this.record(await consume(this.keyId));
  }

  private record(info: RateLimitInfo): void {
    if (!this.strictest || info.remaining < this.strictest.remaining) this.strictest = info;
  }
}
