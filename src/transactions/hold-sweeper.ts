import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import type { TransactionService } from './transaction.service.js';

/**
 * Voids the holds of MANUAL payments not captured within HOLD_TTL_HOURS (`transaction.voided`,
 * hold released). Beside the expiry sweeper, on the same interval: several instances may sweep at
 * once; rows are claimed with `FOR UPDATE SKIP LOCKED` and re-checked PENDING, so each hold ends
 * exactly once, whether by capture, void or this sweep.
 */
export class HoldSweeper {
  private readonly loop: PollLoop;

  constructor(
    private readonly transactions: Pick<TransactionService, 'expireHolds'>,
    private readonly forkEm: () => EntityManager,
    intervalMs: number,
    private readonly log: Logger,
    private readonly batchSize = 500,
  ) {
    this.loop = new PollLoop(async () => (await this.batch()) >= this.batchSize, intervalMs, (err) =>
      log.warn({ err: { message: (err as Error).message } }, 'hold sweep failed'),
    );
  }

  start(): void {
    this.loop.start({ now: false });
  }

  /** One pass now: batches until fewer than a full batch were due. Returns how many holds it voided. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.batch();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  private async batch(): Promise<number> {
    const n = await this.transactions.expireHolds(this.forkEm(), this.batchSize);
    if (n > 0) this.log.info({ voided: n }, 'voided expired holds');
    return n;
  }

  /** Stops scheduling and waits for a pass in progress. */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
