import cluster, { type Worker } from 'node:cluster';
import pg from 'pg';
import type { Logger } from 'pino';
import { OutboxReader, type OutboxQuery, type OutboxRow } from './outbox.js';
import { PgListenSource } from './event-source.js';
import type { FeedHandlers, OutboxFeed } from './event-hub.js';

/*
 * One outbox reader per instance when the instance is a node:cluster primary with workers: the
 * primary reads (one connection, one read at a time, however many workers) and sends each worker
 * the rows of the users it has subscribers for; the workers tell it about their commits (which
 * wake the read and are hinted to the other instances) and their subscribers.
 */

/** Messages between the primary and its workers (the `outbox` field tells them from other IPC). */
type ToPrimary =
  | { outbox: 'watch'; userId: string; ref: number }
  | { outbox: 'unwatch'; userId: string }
  | { outbox: 'committed'; deliveries: boolean };
type ToWorker =
  | { outbox: 'rows'; rows: OutboxRow[] }
  | { outbox: 'watching'; ref: number; error?: string }
  | { outbox: 'deliveries' }
  | { outbox: 'healthy'; healthy: boolean };

const isMessage = <T extends { outbox: string }>(m: unknown): m is T =>
  typeof m === 'object' && m !== null && typeof (m as { outbox?: unknown }).outbox === 'string';

/** How the primary's outbox connection names itself in `pg_stat_activity`. */
export const READER_APPLICATION_NAME = 'wallet-gateway-outbox';

/** Named prepared statements on a small pool of the primary's own. */
function poolQuery(pool: pg.Pool): OutboxQuery {
  return async <T>(name: string, text: string, values: readonly unknown[]) => (await pool.query({ name, text, values: [...values] })).rows as T[];
}

export interface OutboxPrimaryOptions {
  url: string;
  log: Logger;
  pollIntervalMs: number;
  /** Called after each read with the rows it read (the lag metric's hook). */
  onRead?: (rows: number) => void;
}

/** The primary's side: reads the outbox for every worker and relays commits and hints. */
export class OutboxPrimary {
  private readonly pool: pg.Pool;
  private readonly source: PgListenSource;
  private readonly reader: OutboxReader;
  /** Which workers have subscribers of a user. */
  private readonly users = new Map<string, Set<number>>();
  private lastHealthy: boolean | undefined;

  constructor(opts: OutboxPrimaryOptions) {
    this.pool = new pg.Pool({ connectionString: opts.url, max: 1, idleTimeoutMillis: 30_000, application_name: READER_APPLICATION_NAME });
    this.pool.on('error', () => undefined); // an idle connection lost: the next read opens another
    this.source = new PgListenSource(opts.url, opts.log);
    this.reader = new OutboxReader(
      poolQuery(this.pool),
      opts.log,
      opts.pollIntervalMs,
      (userId) => this.users.has(userId),
      () => this.users.size > 0,
      (rows) => this.route(rows),
      opts.onRead,
    );
  }

  async start(): Promise<void> {
    this.reader.start();
    await this.source.start((wake) => {
      this.reader.wake();
      if (wake.deliveries) this.broadcast({ outbox: 'deliveries' });
    });
    const health = setInterval(() => this.reportHealth(), 1000);
    health.unref();
    this.stopHealth = () => clearInterval(health);
  }

  private stopHealth: () => void = () => undefined;

  /** Listens to one worker (call for each forked worker). */
  attach(worker: Worker): void {
    worker.on('message', (m: unknown) => {
      if (isMessage<ToPrimary>(m)) void this.onMessage(worker, m);
    });
    worker.once('exit', () => {
      for (const [userId, workers] of this.users) {
        workers.delete(worker.id);
        if (workers.size === 0) this.users.delete(userId);
      }
    });
    worker.once('online', () => this.send(worker, { outbox: 'healthy', healthy: this.source.healthy }));
  }

  private async onMessage(worker: Worker, m: ToPrimary): Promise<void> {
    switch (m.outbox) {
      case 'committed':
        this.reader.wake();
        this.source.hint(m.deliveries);
        return;
      case 'watch': {
        const workers = this.users.get(m.userId) ?? new Set<number>();
        workers.add(worker.id);
        this.users.set(m.userId, workers);
        try {
          await this.reader.attach();
          this.send(worker, { outbox: 'watching', ref: m.ref });
        } catch (err) {
          this.send(worker, { outbox: 'watching', ref: m.ref, error: (err as Error).message });
        }
        return;
      }
      case 'unwatch': {
        const workers = this.users.get(m.userId);
        workers?.delete(worker.id);
        if (workers?.size === 0) this.users.delete(m.userId);
        return;
      }
    }
  }

  /** Sends each worker the rows of its users, in order. */
  private route(rows: OutboxRow[]): void {
    const byWorker = new Map<number, OutboxRow[]>();
    for (const row of rows) {
      for (const id of this.users.get(row.userId) ?? []) {
        const list = byWorker.get(id) ?? [];
        list.push(row);
        byWorker.set(id, list);
      }
    }
    for (const [id, list] of byWorker) {
      const worker = cluster.workers?.[id];
      if (worker) this.send(worker, { outbox: 'rows', rows: list });
    }
  }

  private reportHealth(): void {
    if (this.source.healthy === this.lastHealthy) return;
    this.lastHealthy = this.source.healthy;
    this.broadcast({ outbox: 'healthy', healthy: this.lastHealthy });
  }

  private broadcast(m: ToWorker): void {
    for (const worker of Object.values(cluster.workers ?? {})) if (worker) this.send(worker, m);
  }

  private send(worker: Worker, m: ToWorker): void {
    if (!worker.isConnected()) return;
    try {
      worker.send(m);
    } catch {
      // the worker is exiting: its subscribers are gone with it
    }
  }

  async close(): Promise<void> {
    this.stopHealth();
    await this.reader.stop();
    await this.source.close();
    await this.pool.end().catch(() => undefined);
  }
}

/** A worker's side: its feed is the primary. */
export class ClusterFeed implements OutboxFeed {
  private handlers: FeedHandlers | undefined;
  private nextRef = 1;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  private committedPending: boolean | undefined;
  healthy = true;
  private readonly onMessage = (m: unknown): void => {
    if (!isMessage<ToWorker>(m)) return;
    switch (m.outbox) {
      case 'rows':
        this.handlers?.rows(m.rows);
        return;
      case 'watching': {
        const w = this.waiting.get(m.ref);
        this.waiting.delete(m.ref);
        if (m.error) w?.reject(new Error(m.error));
        else w?.resolve();
        return;
      }
      case 'deliveries':
        this.handlers?.deliveries();
        return;
      case 'healthy':
        this.healthy = m.healthy;
        return;
    }
  };

  async start(handlers: FeedHandlers): Promise<void> {
    this.handlers = handlers;
    process.on('message', this.onMessage);
  }

  /** Commits of one turn of the event loop share one message to the primary. */
  committed(deliveries: boolean): void {
    const first = this.committedPending === undefined;
    this.committedPending = (this.committedPending ?? false) || deliveries;
    if (!first) return;
    setImmediate(() => {
      const d = this.committedPending ?? false;
      this.committedPending = undefined;
      this.toPrimary({ outbox: 'committed', deliveries: d });
    });
  }

  watch(userId: string): Promise<void> {
    const ref = this.nextRef++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(ref, { resolve, reject });
      if (!this.toPrimary({ outbox: 'watch', userId, ref })) {
        this.waiting.delete(ref);
        reject(new Error('the cluster primary is gone'));
      }
    });
  }

  unwatch(userId: string): void {
    this.toPrimary({ outbox: 'unwatch', userId });
  }

  private toPrimary(m: ToPrimary): boolean {
    if (!process.send || !process.connected) return false;
    try {
      process.send(m);
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    process.off('message', this.onMessage);
    for (const w of this.waiting.values()) w.reject(new Error('closed'));
    this.waiting.clear();
  }
}
