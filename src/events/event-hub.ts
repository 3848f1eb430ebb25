import { setMaxListeners } from 'node:events';
import { createPubSub } from '@graphql-yoga/subscription';
import type { Logger } from 'pino';
import type { Committed } from '../db/unit-of-work.js';
import { isOutboxEventType, walletTopicOf, type OutboxEventType, type OutboxPayload, type WalletEventType } from './events.js';
import { OutboxReader, type OutboxQuery, type OutboxRow } from './outbox.js';
import type { LeaderTask } from '../background/leader-work.js';

export type { WalletEventType } from './events.js';

/** Each topic carries the event as merchants receive it; the subscription's resolver reads its subject from it. */
type Topics = Record<WalletEventType, [userId: string, payload: OutboxPayload]>;

/**
 * Where a process's subscribers get the outbox from: its own reader (LocalFeed, below), or, with
 * NATS, the stream the leader publishes the outbox to (nats.ts, falling back to a reader of its
 * own while NATS is away).
 */
export interface OutboxFeed {
  /** Starts; `deliver` receives the rows of the users watched here, in order per payment request. */
  start(deliver: (rows: OutboxRow[]) => void): Promise<void>;
  /**
   * This process committed events; `read`: some of them were not handed to subscribers here that
   * want them (an earlier event of the request is still to come, or the writer did not know the
   * wallet's user), so the feed must bring them.
   */
  committed(read: boolean): void;
  /** Resolves once the events of `userId` committed from now on will be passed to `deliver`. */
  watch(userId: string): Promise<void>;
  /** No subscriber of `userId` is left here. */
  unwatch(userId: string): void;
  /** Whether the feed works (its reads succeed; with NATS, NATS or the fallback reader does). */
  readonly healthy: boolean;
  /** What the elected leader does for this feed (with NATS: the relay that publishes the outbox). */
  readonly leaderTask?: LeaderTask;
  close(): Promise<void>;
}

/** How often a reader polls while its subscribers are getting events (a read found some for them). */
export const BUSY_POLL_MS = 25;
/** How long after the last event for a subscriber here the reader stays at BUSY_POLL_MS. */
const BUSY_FOR_MS = 1000;

/**
 * The feed of a process that reads the outbox itself: an OutboxReader over the users that have
 * subscribers here, started on the first subscriber and idle without one. Events this process
 * committed reach its own subscribers at commit (EventHub.committed); the reader brings the
 * others (committed by other instances, or not handed over), polling every BUSY_POLL_MS while its
 * reads find events for its subscribers and every `idleMs` (OUTBOX_POLL_INTERVAL_MS) otherwise.
 * No instance hints another: a reader's cost is its poll, the same however many instances commit
 * and however fast (a hint per commit burst and instance, as before, grew with both), and an event
 * committed elsewhere reaches a subscriber here within one poll. With NATS, only the leader reads
 * (nats.ts).
 */
export class LocalFeed implements OutboxFeed {
  private readonly users = new Set<string>();
  private readonly reader: OutboxReader;
  private deliver: ((rows: OutboxRow[]) => void) | undefined;
  private busyUntil = 0;

  constructor(query: OutboxQuery, log: Logger, idleMs: number, onRead?: (rows: number) => void) {
    const busyMs = Math.min(BUSY_POLL_MS, idleMs);
    this.reader = new OutboxReader({
      query,
      log,
      intervalMs: () => (Date.now() < this.busyUntil ? busyMs : idleMs),
      interested: (userId) => this.users.has(userId),
      anyInterest: () => this.users.size > 0,
      deliver: ({ rows }) => {
        if (rows.length === 0) return;
        this.busyUntil = Date.now() + BUSY_FOR_MS;
        this.deliver?.(rows);
      },
      onRead,
    });
  }

  async start(deliver: (rows: OutboxRow[]) => void): Promise<void> {
    this.deliver = deliver;
    this.reader.start();
  }

  committed(read: boolean): void {
    // Only when something must come through the reader (an event not handed over here at commit).
    if (read && this.users.size > 0) this.reader.wake();
  }

  watch(userId: string): Promise<void> {
    this.users.add(userId);
    return this.reader.attach();
  }

  unwatch(userId: string): void {
    this.users.delete(userId);
  }

  get healthy(): boolean {
    return !this.reader.failing;
  }

  async close(): Promise<void> {
    await this.reader.stop();
  }
}

export interface EventHubOptions {
  /** Called with the commit → delivery lag (seconds) of each delivered event. */
  onDelivered?: (lagSeconds: number) => void;
}

/** How many payment requests the hub remembers the last delivered event of (for the in-order hand-off at commit). */
const REMEMBERED_REQUESTS = 20_000;

/**
 * One process's fan-out of the outbox to its WebSocket subscribers. Topics are keyed by the user
 * id taken from the authenticated context, never from arguments.
 *
 * An event reaches a subscriber by one of two paths, never both: the process that committed it
 * hands it over at once (no database read), when the request's previous event was handed over
 * here too (so per-request order holds); otherwise the feed brings it (outbox.ts, read once per
 * instance). A row the feed brings that was already handed over is dropped.
 */
export class EventHub {
  private readonly pubsub = createPubSub<Topics>({ eventTarget: EventHub.target() });
  private readonly perUser = new Map<string, number>();
  /** Per user, the registration with the feed (resolved once the feed covers the user). */
  private readonly watching = new Map<string, Promise<void>>();
  private readonly wakeListeners = new Set<() => void>();
  /** Per subject (a payment request), the sequence of the last event delivered here (by either path). */
  private readonly lastSequence = new Map<string, number>();
  /** Events handed over at commit whose row the feed has not brought yet: event id → user id. */
  private readonly handed = new Map<string, string>();
  /** Open subscriptions on this process, counted once the feed covers them (the metrics gauge reads it). */
  readonly stats = { subscriptions: 0, handedAtCommit: 0, fromFeed: 0 };

  constructor(
    private readonly feed: OutboxFeed,
    private readonly log: Logger,
    private readonly options: EventHubOptions = {},
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
    await this.feed.start((rows) => this.fromFeed(rows));
  }

  /**
   * Registers the webhook delivery worker to be woken after a commit of this process that queued
   * webhook deliveries; commits that queued none do not wake it (#10). (Deliveries queued by other
   * instances are theirs to send; the leader's poll takes what is left.)
   */
  onWake(listener: () => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  private wakeDeliveries(): void {
    for (const listener of this.wakeListeners) listener();
  }

  /** The leader's share of the fan-out (the NATS relay), if the feed has one. */
  get leaderTask(): LeaderTask | undefined {
    return this.feed.leaderTask;
  }

  /** Whether the feed works (see OutboxFeed.healthy). */
  get healthy(): boolean {
    return this.feed.healthy;
  }

  /** An async iterator of one user's payment requests for one topic; ends when the client unsubscribes. */
  subscribe(type: WalletEventType, userId: string): AsyncIterableIterator<OutboxPayload> {
    const inner = this.pubsub.subscribe(type, userId)[Symbol.asyncIterator]();
    this.perUser.set(userId, (this.perUser.get(userId) ?? 0) + 1);
    let released = false;
    let counted = false;
    let watch = this.watching.get(userId);
    if (!watch) {
      watch = this.feed.watch(userId);
      this.watching.set(userId, watch);
    }
    watch.then(
      () => {
        if (released) return;
        counted = true;
        this.stats.subscriptions++;
      },
      (err: unknown) => {
        // The feed could not start reading (database down): the poll retries; count it anyway.
        this.log.warn({ err: { message: (err as Error).message } }, 'subscription registration with the outbox feed failed');
        if (this.watching.get(userId) === watch) this.watching.delete(userId);
        if (released) return;
        counted = true;
        this.stats.subscriptions++;
      },
    );
    const release = (): void => {
      if (released) return;
      released = true;
      if (counted) this.stats.subscriptions--;
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left > 0) {
        this.perUser.set(userId, left);
        return;
      }
      this.perUser.delete(userId);
      this.watching.delete(userId);
      this.feed.unwatch(userId);
      for (const [eventId, owner] of this.handed) if (owner === userId) this.handed.delete(eventId);
    };
    const iterator: AsyncIterableIterator<OutboxPayload> = {
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

  /**
   * After this process committed events (every unit of work hands its commits here, src/db/unit-of-work.ts):
   * hand them to its own subscribers where order allows, then tell the feed.
   */
  committed(committed: Committed): void {
    // Whether the feed must bring some of these events to subscribers here (not handed over now).
    let read = false;
    for (const e of committed.events) {
      if (e.userId === null || !this.perUser.has(e.userId) || !isOutboxEventType(e.type) || !walletTopicOf(e.type)) continue;
      if ((this.lastSequence.get(e.subjectId) ?? 0) === e.sequence - 1 && this.publish(e.type, e.userId, e.payload as OutboxPayload, e.subjectId, e.sequence)) {
        this.handed.set(e.id, e.userId);
        this.stats.handedAtCommit++;
      } else {
        read = true; // an earlier one is still to come: the feed brings it in order
      }
    }
    if (committed.events.length > 0) this.feed.committed(read);
    if (committed.deliveries) this.wakeDeliveries();
  }

  private fromFeed(rows: OutboxRow[]): void {
    for (const row of rows) {
      if (this.handed.delete(row.id)) continue;
      if (!this.perUser.has(row.userId)) continue;
      if ((this.lastSequence.get(row.subjectId) ?? 0) >= row.sequence) continue;
      if (!walletTopicOf(row.type)) continue;
      let payload: OutboxPayload;
      try {
        payload = JSON.parse(row.payload) as OutboxPayload;
      } catch (err) {
        this.log.error({ err: { message: (err as Error).message }, eventId: row.id }, 'event payload unreadable');
        continue;
      }
      if (this.publish(row.type, row.userId, payload, row.subjectId, row.sequence)) this.stats.fromFeed++;
    }
  }

  /** Publishes one event to its user's topic; true when it went out. */
  private publish(type: OutboxEventType, userId: string, payload: OutboxPayload, subjectId: string, sequence: number): boolean {
    const topic = walletTopicOf(type);
    if (!topic) return false;
    try {
      this.pubsub.publish(topic, userId, payload);
      this.remember(subjectId, sequence);
      this.options.onDelivered?.(Math.max(0, Date.now() - Date.parse(payload.createdAt)) / 1000);
      return true;
    } catch (err) {
      this.log.error({ err: { message: (err as Error).message }, eventId: payload.id }, 'event dispatch failed');
      return false;
    }
  }

  private remember(subjectId: string, sequence: number): void {
    this.lastSequence.delete(subjectId);
    this.lastSequence.set(subjectId, sequence);
    if (this.lastSequence.size > REMEMBERED_REQUESTS) {
      const oldest = this.lastSequence.keys().next().value;
      if (oldest !== undefined) this.lastSequence.delete(oldest);
    }
  }

  async close(): Promise<void> {
    await this.feed.close();
  }
}
