import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { aggregateWorkerMetrics } from './observability/cluster-metrics.js';

/** First restart delay of a worker that died; doubled per quick death, up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** A worker that lived this long resets the backoff. */
const HEALTHY_AFTER_MS = 30_000;
/** How long the primary waits for its workers to drain after SIGTERM/SIGINT. */
const DRAIN_MS = 15_000;

export interface PrimaryOptions {
  workers: number;
  logger: Logger;
  /** Called with each worker forked. */
  onFork?: (worker: Worker) => void;
  /** Called once every worker has exited after SIGTERM/SIGINT, before the primary exits. */
  onStopped?: () => Promise<void>;
  /** The primary's own metrics, if any, summed with the workers' into every scrape of /metrics. */
  metrics?: Registry;
}

/**
 * The primary of `npm start` with more than one worker (node:cluster): a supervisor only. It
 * forks the workers, each a whole gateway instance on the shared port (its own pool, subscribers,
 * outbox reader or NATS consumer, and a bid for the leadership of the background work: the
 * primary relays no rows and holds no database connection), restarts one that dies unexpectedly
 * (with backoff), sums the workers' metrics for a scrape, and on SIGTERM/SIGINT passes the signal
 * on to every worker and exits 0 once all of them have drained and exited cleanly (1 if one did
 * not). Why a supervisor and not N processes behind a load balancer: docs/ARCHITECTURE.md.
 */
export function runPrimary({ workers, logger, onFork, onStopped, metrics }: PrimaryOptions): void {
  let stopping = false;
  let backoff = FIRST_BACKOFF_MS;
  const clean = new Map<number, boolean>();
  let forked = 0;
  // Workers start one after another (the next once the previous listens): what a gateway sets up
  // at start (migrations are done; the development test wallets) is not raced by its siblings.
  const startNext = (): void => {
    if (stopping || forked >= workers) return;
    forked++;
    fork();
  };
  const listening = new Set<number>();
  const fork = (): void => {
    const worker = cluster.fork();
    onFork?.(worker);
    const started = Date.now();
    worker.once('listening', () => {
      listening.add(worker.id);
      startNext();
    });
    worker.once('exit', (code, signal) => onExit(worker, started, code, signal));
  };
  const onExit = (worker: Worker, started: number, code: number | null, signal: string | null): void => {
    // A worker still starting when the signal came has nothing to drain: the signal may end it.
    clean.set(worker.id, code === 0 || (stopping && !listening.has(worker.id) && signal !== null));
    listening.delete(worker.id);
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) finish();
      return;
    }
    if (Date.now() - started >= HEALTHY_AFTER_MS) backoff = FIRST_BACKOFF_MS;
    logger.error({ pid: worker.process.pid, code, signal, restartInMs: backoff }, 'worker exited unexpectedly; restarting');
    setTimeout(() => {
      if (!stopping) fork();
    }, backoff).unref();
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  };
  const finish = (): void => {
    const ok = [...clean.values()].every(Boolean);
    void (onStopped?.() ?? Promise.resolve())
      .catch((err: unknown) => logger.warn({ err: { message: (err as Error).message } }, 'primary cleanup failed'))
      .finally(() => {
        logger.info({ workersClean: ok }, 'stopped');
        process.exit(ok ? 0 : 1);
      });
  };
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    clean.clear();
    logger.info({ signal, workers: Object.keys(cluster.workers ?? {}).length }, 'shutting down workers');
    const force = setTimeout(() => {
      logger.error('workers took longer than 15 s to drain; exiting');
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      process.exit(1);
    }, DRAIN_MS);
    force.unref();
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (alive.length === 0) finish();
    for (const w of alive) w.process.kill(signal);
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // A scrape of /metrics reaches one worker; it asks here for the sum over the listening workers.
  aggregateWorkerMetrics(() => [...listening].flatMap((id) => cluster.workers?.[id] ?? []), metrics);
  startNext();
  logger.info({ workers }, 'primary started its workers');
}
