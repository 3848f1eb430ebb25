import type { Logger } from 'pino';
import type { UnitOfWork } from '../db/unit-of-work.js';
import { PollLoop } from './poll-loop.js';

/** What a sweep is for: its name in the logs and one batch of its work. */
export interface SweepJob {
  /** Log words: `${what} sweep failed`, `${done} n`. */
  readonly what: string;
  readonly done: string;
  /** Ends up to `size` due rows in one database transaction of `work`; returns how many it ended. */
  batch(work: UnitOfWork, size: number): Promise<number>;
}

/**
 * Work that ends due rows in batches (overdue payment requests, holds not captured in time):
 * every `intervalMs` on a PollLoop, batch after batch while batches come back full. Several
 * instances may sweep at once; each job claims its rows with `FOR UPDATE SKIP LOCKED` and
 * re-checks their state, so each row ends exactly once.
 */
export class BatchSweeper {
  private readonly loop: PollLoop;

  constructor(
    private readonly job: SweepJob,
    /** Opens the unit of work of one batch. */
    private readonly begin: () => UnitOfWork,
    intervalMs: number,
    private readonly log: Logger,
    private readonly batchSize = 500,
  ) {
    this.loop = new PollLoop(async () => (await this.batch()) >= this.batchSize, intervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, `${job.what} sweep failed`),
    );
  }

  start(): void {
    this.loop.start({ now: false });
  }

  /** One pass now: batches until fewer than a full batch were due. Returns how many rows it ended. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.batch();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  private async batch(): Promise<number> {
    const n = await this.job.batch(this.begin(), this.batchSize);
    if (n > 0) this.log.info({ count: n }, this.job.done);
    return n;
  }

  /** Stops scheduling and waits for a pass in progress. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
