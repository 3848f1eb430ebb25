import type { UnitOfWork } from '../db/unit-of-work.js';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import { cutoffsDue, type CutoffSetting } from './cutoff.js';
import type { PayoutService } from './payout.service.js';

/** What a look of the schedule did. */
export interface PayoutScheduleRun {
  /** The cut-offs it ran (and recorded), oldest first. */
  cutoffs: Date[];
  made: number;
}

/**
 * The daily payouts (PAYOUT_CUTOFF in SETTLEMENT_TIMEZONE): every PAYOUT_CHECK_INTERVAL_SECONDS,
 * and at start, it asks the database's clock which cut-offs have passed since the last one
 * recorded in `payout_runs` and runs each, oldest first (a cut-off missed while no instance ran is
 * made up at start). A cut-off is recorded only when every payout due at it was made; one that
 * failed is run again at the next look, and what was made is not made again (the database refuses
 * a second payout for a cut-off: src/settlement/payout.service.ts). Any number of instances may
 * run it; on a leader-elected deployment, start it on the leader only.
 */
export class PayoutSchedule {
  private readonly loop: PollLoop;

  constructor(
    private readonly payouts: PayoutService,
    /** Opens the unit of work of one look. */
    private readonly begin: () => UnitOfWork,
    private readonly settings: CutoffSetting & { intervalSeconds: number },
    private readonly log: Logger,
  ) {
    this.loop = new PollLoop(
      async () => {
        await this.runOnce();
        return false;
      },
      Math.max(settings.intervalSeconds, 1) * 1000,
      () => undefined, // runOnce logs its own failures
    );
  }

  /** Starts looking (a first look at once: a missed cut-off is made up now); PAYOUT_CHECK_INTERVAL_SECONDS=0 never starts. */
  start(): void {
    if (this.settings.intervalSeconds > 0) this.loop.start({ now: true });
  }

  /** One look: runs the cut-offs due; failures are logged and retried at the next look. */
  async runOnce(): Promise<PayoutScheduleRun> {
    const done: PayoutScheduleRun = { cutoffs: [], made: 0 };
    try {
      const work = this.begin();
      const [clock] = await work.query<{ now: Date; last: Date | null }>('select now() as now, (select max(cutoff) from payout_runs) as last');
      const due = cutoffsDue(clock!.last === null ? null : new Date(clock!.last), new Date(clock!.now), this.settings);
      for (const cutoff of due) {
        const result = await this.payouts.run(cutoff.toISOString());
        done.made += result.made;
        if (result.failed > 0) {
          this.log.warn({ cutoff: cutoff.toISOString(), made: result.made, failed: result.failed }, 'payout run incomplete; retrying at the next look');
          break;
        }
        await work.query('insert into payout_runs (cutoff, payouts) values ($1, $2) on conflict (cutoff) do nothing', [cutoff.toISOString(), result.made]);
        done.cutoffs.push(cutoff);
        this.log.info({ cutoff: cutoff.toISOString(), payouts: result.made }, 'payouts made');
      }
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'payout schedule failed; retrying at the next look');
    }
    return done;
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
