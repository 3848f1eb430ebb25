import { setMaxListeners } from 'node:events';
import { createPubSub } from '@graphql-yoga/subscription';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import type { PaymentRequestStatus } from '../payment-requests/payment-request.entity.js';
import { CommitWakeup, type Wake, type WakeupSource } from './event-source.js';
import type { EventType, JsonBody } from './events.js';
import { OutboxReader, type OutboxRow } from './outbox-reader.js';

/** The wallet app's subscription topics. */
export type WalletEventType = 'paymentRequested' | 'paymentRequestUpdated';

type Topics = Record<WalletEventType, [userId: string, payload: PaymentRequestView]>;

/** Which subscription an outbox event feeds (refunds are not sent to the app). */
export function walletTopicOf(type: EventType): WalletEventType | undefined {
  switch (type) {
    case 'payment_request.created':
      return 'paymentRequested';
    case 'payment_request.approved':
    case 'payment_request.rejected':
    case 'payment_request.cancelled':
    case 'payment_request.expired':
      return 'paymentRequestUpdated';
    case 'transaction.refunded':
      return undefined;
    default: {
      const never: never = type;
      throw new Error(`unknown event type ${String(never)}`);
    }
  }
}

/** The view a subscriber receives, rebuilt from the event's PaymentRequestStatus body (the state the event describes). */
function viewOf(body: JsonBody): PaymentRequestView {
  const b = body as Record<string, unknown>;
  return Object.assign(new PaymentRequestView(), {
    id: b.id as string,
    status: b.status as PaymentRequestStatus,
    amount: b.amount as number,
    currency: b.currency as string,
    description: b.description as string,
    merchantName: b.merchantName as string,
    createdAt: new Date(b.createdAt as string),
    expiresAt: new Date(b.expiresAt as string),
    updatedAt: new Date(b.updatedAt as string),
    transactionId: (b.transactionId as string | null) ?? null,
    reference: (b.reference as string | null) ?? null,
    metadata: (b.metadata as Record<string, string> | null) ?? null,
  });
}

export interface EventHubOptions {
  /** How often the outbox is read when no wake-up came (covers a lost hint). */
  pollIntervalMs: number;
  /** Called with the commit → delivery lag (seconds) of each delivered event. */
  onDelivered?: (lagSeconds: number) => void;
}

/**
 * One instance's fan-out of the outbox to its WebSocket subscribers. Rows come from the
 * OutboxReader (woken after local commits, by NOTIFY hints from other instances, and by a
 * short poll); every local subscriber of the row's user receives it. Topics are keyed by the
 * user id taken from the authenticated context, never from arguments. Other outbox readers of
 * this instance (the webhook worker) register with `onWake` for the wake-ups of commits that queued deliveries.
 */
export class EventHub {
  private readonly pubsub = createPubSub<Topics>({ eventTarget: EventHub.target() });
  private readonly perUser = new Map<string, number>();
  private readonly wakeListeners = new Set<() => void>();
  private readonly reader: OutboxReader;
  private readonly commitWakeup: CommitWakeup;
  /** Open subscriptions on this instance (the metrics gauge reads it). */
  readonly stats = { subscriptions: 0 };

  constructor(
    private readonly source: WakeupSource,
    orm: MikroORM,
    private readonly log: Logger,
    private readonly options: EventHubOptions,
  ) {
    this.reader = new OutboxReader(
      () => orm.em.fork(),
      log,
      options.pollIntervalMs,
      (userId) => this.perUser.has(userId),
      () => this.perUser.size > 0,
      (rows) => this.dispatch(rows),
    );
    this.commitWakeup = new CommitWakeup(orm, (wake) => {
      this.wakeLocal(wake);
      this.source.hint(wake.deliveries);
    });
  }

  /**
   * The pubsub's EventTarget: one listener per subscription on a user's topic. The WebSocket door
   * caps a user's open operations (50), so more than Node's default of 10 listeners is expected;
   * the warning stays for anything beyond the cap.
   */
  private static target(): EventTarget {
    const target = new EventTarget();
    setMaxListeners(64, target);
    return target;
  }

  async start(): Promise<void> {
    await this.reader.start();
    this.commitWakeup.register();
    await this.source.start((wake) => this.wakeLocal(wake));
  }

  /**
   * Registers the webhook delivery worker to be woken after a commit (here or on another
   * instance) that queued webhook deliveries; commits that queued none do not wake it (#10).
   */
  onWake(listener: () => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  private wakeLocal(wake: Wake): void {
    this.reader.wake();
    if (wake.deliveries) for (const listener of this.wakeListeners) listener();
  }

  /** Seconds since this instance's outbox reader last read everything settled (its lag, for /metrics). */
  get readerLagSeconds(): number {
    return Math.max(0, Date.now() - this.reader.caughtUpAt) / 1000;
  }

  /** Whether wake-ups from other instances arrive (the LISTEN connection is up); polling works regardless. */
  get healthy(): boolean {
    return this.source.healthy;
  }

  /** An async iterator of one user's payment requests for one topic; ends when the client unsubscribes. */
  subscribe(type: WalletEventType, userId: string): AsyncIterableIterator<PaymentRequestView> {
    const inner = this.pubsub.subscribe(type, userId)[Symbol.asyncIterator]();
    this.perUser.set(userId, (this.perUser.get(userId) ?? 0) + 1);
    this.stats.subscriptions++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.stats.subscriptions--;
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left <= 0) this.perUser.delete(userId);
      else this.perUser.set(userId, left);
    };
    const iterator: AsyncIterableIterator<PaymentRequestView> = {
      [Symbol.asyncIterator]: () => iterator,
      next: async () => {
        const r = await inner.next();
        if (r.done) release();
        return r;
      },
      return: async (value?: unknown) => {
        release();
        await inner.return?.(value);
        return { done: true, value: undefined };
      },
      throw: async (err?: unknown) => {
        release();
        if (inner.throw) return inner.throw(err);
        throw err;
      },
    };
    return iterator;
  }

  private dispatch(rows: OutboxRow[]): void {
    for (const row of rows) {
      const topic = walletTopicOf(row.type);
      if (!topic || !this.perUser.has(row.userId)) continue;
      try {
        this.pubsub.publish(topic, row.userId, viewOf(row.payload.data.paymentRequest));
        this.options.onDelivered?.(Math.max(0, Date.now() - Date.parse(row.payload.createdAt)) / 1000);
      } catch (err) {
        this.log.error({ err: { message: (err as Error).message }, eventId: row.payload.id }, 'event dispatch failed');
      }
    }
  }

  async close(): Promise<void> {
    this.commitWakeup.unregister();
    await this.reader.stop();
    await this.source.close();
  }
}
