import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { SecretBox } from './secret-box.js';
import { webhookHeaders } from './signing.js';
import { WEBHOOK_USER_AGENT, postWebhook, webhookPostOptions, type PostOutcome } from './http-post.js';
import { PollLoop } from '../background/poll-loop.js';
import type { LeaderTask } from '../background/leader-work.js';
import { tracing, webhookSpan } from '../observability/tracing.js';

/** A claimed delivery with everything its POST needs. */
interface Claimed {
  id: string;
  eventId: string;
  endpointId: string;
  attempts: number;
  url: string;
  body: string;
  secretEnc: string;
  previousSecretEnc: string | null;
}

const BATCH = 10;
/** Longer than any POST may take, so a live worker never loses its claim; a crashed one's claim lapses. */
const leaseSeconds = (config: Config): number => Math.ceil((2 * config.webhookTimeoutMs) / 1000) + 5;

/** What became of an attempt, for metrics: delivered (2xx), retrying (a retry is scheduled) or failed (given up). */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed';

/** An attempt's result class, for metrics: the status class, or why no response came. */
export function attemptResult(outcome: PostOutcome): string {
  if (outcome.status !== undefined) return `${Math.floor(outcome.status / 100)}xx`;
  if (outcome.error?.startsWith('timeout')) return 'timeout';
  if (outcome.error === 'address not allowed') return 'blocked';
  return 'network_error';
}

/** The delay before retry number `n` (1-based): the configured schedule with ±20% jitter. */
export function retryDelaySeconds(schedule: readonly number[], n: number, random = Math.random): number | undefined {
  const base = schedule[n - 1];
  if (base === undefined) return undefined;
  return base * (0.8 + 0.4 * random());
}

/**
 * Delivers webhooks; one runs in every instance, woken by that instance's own commits that queued
 * deliveries (so a delivery goes out at once from the instance that committed its event), and
 * the elected leader's also polls every WEBHOOK_POLL_INTERVAL_MS (`leaderTask`): retries as they
 * fall due, deliveries whose lease lapsed (an instance died mid-send) and ones that waited for an
 * earlier event of their request. It claims due deliveries with
 * `FOR UPDATE SKIP LOCKED` and a lease (so two instances never send the same delivery at once,
 * and a crash mid-delivery lets another instance send it again, with the same webhook-id, once
 * the lease lapses), POSTs them signed (Standard Webhooks), and records each attempt. A delivery
 * waits while an earlier event of the same payment request is still pending for its endpoint.
 * Anything but a 2xx is retried on the configured schedule, then the delivery fails; an endpoint
 * that has not answered 2xx for `webhookDisableAfterSeconds` is disabled.
 */
export class DeliveryWorker {
  private readonly poll: PollLoop;

  constructor(
    private readonly forkEm: () => EntityManager,
    private readonly config: Config,
    private readonly secrets: SecretBox,
    private readonly log: Logger,
    /** Told of every attempt (metrics). */
    private readonly onAttempt: (outcome: AttemptOutcome, result: string) => void = () => undefined,
  ) {
    this.poll = new PollLoop(async () => (await this.runOnce()) >= BATCH, config.webhookPollIntervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, 'webhook delivery pass failed; retrying'),
    );
  }

  /** Starts on wake-ups only (a first pass now); the leader's polling is `leaderTask`. */
  start(): void {
    this.poll.start({ now: true, poll: false });
  }

  /** The leader's share: polling for due deliveries, whoever queued them. */
  readonly leaderTask: LeaderTask = {
    name: 'webhook delivery poll',
    start: () => {
      this.poll.setPolling(true);
      this.poll.wake();
    },
    stop: async () => this.poll.setPolling(false),
  };

  /** Deliveries may be due: look now (after a commit that wrote events, or on the poll). */
  wake(): void {
    this.poll.wake();
  }

  /** Claims up to a batch of due deliveries and sends them concurrently; returns how many were claimed. */
  async runOnce(): Promise<number> {
    const token = randomUUID();
    const claimed = await this.forkEm().execute<Claimed[]>(
      `with due as (
         select d.id from webhook_deliveries d
           join webhook_endpoints ep on ep.id = d.endpoint_id and ep.status = 'ENABLED'
          where d.status = 'PENDING' and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until < now())
            and not exists (select 1 from webhook_deliveries p
                             where p.endpoint_id = d.endpoint_id and p.subject_id = d.subject_id
                               and p.sequence < d.sequence and p.status = 'PENDING')
          order by d.next_attempt_at, d.id
          limit ${BATCH}
          for update of d skip locked),
       claimed as (
         update webhook_deliveries d
            set lease_token = ?, lease_until = now() + make_interval(secs => ?), attempts = d.attempts + 1
           from due where d.id = due.id
         returning d.id, d.event_id, d.endpoint_id, d.attempts)
       select c.id::text as id, c.event_id as "eventId", c.endpoint_id as "endpointId", c.attempts,
              ep.url, e.payload::text as body, ep.secret_enc as "secretEnc",
              case when ep.previous_secret_expires_at > now() then ep.previous_secret_enc end as "previousSecretEnc"
         from claimed c join events e on e.id = c.event_id join webhook_endpoints ep on ep.id = c.endpoint_id`,
      [token, leaseSeconds(this.config)],
    );
    await Promise.all(claimed.map((d) => this.deliver(d, token)));
    return claimed.length;
  }

  private async deliver(d: Claimed, token: string): Promise<void> {
    const attemptedAt = new Date();
    let outcome: PostOutcome;
    try {
      const secrets = [this.secrets.open(d.secretEnc), ...(d.previousSecretEnc ? [this.secrets.open(d.previousSecretEnc)] : [])];
      const url = new URL(d.url);
      const headers = { 'user-agent': WEBHOOK_USER_AGENT, ...webhookHeaders(secrets, d.eventId, d.body) };
      const post = (sent: Record<string, string>) => postWebhook(url, d.body, sent, webhookPostOptions(this.config));
      // With tracing on, the attempt is a client span and the merchant receives its traceparent.
      outcome = tracing.on
        ? await webhookSpan(url, { 'webhook.event_id': d.eventId, 'webhook.endpoint_id': d.endpointId, 'webhook.attempt': d.attempts }, headers, post)
        : await post(headers);
    } catch (err) {
      outcome = { error: 'request failed', durationMs: 0 };
      this.log.error({ err: { message: (err as Error).message }, deliveryId: d.id }, 'webhook delivery could not be sent');
    }
    const ok = outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300;
    const error = ok ? null : (outcome.error ?? `HTTP ${outcome.status}`);
    const delay = ok ? undefined : retryDelaySeconds(this.config.webhookRetrySchedule, d.attempts);
    const status = ok ? 'DELIVERED' : delay === undefined ? 'FAILED' : 'PENDING';
    this.onAttempt(ok ? 'delivered' : delay === undefined ? 'failed' : 'retrying', attemptResult(outcome));
    await this.forkEm().transactional(async (tem) => {
      await tem.execute(
        `insert into webhook_attempts (delivery_id, event_id, endpoint_id, attempted_at, http_status, error, duration_ms)
         values (?, ?, ?, ?, ?, ?, ?)`,
        [d.id, d.eventId, d.endpointId, attemptedAt, outcome.status ?? null, error, outcome.durationMs],
      );
      await tem.execute(
        `update webhook_deliveries
            set status = ?, last_error = ?, lease_token = null, lease_until = null,
                delivered_at = case when ? then now() end,
                next_attempt_at = now() + make_interval(secs => ?)
          where id = ? and lease_token = ?`,
        [status, error, ok, delay ?? 0, d.id, token],
      );
      if (ok) {
        await tem.execute(`update webhook_endpoints set failing_since = null where id = ? and failing_since is not null`, [d.endpointId]);
      } else {
        await tem.execute(
          `update webhook_endpoints
              set failing_since = coalesce(failing_since, ?),
                  status = case when coalesce(failing_since, ?) <= now() - make_interval(secs => ?) then 'DISABLED' else status end,
                  disabled_reason = case when coalesce(failing_since, ?) <= now() - make_interval(secs => ?)
                                         then 'No successful delivery since ' || to_char(coalesce(failing_since, ?) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                         else disabled_reason end,
                  updated_at = now()
            where id = ? and status = 'ENABLED'`,
          [
            attemptedAt,
            attemptedAt,
            this.config.webhookDisableAfterSeconds,
            attemptedAt,
            this.config.webhookDisableAfterSeconds,
            attemptedAt,
            d.endpointId,
          ],
        );
      }
    });
    // Ids and outcome only: never the body, the URL's query or any secret. A failed attempt is a
    // warning (the merchant's endpoint needs looking at), with its endpoint and attempt number.
    this.log[ok ? 'info' : 'warn'](
      { deliveryId: d.id, eventId: d.eventId, endpointId: d.endpointId, attempt: d.attempts, httpStatus: outcome.status, error, status },
      'webhook attempt',
    );
  }

  /** Stops claiming and waits for the deliveries under way. */
  stop(): Promise<void> {
    return this.poll.stop();
  }
}
