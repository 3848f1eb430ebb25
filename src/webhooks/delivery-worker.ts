import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { UnitsOfWork } from '../db/unit-of-work.js';
import { PollLoop } from '../background/poll-loop.js';
import type { LeaderTask } from '../background/leader-work.js';
import { CLAIM_DUE, INSERT_ATTEMPT, RECORD_DELIVERY, type ClaimedRow } from './statements.js';
import { sendResult, type CompletedSend, type WebhookSender } from './sender.js';
import type { EndpointHealth } from './endpoint-health.js';

const BATCH = 10;
/** Longer than any POST may take, so a live worker never loses its claim; a crashed one's claim lapses. */
const leaseSeconds = (config: Pick<Config, 'webhookTimeoutMs'>): number => Math.ceil((2 * config.webhookTimeoutMs) / 1000) + 5;

/** What became of an attempt, for metrics: delivered (2xx), retrying (a retry is scheduled) or failed (given up). */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed';

/** The delay before retry number `n` (1-based): the configured schedule with ±20% jitter. */
export function retryDelaySeconds(schedule: readonly number[], n: number, random = Math.random): number | undefined {
  const base = schedule[n - 1];
  if (base === undefined) return undefined;
  return base * (0.8 + 0.4 * random());
}

/** Phase 3 of an attempt, decided from what the send came to: the delivery's next state. */
type Verdict =
  | { readonly outcome: 'delivered'; readonly status: 'DELIVERED'; readonly error: null; readonly delay: 0 }
  | { readonly outcome: 'retrying'; readonly status: 'PENDING'; readonly error: string; readonly delay: number }
  | { readonly outcome: 'failed'; readonly status: 'FAILED'; readonly error: string; readonly delay: 0 };

/** A delivered send is done; any other is retried on the schedule (`attempts` so far, this one included), then given up. */
export function verdictOf(sent: CompletedSend, attempts: number, schedule: readonly number[]): Verdict {
  if (sent.delivered) return { outcome: 'delivered', status: 'DELIVERED', error: null, delay: 0 };
  const error = sent.phase === 'answered' ? `HTTP ${sent.status}` : sent.error;
  const delay = retryDelaySeconds(schedule, attempts);
  return delay === undefined ? { outcome: 'failed', status: 'FAILED', error, delay: 0 } : { outcome: 'retrying', status: 'PENDING', error, delay };
}

/**
 * Delivers webhooks; one runs in every instance, woken by that instance's own commits that queued
 * deliveries (so a delivery goes out at once from the instance that committed its event), and
 * the elected leader's also polls every WEBHOOK_POLL_INTERVAL_MS (`leaderTask`): retries as they
 * fall due, deliveries whose lease lapsed (an instance died mid-send), ones that waited for an
 * earlier event of their subject, and resends. An attempt goes through three phases, each its
 * own, and no transaction or row lock spans the network:
 *
 * 1. claim (`CLAIM_DUE`, one statement, committed): due deliveries are leased with
 *    `FOR UPDATE SKIP LOCKED` (two instances never send the same delivery at once; a crash
 *    mid-send lets another instance send it again, with the same webhook-id, once the lease lapses);
 * 2. send (`WebhookSender`, the one signed send, test sends' too): signed (Standard Webhooks) and
 *    POSTed, holding nothing but the lease;
 * 3. record (one transaction): the endpoint's health first (`EndpointHealth`, the lock order),
 *    then the delivery's state (only while the lease is still ours) and the attempt's row.
 *
 * Anything but a 2xx is retried on the configured schedule, then the delivery fails; an endpoint
 * that has not answered 2xx for `webhookDisableAfterSeconds` is disabled.
 */
export class DeliveryWorker {
  private readonly poll: PollLoop;

  constructor(
    private readonly works: UnitsOfWork,
    private readonly config: Pick<Config, 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookPollIntervalMs'>,
    private readonly sender: WebhookSender,
    private readonly health: EndpointHealth,
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
    const claimed = await this.works.begin().run(CLAIM_DUE, [token, leaseSeconds(this.config), BATCH]);
    await Promise.all(claimed.map((d) => this.attempt(d, token)));
    return claimed.length;
  }

  private async attempt(d: ClaimedRow, token: string): Promise<void> {
    const attemptedAt = new Date();
    const sent = await this.sender.send(
      { endpointId: d.endpointId, url: d.url, secretEnc: d.secretEnc, previousSecretEnc: d.previousSecretEnc },
      { id: d.eventId, body: d.body, trace: { 'webhook.attempt': d.attempts } },
    );
    const verdict = verdictOf(sent, d.attempts, this.config.webhookRetrySchedule);
    this.onAttempt(verdict.outcome, sendResult(sent));
    const httpStatus = sent.phase === 'answered' ? sent.status : null;
    // Its own unit of work: the attempts of one pass are recorded concurrently, each in its own transaction.
    await this.works.begin().transaction(async (tx) => {
      await this.health.attempted(tx, d.endpointId, sent.delivered, attemptedAt);
      await tx.run(RECORD_DELIVERY, [d.id, token, verdict.status, verdict.error, sent.delivered, verdict.delay]);
      await tx.run(INSERT_ATTEMPT, [d.id, d.eventId, d.endpointId, attemptedAt, httpStatus, verdict.error, sent.durationMs]);
    });
    // Ids and outcome only: never the body, the URL's query or any secret. A failed attempt is a
    // warning (the merchant's endpoint needs looking at), with its endpoint and attempt number.
    this.log[sent.delivered ? 'info' : 'warn'](
      {
        deliveryId: d.id,
        eventId: d.eventId,
        endpointId: d.endpointId,
        attempt: d.attempts,
        httpStatus: httpStatus ?? undefined,
        error: verdict.error,
        status: verdict.status,
      },
      'webhook attempt',
    );
  }

  /** Stops claiming and waits for the deliveries under way. */
  stop(): Promise<void> {
    return this.poll.stop();
  }
}
