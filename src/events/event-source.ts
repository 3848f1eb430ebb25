import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EventSubscriber, TransactionEventArgs } from '@mikro-orm/core';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL, parseEvent, committedEvents, type WalletEvent } from './events.js';

/** Where committed events come from; one per gateway instance. */
export interface EventSource {
  start(handler: (event: WalletEvent) => void): Promise<void>;
  close(): Promise<void>;
  /** True while events can arrive (the LISTEN connection is up). */
  readonly healthy: boolean;
}

/**
 * LISTENs on a dedicated connection (outside the pool) and hands every NOTIFY to the handler,
 * so instances on one database deliver each other's events. The connection re-establishes
 * itself with backoff after the database restarts.
 */
export class PgListenSource implements EventSource {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private handler: ((event: WalletEvent) => void) | undefined;
  healthy = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async start(handler: (event: WalletEvent) => void): Promise<void> {
    this.handler = handler;
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000, keepAlive: true });
    client.on('notification', (msg) => {
      if (msg.channel !== EVENTS_CHANNEL) return;
      const event = parseEvent(msg.payload);
      if (event) this.handler?.(event);
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
 * For the embedded PostgreSQL, where NOTIFY does not reach another connection: the events a
 * transaction queued are handed over when MikroORM reports its commit. Only one process uses an
 * embedded database, so in-process delivery reaches every subscriber there is.
 */
export class CommitHookSource implements EventSource, EventSubscriber {
  private handler: ((event: WalletEvent) => void) | undefined;
  healthy = true;

  constructor(private readonly orm: MikroORM) {}

  async start(handler: (event: WalletEvent) => void): Promise<void> {
    this.handler = handler;
    this.orm.em.getEventManager().registerSubscriber(this);
  }

  afterTransactionCommit(args: TransactionEventArgs): void {
    const trx = args.transaction as object | undefined;
    if (!trx) return;
    for (const event of committedEvents(trx)) this.handler?.(event);
  }

  async close(): Promise<void> {
    this.handler = undefined;
    this.healthy = false;
  }
}
