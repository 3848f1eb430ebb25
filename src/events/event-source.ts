import pg from 'pg';
import type { Logger } from 'pino';
import { detachedFromTrace } from '../observability/tracing.js';

/** The PostgreSQL channel on which commits that wrote events are hinted to every gateway instance. */
export const EVENTS_CHANNEL = 'wallet_gateway_events';

/** At most one NOTIFY per instance per this many milliseconds: commits meanwhile share it. */
export const HINT_DEBOUNCE_MS = 5;

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
 * transaction). Hints are debounced: the first hint after a quiet spell is sent `debounceMs`
 * later, and every hint until then (or while one is in flight) shares it, so an instance sends at
 * most one NOTIFY per `debounceMs` however many payments commit. A hint from this instance's own
 * connection is ignored (its commits already woke it). Readers never depend on a hint: they poll.
 * The connection re-establishes itself with backoff after the database restarts.
 */
export class PgListenSource implements WakeupSource {
  private client: pg.Client | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private onWake: ((wake: Wake) => void) | undefined;
  private sending = false;
  private hintTimer: NodeJS.Timeout | undefined;
  /** A hint waiting to be sent (true: one of its commits queued deliveries). */
  private pendingHint: boolean | undefined;
  /** NOTIFYs sent (tests and the measurements in docs/performance.md read it). */
  readonly stats = { notifies: 0 };
  healthy = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
    private readonly debounceMs = HINT_DEBOUNCE_MS,
  ) {}

  async start(onWake: (wake: Wake) => void): Promise<void> {
    this.onWake = onWake;
    await this.connect();
  }

  hint(deliveries: boolean): void {
    this.pendingHint = (this.pendingHint ?? false) || deliveries;
    this.scheduleHint();
  }

  private scheduleHint(): void {
    if (this.hintTimer || this.sending || this.closed) return;
    // One hint for the commits of many requests: not part of the trace of the one that scheduled it.
    this.hintTimer = setTimeout(() => detachedFromTrace(() => this.sendHint()), this.debounceMs);
    this.hintTimer.unref();
  }

  private sendHint(): void {
    this.hintTimer = undefined;
    const deliveries = this.pendingHint;
    const client = this.client;
    if (deliveries === undefined || !client) return; // no connection: the other instances' polls cover it
    this.pendingHint = undefined;
    this.sending = true;
    this.stats.notifies++;
    client
      .query(`select pg_notify('${EVENTS_CHANNEL}', '${deliveries ? DELIVERIES_PAYLOAD : ''}')`)
      .catch(() => undefined)
      .finally(() => {
        this.sending = false;
        if (this.pendingHint !== undefined) this.scheduleHint();
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
      const own = msg.processId === (client as unknown as { processID?: number }).processID;
      if (msg.channel === EVENTS_CHANNEL && !own) this.onWake?.({ deliveries: msg.payload === DELIVERIES_PAYLOAD });
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
    if (this.hintTimer) clearTimeout(this.hintTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

/**
 * For the embedded PostgreSQL, where NOTIFY does not reach another connection: one process owns
 * the database, and its reader is woken by its own commits (event-hub.ts).
 */
export class InProcessSource implements WakeupSource {
  healthy = true;
  async start(): Promise<void> {}
  hint(): void {}
  async close(): Promise<void> {
    this.healthy = false;
  }
}
