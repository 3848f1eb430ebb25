import { setMaxListeners } from 'node:events';
import { createPubSub } from '@graphql-yoga/subscription';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import type { EventSource } from './event-source.js';
import type { WalletEvent, WalletEventType } from './events.js';


type Topics = Record<WalletEventType, [userId: string, payload: PaymentRequest]>;

/**
 * One instance's fan-out: committed events arrive from the EventSource (LISTEN or commit hook),
 * the payment request is read once, and every local subscriber of that user receives it.
 * Topics are keyed by the user id taken from the authenticated context, never from arguments.
 */
export class EventHub {
  private readonly pubsub = createPubSub<Topics>({ eventTarget: EventHub.target() });
  private readonly perUser = new Map<string, number>();
  /** Open subscriptions on this instance (the metrics gauge reads it). */
  readonly stats = { subscriptions: 0 };

  constructor(
    private readonly source: EventSource,
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
    /** Called with the publication → delivery lag (seconds) of each delivered event. */
    private readonly onDelivered: (lagSeconds: number) => void = () => undefined,
  ) {}

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
    await this.source.start((event) => {
      void this.dispatch(event).catch((err: unknown) => this.log.error({ err, event }, 'event dispatch failed'));
    });
  }

  /** Whether the source of events is connected. */
  get healthy(): boolean {
    return this.source.healthy;
  }

  /** An async iterator of one user's payment requests for one event type; ends when the client unsubscribes. */
  subscribe(type: WalletEventType, userId: string): AsyncIterableIterator<PaymentRequest> {
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
    const iterator: AsyncIterableIterator<PaymentRequest> = {
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

  private async dispatch(event: WalletEvent): Promise<void> {
    if (!this.perUser.has(event.userId)) return;
    const pr = await this.forkEm().findOne(PaymentRequest, { id: event.paymentRequestId });
    if (!pr) return;
    this.pubsub.publish(event.type, event.userId, pr);
    this.onDelivered(Math.max(0, Date.now() - event.at) / 1000);
  }

  async close(): Promise<void> {
    await this.source.close();
  }
}
