import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { PaymentRequestService } from './payment-request.service.js';

/**
 * Writes EXPIRED onto overdue PENDING requests (reads already show EXPIRED from `expiresAt`
 * on) so that `paymentRequestUpdated` goes out. Several instances may sweep at once: rows are
 * claimed with `FOR UPDATE SKIP LOCKED`, so each request expires exactly once. Runs every
 * `intervalMs` on a PollLoop, batch after batch while batches come back full.
 */
export class ExpirySweeper {
  private readonly loop: PollLoop;

  constructor(
    private readonly payments: PaymentRequestService,
    private readonly forkEm: () => EntityManager,
    intervalMs: number,
    private readonly log: Logger,
    private readonly batchSize = 500,
  ) {
    this.loop = new PollLoop(async () => (await this.batch()) >= this.batchSize, intervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, 'expiry sweep failed'),
    );
  }

  start(): void {
    this.loop.start({ now: false });
  }

  /** One pass now: batches until fewer than a full batch were due. Returns how many expired. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.batch();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  private async batch(): Promise<number> {
    const n = await this.payments.expireDue(this.forkEm(), this.batchSize);
    if (n > 0) this.log.info({ expired: n }, 'expired payment requests');
    return n;
  }

  /** Stops scheduling and waits for a pass in progress. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
