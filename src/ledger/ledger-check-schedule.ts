import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { PollLoop } from '../background/poll-loop.js';
import { checkLedger, type LedgerCheck } from './ledger-check.js';

/** The advisory lock (an arbitrary constant) under which one instance at a time runs the scheduled check. */
export const LEDGER_CHECK_LOCK_KEY = 7_204_118_231;
/** How often an instance looks whether a check is due (at most). */
const TICK_MAX_MS = 60_000;

/**
 * Runs the ledger check and records its result in `ledger_checks`, unless one ran within
 * `intervalSeconds` or another instance is running it now (a transaction-scoped advisory lock):
 * however many instances and workers there are, the check runs about once an interval. Returns
 * the result, or undefined when it was not this instance's turn.
 */
export async function runScheduledLedgerCheck(em: EntityManager, intervalSeconds: number): Promise<LedgerCheck | undefined> {
  return em.transactional(
    async (tem) => {
      const [lock] = await tem.execute<Array<{ locked: boolean }>>('select pg_try_advisory_xact_lock(?) as locked', [LEDGER_CHECK_LOCK_KEY]);
      if (!lock?.locked) return undefined;
      const [recent] = await tem.execute<Array<{ recent: boolean }>>(
        'select exists (select 1 from ledger_checks where checked_at > now() - make_interval(secs => ?)) as recent',
        [intervalSeconds],
      );
      if (recent?.recent) return undefined;
      // The check reads every ledger entry: on a large ledger it may take longer than the 15 s a
      // request's statement may (the pool's statement_timeout), which would fail it every time.
      await tem.execute(`set local statement_timeout = '10min'`);
      const started = performance.now();
      const result = await checkLedger(tem);
      await tem.execute(
        'insert into ledger_checks (ok, mismatches, checked_wallets, checked_developers, duration_ms) values (?, ?, ?, ?, ?)',
        [result.ok, result.mismatches.length, result.checkedWallets, result.checkedDevelopers, Math.round(performance.now() - started)],
      );
      return result;
    },
    // One snapshot for the check and its record (the check's own isolation, from the outside).
    { isolationLevel: IsolationLevel.REPEATABLE_READ },
  );
}

/**
 * The scheduled ledger check of one instance (LEDGER_CHECK_INTERVAL_SECONDS; 0 turns it off):
 * looks every minute (or every interval, when shorter) whether a check is due and runs it then.
 * A mismatch is logged as an error with the count (the ids are for `ledgerCheck`); /metrics
 * reports the latest result as `ledger_check_mismatches`.
 */
export class LedgerCheckSchedule {
  private readonly loop: PollLoop;

  constructor(
    private readonly forkEm: () => EntityManager,
    private readonly intervalSeconds: number,
    private readonly log: Logger,
  ) {
    this.loop = new PollLoop(
      async () => {
        await this.runOnce();
        return false;
      },
      Math.min(Math.max(intervalSeconds, 1) * 1000, TICK_MAX_MS),
      () => undefined, // runOnce logs its own failures
    );
  }

  start(): void {
    if (this.intervalSeconds > 0) this.loop.start({ now: false });
  }

  /** One look: runs the check when it is due here; failures are logged and retried at the next tick. */
  async runOnce(): Promise<LedgerCheck | undefined> {
    try {
      const result = await runScheduledLedgerCheck(this.forkEm(), this.intervalSeconds);
      if (result && !result.ok) {
        this.log.error({ mismatches: result.mismatches.length, checkedWallets: result.checkedWallets }, 'ledger check found balances that differ from their ledger');
      } else if (result) {
        this.log.info({ checkedWallets: result.checkedWallets, checkedDevelopers: result.checkedDevelopers, checkedPayouts: result.checkedPayouts }, 'ledger check passed');
      }
      return result;
    } catch (err) {
      this.log.warn({ err: { message: (err as Error).message } }, 'ledger check failed; retrying later');
      return undefined;
    }
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
