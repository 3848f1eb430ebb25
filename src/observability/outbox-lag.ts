import { OUTBOX_BATCH } from '../events/outbox.js';

/**
 * The outbox reader's lag as /metrics reports it: seconds since the instance's reader last read
 * everything committed (a read shorter than a full batch, or an idle pass while nobody listens).
 * Healthy, it stays below the poll interval plus a read; it grows while the reader cannot read
 * (database down, a read failing) or keeps reading full batches. Fed by the reader's `onRead`.
 */
export class OutboxLag {
  private caughtUpAt = Date.now();

  /** The reader's hook: a read of `rows` rows finished. */
  read(rows: number): void {
    if (rows < OUTBOX_BATCH) this.caughtUpAt = Date.now();
  }

  get seconds(): number {
    return Math.max(0, Date.now() - this.caughtUpAt) / 1000;
  }
}
