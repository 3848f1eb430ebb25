import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { PaymentRequestService } from './payment-request.service.js';

/**
 * Writes EXPIRED onto overdue PENDING requests (reads already show EXPIRED from `expiresAt`
 * on) so that `paymentRequestUpdated` goes out. Several instances may sweep at once: rows are
 * claimed with `FOR UPDATE SKIP LOCKED`, so each request expires exactly once.
 */
export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly payments: PaymentRequestService,
    private readonly forkEm: () => EntityManager,
    private readonly intervalMs: number,
    private readonly log: Logger,
    private readonly batchSize = 500,
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /** One pass: batches until fewer than a full batch were due. Returns how many expired. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.payments.expireDue(this.forkEm(), this.batchSize);
      total += n;
      if (n < this.batchSize || this.stopped) return total;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweep()
        .then((n) => {
          if (n > 0) this.log.info({ expired: n }, 'expired payment requests');
        })
        .catch((err: unknown) => this.log.warn({ err: { message: (err as Error).message } }, 'expiry sweep failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops scheduling and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
