import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EventSubscriber, TransactionEventArgs } from '@mikro-orm/core';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL, transactionWroteEvents } from './events.js';

/**
 * Wake-up hints for one gateway instance: "the outbox may have new rows". A hint carries no
 * event; losing one only delays readers until their next poll.
 */
export interface WakeupSource {
  /** Calls `onWake` whenever another instance (or this one) hints. */
  start(onWake: () => void): Promise<void>;
  /** Tells the other instances, after a commit that wrote events. */
  hint(): void;
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
  private onWake: (() => void) | undefined;
  private sending = false;
  private pendingHint = false;
  healthy = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async start(onWake: () => void): Promise<void> {
    this.onWake = onWake;
    await this.connect();
  }

  hint(): void {
    if (this.sending) {
      this.pendingHint = true;
      return;
    }
    const client = this.client;
    if (!client) return;
    this.sending = true;
    client
      .query(`select pg_notify('${EVENTS_CHANNEL}', '')`)
      .catch(() => undefined)
      .finally(() => {
        this.sending = false;
        if (this.pendingHint) {
          this.pendingHint = false;
          this.hint();
        }
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
      if (msg.channel === EVENTS_CHANNEL) this.onWake?.();
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
      this.onWake?.();
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
    private readonly onCommit: () => void,
  ) {}

  register(): void {
    this.orm.em.getEventManager().registerSubscriber(this);
  }

  afterTransactionCommit(args: TransactionEventArgs): void {
    const trx = args.transaction as object | undefined;
    if (trx && transactionWroteEvents(trx)) this.onCommit();
  }

  unregister(): void {
    this.orm.em.getEventManager().getSubscribers().delete(this);
  }
}
