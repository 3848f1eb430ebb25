import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EventSubscriber, TransactionEventArgs } from '@mikro-orm/core';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL, transactionQueuedDeliveries, transactionWroteEvents } from './events.js';

/** What a wake-up says: the outbox may have new rows, and (`deliveries`) webhook deliveries may be queued. */
export interface Wake {
  deliveries: boolean;
}

/** The NOTIFY payload of a hint whose commit queued webhook deliveries (otherwise empty). */
const DELIVERIES_PAYLOAD = 'deliveries';

/**
 * Wake-up hints for one gateway instance: "the outbox may have new rows". A hint carries no
 * event; losing one only delays readers until their next poll.
 */
export interface WakeupSource {
  /** Calls `onWake` whenever another instance (or this one) hints. */
  start(onWake: (wake: Wake) => void): Promise<void>;
  /** Tells the other instances, after a commit that wrote events (and whether it queued webhook deliveries). */
  hint(deliveries: boolean): void;
  close(): Promise<void>;
  /** True while hints can arrive (the LISTEN connection is up). */
  readonly healthy: boolean;
}

/** How the LISTEN connection names itself in `pg_stat_activity`. */
export const LISTENER_APPLICATION_NAME = 'wallet-gateway-events';

/**
 * LISTENs on a dedicated connection (outside the pool) and sends hints on it with NOTIFY, outside
 * any business transaction (a NOTIFY inside one would serialise the commits of every notifying
 * transaction). Hints are coalesced: at most one NOTIFY is in flight, and hints meanwhile cause
 * exactly one more. The connection re-establishes itself with backoff after the database restarts.
 */
export class PgListenSource implements WakeupSource {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private onWake: ((wake: Wake) => void) | undefined;
  private sending = false;
  /** A hint asked for while one was in flight (true: one that queued deliveries), sent next. */
  private pendingHint: boolean | undefined;
  healthy = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async start(onWake: (wake: Wake) => void): Promise<void> {
    this.onWake = onWake;
    await this.connect();
  }

  hint(deliveries: boolean): void {
    if (this.sending) {
      this.pendingHint = (this.pendingHint ?? false) || deliveries;
      return;
    }
    const client = this.client;
    if (!client) return;
    this.sending = true;
    client
      .query(`select pg_notify('${EVENTS_CHANNEL}', '${deliveries ? DELIVERIES_PAYLOAD : ''}')`)
      .catch(() => undefined)
      .finally(() => {
        this.sending = false;
        const pending = this.pendingHint;
        this.pendingHint = undefined;
        if (pending !== undefined) this.hint(pending);
      });
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 3000,
      keepAlive: true,
      application_name: LISTENER_APPLICATION_NAME,
    });
    client.on('notification', (msg) => {
      if (msg.channel === EVENTS_CHANNEL) this.onWake?.({ deliveries: msg.payload === DELIVERIES_PAYLOAD });
    });
    const lost = (err?: Error): void => {
      if (this.client !== client) return;
      this.client = undefined;
      this.healthy = false;
      if (!this.closed) {
        this.log.warn({ err: err ? { message: err.message } : undefined }, 'event listener lost its connection; reconnecting');
        client.end().catch(() => undefined);
        this.scheduleReconnect();
      }
    };
    client.on('error', lost);
    client.on('end', () => lost());
    try {
      await client.connect();
      await client.query(`LISTEN ${EVENTS_CHANNEL}`);
      this.client = client;
      this.healthy = true;
      if (this.attempt > 0) this.log.info('event listener reconnected');
      this.attempt = 0;
      // Whatever was hinted while the connection was down: read now.
      this.onWake?.({ deliveries: true });
    } catch (err) {
      client.end().catch(() => undefined);
      this.log.warn({ err: { message: (err as Error).message } }, 'event listener could not connect; retrying');
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const delay = Math.min(5000, 100 * 2 ** this.attempt++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.connect();
    }, delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.healthy = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/**
 * For the embedded PostgreSQL, where NOTIFY does not reach another connection: one process owns
 * the database, and every reader in it is woken by its own commit hook (`CommitWakeup`).
 */
export class InProcessSource implements WakeupSource {
  healthy = true;
  async start(): Promise<void> {}
  hint(): void {}
  async close(): Promise<void> {
    this.healthy = false;
  }
}

/**
 * Wakes this instance's outbox readers (and hints the other instances) right after a commit that
 * wrote events, so delivery does not wait for the next poll.
 */
export class CommitWakeup implements EventSubscriber {
  constructor(
    private readonly orm: MikroORM,
    private readonly onCommit: (wake: Wake) => void,
  ) {}

  register(): void {
    this.orm.em.getEventManager().registerSubscriber(this);
  }

  afterTransactionCommit(args: TransactionEventArgs): void {
    const trx = args.transaction as object | undefined;
    if (trx && transactionWroteEvents(trx)) this.onCommit({ deliveries: transactionQueuedDeliveries(trx) });
  }

  unregister(): void {
    this.orm.em.getEventManager().getSubscribers().delete(this);
  }
}
