import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';

/** How long an Idempotency-Key is remembered (SPEC §10). */
export const IDEMPOTENCY_TTL_HOURS = 24;

/**
 * Periodic housekeeping shared by all instances (each statement is idempotent, so several
 * instances running it is harmless): forgets idempotency records after 24 h and drops expired
 * rate-limit counters.
 */
export class Maintenance {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
    private readonly intervalMs = 60_000,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.run()
        .catch((err: unknown) => this.log.warn({ err: { message: (err as Error).message } }, 'maintenance failed'))
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One pass; returns what was removed. */
  async run(): Promise<{ idempotencyKeys: number; rateLimits: number }> {
    const em = this.forkEm();
    const keys = await em.execute<Array<{ n: number }>>(
      `with gone as (delete from idempotency_keys where created_at < now() - make_interval(hours => ?) returning 1)
       select count(*)::int as n from gone`,
      [IDEMPOTENCY_TTL_HOURS],
    );
    const limits = await em.execute<Array<{ n: number }>>(
      `with gone as (delete from rate_limits where expire is not null and expire < ? returning 1) select count(*)::int as n from gone`,
      [Date.now() - 60_000],
    );
    return { idempotencyKeys: keys[0]?.n ?? 0, rateLimits: limits[0]?.n ?? 0 };
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
