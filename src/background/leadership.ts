import pg from 'pg';
import type { Logger } from 'pino';

/*
 * One elected leader per database: the instance that runs the background work (sweeps, retention,
 * the ledger check, the webhook delivery poll, the sandbox's test wallets, the outbox relay to
 * NATS). The shape follows River's internal/leadership elector (an elect loop with jitter, a
 * "resigned" notification that lets the others bid at once, a leader that re-checks itself every
 * interval and steps down when it cannot), with a PostgreSQL session-level advisory lock held on a
 * dedicated connection as the leadership itself, instead of River's leader row with a TTL: the
 * lock ends with the leader's session, so a leader that dies (its connection closes) is replaced
 * at the next bid, without waiting for a TTL to run out.
 */

/** Whether this instance is the leader now, and who to tell when that changes. */
export interface Leadership {
  readonly isLeader: boolean;
  /**
   * `listener(true)` when this instance becomes the leader, `listener(false)` when it stops being
   * one; a listener may return a promise (its work stopping), which `close()` waits for before it
   * hands the leadership over.
   */
  onChange(listener: LeadershipListener): void;
  /** Starts bidding; resolves after the first bid (elected or not). */
  start(): Promise<void>;
  /** Steps down (the others bid at once) and stops bidding. */
  close(): Promise<void>;
}

export type LeadershipListener = (leader: boolean) => void | Promise<void>;

/** Listeners told of each change, in order; `tell` resolves once each listener's work is done. */
class Listeners {
  private readonly list: LeadershipListener[] = [];
  constructor(private readonly log: Logger) {}
  add(listener: LeadershipListener): void {
    this.list.push(listener);
  }
  async tell(leader: boolean): Promise<void> {
    const failed = (err: unknown) => this.log.error({ err: { message: (err as Error).message } }, 'leadership listener failed');
    await Promise.all(
      this.list.map(async (listener) => {
        try {
          await listener(leader);
        } catch (err) {
          failed(err);
        }
      }),
    );
  }
}

/**
 * The embedded database belongs to one process (src/db/embedded.ts): that process is the leader
 * from its start to its close.
 */
export class SoleLeadership implements Leadership {
  private leader = false;
  private readonly listeners: Listeners;

  constructor(log: Logger) {
    this.listeners = new Listeners(log);
  }

  get isLeader(): boolean {
    return this.leader;
  }

  onChange(listener: LeadershipListener): void {
    this.listeners.add(listener);
  }

  async start(): Promise<void> {
    this.leader = true;
    await this.listeners.tell(true);
  }

  async close(): Promise<void> {
    if (!this.leader) return;
    this.leader = false;
    await this.listeners.tell(false);
  }
}

/** The advisory lock whose holder is the leader (an arbitrary constant; advisory locks are per database). */
export const LEADER_LOCK_KEY = 7_204_118_232;
/** The channel on which a leader that steps down tells the others to bid now. */
export const LEADERSHIP_CHANNEL = 'wallet_gateway_leadership';
/** How the leadership connection names itself in `pg_stat_activity`. */
export const LEADERSHIP_APPLICATION_NAME = 'wallet-gateway-leadership';

export interface AdvisoryLeadershipOptions {
  url: string;
  log: Logger;
  /**
   * How often a follower bids and the leader checks its connection (LEADER_ELECT_INTERVAL_MS):
   * a leader that died is replaced within about this long after PostgreSQL ends its session.
   */
  intervalMs: number;
  /** The lock (tests give each their own). */
  key?: number;
}

/**
 * Leadership through a session-level advisory lock (`pg_try_advisory_lock`) on a dedicated
 * connection (outside the pool; never through a transaction-mode pooler, which would lend the
 * session to others):
 * - a follower bids every `intervalMs` (plus up to a quarter of it at random, so the instances do
 *   not bid in step) and at once (within 50 ms) when a leader announces that it stepped down;
 * - the leader runs `select 1` every `intervalMs` with a deadline of `intervalMs`: when its
 *   connection fails or stalls, it stops its work at once and reconnects as a follower;
 * - PostgreSQL ends the session of a leader that died or vanished from the network (the session
 *   asks the server for TCP keepalives every 2 s after 5 s idle, and `tcp_user_timeout`), which
 *   frees the lock for the next bid: a leader killed is replaced within about one interval, one
 *   cut off from the database within about 15 s;
 * - `close()` unlocks and notifies, so a rolling restart hands the work over at once.
 * Every bid and check is one short statement on the dedicated connection: a follower costs
 * PostgreSQL one transaction per interval, the leader one more.
 */
export class AdvisoryLeadership implements Leadership {
  private client: pg.Client | undefined;
  private leader = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private readonly listeners: Listeners;
  private readonly key: number;
  private busy: Promise<void> | undefined;

  constructor(private readonly opts: AdvisoryLeadershipOptions) {
    this.listeners = new Listeners(opts.log);
    this.key = opts.key ?? LEADER_LOCK_KEY;
  }

  get isLeader(): boolean {
    return this.leader;
  }

  onChange(listener: LeadershipListener): void {
    this.listeners.add(listener);
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const seconds = Math.max(1, Math.round(this.opts.intervalMs / 1000));
    const client = new pg.Client({
      connectionString: this.opts.url,
      connectionTimeoutMillis: Math.max(2000, this.opts.intervalMs),
      keepAlive: true,
      application_name: LEADERSHIP_APPLICATION_NAME,
      // The server notices a leader that vanished (no FIN: a lost machine, a cut network) by
      // itself and ends its session, which frees the lock; without these it would wait for the
      // operating system's keepalive (two hours by default on Linux).
      options: `-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3 -c tcp_user_timeout=${Math.max(5, seconds * 3) * 1000} -c statement_timeout=${Math.max(2000, this.opts.intervalMs)}`,
    });
    client.on('notification', (msg) => {
      if (msg.channel === LEADERSHIP_CHANNEL && !this.leader && this.client === client) this.schedule(Math.random() * 50);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`listen ${LEADERSHIP_CHANNEL}`);
    } catch (err) {
      client.end().catch(() => undefined);
      this.opts.log.warn({ err: { message: (err as Error).message } }, 'leadership connection failed; retrying');
      this.reconnectLater();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    if (this.attempt > 0) this.opts.log.info('leadership connection re-established');
    this.attempt = 0;
    await this.tick();
  }

  /** A bid (follower) or a check of the connection (leader), then the next one in an interval. */
  private tick(): Promise<void> {
    this.busy ??= (async () => {
      const client = this.client;
      if (!client || this.closed) return;
      try {
        if (this.leader) {
          await this.deadline(client.query('select 1'));
        } else {
          const { rows } = await this.deadline(client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [this.key]));
          if (rows[0]?.locked && this.client === client && !this.closed) void this.become(true);
        }
        this.schedule(this.opts.intervalMs * (this.leader ? 1 : 1 + Math.random() / 4));
      } catch (err) {
        this.lost(client, err as Error);
      }
    })().finally(() => {
      this.busy = undefined;
    });
    return this.busy;
  }

  /** A statement that has not answered within an interval counts as a lost connection. */
  private deadline<T>(query: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('the leadership connection did not answer in time')), Math.max(1000, this.opts.intervalMs));
    });
    return Promise.race([query, late]).finally(() => clearTimeout(timer));
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick();
    }, ms);
    this.timer.unref();
  }

  private become(leader: boolean): Promise<void> {
    if (this.leader === leader) return Promise.resolve();
    this.leader = leader;
    this.opts.log.info({ pid: process.pid }, leader ? 'elected leader: running the background work' : 'no longer the leader: background work stopped');
    return this.listeners.tell(leader);
  }

  /** The connection failed: a leader stops its work at once (the lock goes with the session); reconnect. */
  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    void this.become(false);
    // The socket goes now (a stalled network would hold `end`'s goodbye for ever): where the
    // database can still see it closing, the session ends and the lock is free at once.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.opts.log.warn({ err: err ? { message: err.message } : undefined }, 'leadership connection lost; reconnecting');
    this.reconnectLater();
  }

  private reconnectLater(): void {
    if (this.closed || this.timer) return;
    const delay = Math.min(5000, 100 * 2 ** this.attempt++);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, delay);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.busy;
    const client = this.client;
    this.client = undefined;
    const wasLeader = this.leader;
    // The work stops before the lock is given up: two leaders never run it at once on purpose.
    await this.become(false);
    if (!client) return;
    if (wasLeader) {
      // Hand over at once: unlock, and tell the followers to bid now.
      await this.deadline(client.query(`select pg_advisory_unlock(${this.key}); select pg_notify('${LEADERSHIP_CHANNEL}', 'resigned')`)).catch(() => undefined);
    }
    await Promise.race([client.end().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
  }
}
