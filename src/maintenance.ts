import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from './background/poll-loop.js';

/** Rows one statement deletes at most: a pass stays short however much is due; the next pass goes on. */
const RETENTION_BATCH = 5000;

/** How long each kind of record is kept (config.ts; docs/operations.md, "Retention"). */
export interface Retention {
  eventRetentionDays: number;
  webhookDeliveryRetentionDays: number;
  idempotencyRetentionHours: number;
}

/** What one pass removed. */
export interface MaintenanceResult {
  idempotencyKeys: number;
  rateLimits: number;
  /** WebSocket connection places whose lease ran out (src/ws/connection-slots.ts). */
  wsConnections: number;
  events: number;
  webhookDeliveries: number;
  webhookAttempts: number;
}

/**
 * Periodic housekeeping, run by the elected leader (src/background/leadership.ts; each statement
 * is idempotent, so a second instance running it during a hand-over is harmless): retention of
 * idempotency records, webhook deliveries (with their attempts) and events, expired rate-limit
 * counters and expired WebSocket connection places. Retention deletes in batches by
 * age through BRIN/btree indexes on the creation time. Kept whatever their age: pending webhook
 * deliveries, the events they deliver, each payment request's latest event (its `sequence` goes
 * on from there), and the audit log (never deleted).
 */
export class Maintenance {
  private readonly loop: PollLoop;

  constructor(
    private readonly forkEm: () => EntityManager,
    log: Logger,
    private readonly retention: Retention,
    intervalMs = 60_000,
  ) {
    // A pass that removed a full batch of anything goes on at once with the next one.
    this.loop = new PollLoop(
      async () => {
        const removed = await this.run();
        return Math.max(removed.idempotencyKeys, removed.events, removed.webhookDeliveries) >= RETENTION_BATCH;
      },
      intervalMs,
      (err) => log.warn({ err: { message: (err as Error).message } }, 'maintenance failed'),
    );
  }

  start(): void {
    this.loop.start({ now: false });
  }

  /** One pass; returns what was removed. */
  async run(): Promise<MaintenanceResult> {
    const em = this.forkEm();
    const count = async (sql: string, params: unknown[]): Promise<number> =>
      (await em.execute<Array<{ n: number }>>(`with gone as (${sql} returning 1) select count(*)::int as n from gone`, params))[0]?.n ?? 0;
    const idempotencyKeys = await count(
      `delete from idempotency_keys where ctid in (
         select ctid from idempotency_keys where created_at < now() - make_interval(hours => ?) limit ${RETENTION_BATCH})`,
      [this.retention.idempotencyRetentionHours],
    );
    const rateLimits = await count(`delete from rate_limits where expire is not null and expire < ?`, [Date.now() - 60_000]);
    // WebSocket places (src/ws/connection-slots.ts) whose instance stopped renewing them: they no longer count.
    const wsConnections = await count(`delete from ws_connections where expires_at < now()`, []);
    // Finished deliveries past their retention, with their attempts, in one transaction.
    const deliveries = await em.transactional(async (tem) => {
      const old = await tem.execute<Array<{ id: string }>>(
        `select id from webhook_deliveries
          where created_at < now() - make_interval(days => ?) and status <> 'PENDING'
          limit ${RETENTION_BATCH} for update skip locked`,
        [this.retention.webhookDeliveryRetentionDays],
      );
      if (old.length === 0) return { deliveries: 0, attempts: 0 };
      const ids = old.map((r) => r.id);
      const attempts = await tem.execute<Array<{ n: number }>>(
        `with gone as (delete from webhook_attempts where delivery_id = any(array[?]::bigint[]) returning 1) select count(*)::int as n from gone`,
        [ids],
      );
      await tem.execute(`delete from webhook_deliveries where id = any(array[?]::bigint[])`, [ids]);
      return { deliveries: ids.length, attempts: attempts[0]?.n ?? 0 };
    });
    const events = await count(
      `delete from events where ctid in (
         select e.ctid from events e
          where e.created_at < now() - make_interval(days => ?)
            and exists (select 1 from events later where later.subject_id = e.subject_id and later.sequence > e.sequence)
            and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)
          limit ${RETENTION_BATCH})`,
      [this.retention.eventRetentionDays],
    );
    return { idempotencyKeys, rateLimits, wsConnections, events, webhookDeliveries: deliveries.deliveries, webhookAttempts: deliveries.attempts };
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
