import type { EntityManager } from '@mikro-orm/postgresql';
import type { FilterQuery } from '@mikro-orm/core';
import { sql, type Queryable, type Statement } from '../db/sql.js';
import type { Tx, UnitOfWork, UnitsOfWork } from '../db/unit-of-work.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { parseIsoTime } from '../iso-time.js';
import { paginate, type Page } from '../db/pagination.js';
import { Payout, PayoutStatus } from './payout.entity.js';
import { payoutColumns, payoutFromRow } from './payout.read.js';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, requireNote, type ListPage } from './settlement.service.js';
import { writePayoutEvent } from './payout-events.js';
import { csvLine, REPORT_HEADER } from './report.js';

/*
 * Payouts (SPEC §16): a developer's available balance in a currency, as the balance transactions
 * of a period add up, leaves `available` for `inPayouts` (a `payout` balance transaction), then an
 * operator marks it PAID (the money left for the bank) or FAILED (a `payout_reversal` brings it
 * back to available).
 *
 * A payout holds the entries of its developer and currency made in [periodStart, periodEnd),
 * `periodEnd` being the cut-off and `periodStart` the previous payout's cut-off (or the first
 * entry's time): periods are contiguous and never overlap, so which payout holds an entry follows
 * from its time, and making a payout writes a handful of rows however many entries it holds.
 * That an entry dated before a cut-off can no longer appear once the payout is made is the
 * writers' rule (src/settlement/settlement.service.ts: every entry is dated after its writer took
 * the developer's balance row) plus the barrier here: before a payout is made, a statement waits
 * for that row, so every writer that dated an entry before the cut-off has finished.
 *
 * "Never twice" is the database's: `payout_accounts.paid_out_until` moves only forward (a
 * conditional update under the row's lock) and (developer, currency, periodEnd) is unique. So any
 * number of instances may run the schedule at once; each payout is one transaction.
 */

/** Filters of a developer's payout list (GET /payouts). */
export interface PayoutSearch {
  status?: string | null | undefined;
  /** ISO 8601: made at or after. */
  createdFrom?: string | null | undefined;
  /** ISO 8601: made before. */
  createdTo?: string | null | undefined;
}

/** What one run at a cut-off did. */
export interface PayoutRunResult {
  made: number;
  /** (developer, currency) pairs whose payout failed (logged; the next run tries again). */
  failed: number;
}

const STATUSES = Object.values(PayoutStatus) as string[];

/** Pairs looked at per query of a run (a run's memory does not grow with the number of developers). */
const CANDIDATE_BATCH = 200;
/** Report lines read per query. */
export const REPORT_PAGE = 2000;

/**
 * The (developer, currency) pairs that may have a payout at cut-off $2: available at least the
 * minimum ($1), not yet paid out through $2, with an entry in the open period before $2; after the
 * pair ($3, $4), in order.
 */
const CANDIDATES = sql<{ developerId: string; currency: string }>(
  'payout_candidates',
  `select b.developer_id as "developerId", b.currency
  from developer_balances b
  left join payout_accounts pa on pa.developer_id = b.developer_id and pa.currency = b.currency
 where b.balance >= $1::numeric
   and (pa.paid_out_until is null or pa.paid_out_until < $2::timestamptz)
   and exists (select 1 from balance_transactions t
                where t.developer_id = b.developer_id and t.currency = b.currency and t.type <> 'payout'
                  and t.created_at >= coalesce(pa.paid_out_until, '-infinity') and t.created_at < $3::timestamptz)
   and (b.developer_id, b.currency) > ($4::uuid, $5::bpchar)
 order by b.developer_id, b.currency
 limit $6`,
);

/**
 * The payout itself, in one statement: available → in payouts (only while available covers it;
 * the balance row's lock first), the payout dated after that lock, its `payout` balance
 * transaction, both ledger entries (DEVELOPER → DEVELOPER_PAYOUTS), and the account's cut-off moved
 * forward (never back, never to the same one). No row when available no longer covers it.
 * Values: 1 payout id, 2 its entry's id, 3 developer, 4 currency, 5 amount, 6 item count,
 * 7 period start, 8 the cut-off.
 */
const MAKE_PAYOUT = sql<Record<string, unknown> & { entriesWritten: number; ledgerWritten: number; moved: number }>(
  'payout_make',
  `with bal as (
       update developer_balances set balance = balance - $5::numeric, in_payouts = in_payouts + $5::numeric
        where developer_id = $3::uuid and currency = $4::bpchar and balance >= $5::numeric
       returning clock_timestamp() as at),
     p as (
       insert into payouts (id, developer_id, currency, status, amount, item_count, period_start, period_end, created_at)
       select $1::uuid, $3::uuid, $4::bpchar, 'PENDING', $5::numeric, $6::int, $7::timestamptz, $8::timestamptz, bal.at from bal
       returning *),
     bt as (
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, payout_id, created_at)
       select $2::uuid, p.developer_id, 'payout', -p.amount, 0, -p.amount, p.currency, p.id, p.created_at from p
       returning 1),
     le as (
       insert into ledger_entries (kind, account, developer_id, amount, currency, payout_id)
       select 'PAYOUT', 'DEVELOPER', p.developer_id, -p.amount, p.currency, p.id from p
       union all select 'PAYOUT', 'DEVELOPER_PAYOUTS', p.developer_id, p.amount, p.currency, p.id from p
       returning 1),
     moved as (
       update payout_accounts set paid_out_until = $8::timestamptz
        where developer_id = $3::uuid and currency = $4::bpchar and (paid_out_until is null or paid_out_until < $8::timestamptz)
          and exists (select 1 from p)
       returning 1)
select ${payoutColumns('p')}, (select count(*) from bt)::int as "entriesWritten", (select count(*) from le)::int as "ledgerWritten",
       (select count(*) from moved)::int as moved
  from p`,
);

/** PENDING → PAID: the money leaves the developer's payouts account for its bank (the ledger's boundary, as a top-up is). */
const MARK_PAID = sql<Record<string, unknown> & { moved: number }>(
  'payout_mark_paid',
  `with p as (
       update payouts set status = 'PAID', paid_at = now(), bank_reference = $1::text where id = $2::uuid and status = 'PENDING'
       returning *),
     bal as (
       update developer_balances b set in_payouts = b.in_payouts - p.amount from p
        where b.developer_id = p.developer_id and b.currency = p.currency
       returning 1),
     le as (
       insert into ledger_entries (kind, account, developer_id, amount, currency, payout_id)
       select 'PAYOUT_PAID', 'DEVELOPER_PAYOUTS', p.developer_id, -p.amount, p.currency, p.id from p
       returning 1)
select ${payoutColumns('p')}, (select count(*) from bal)::int as moved from p`,
);

/** PENDING → FAILED: its amount back to available as a `payout_reversal` (dated after the balance row's lock). */
const MARK_FAILED = sql<Record<string, unknown> & { moved: number }>(
  'payout_mark_failed',
  `with p as (
       update payouts set status = 'FAILED', failed_at = now(), failure_reason = $1::text where id = $2::uuid and status = 'PENDING'
       returning *),
     bal as (
       update developer_balances b set in_payouts = b.in_payouts - p.amount, balance = b.balance + p.amount from p
        where b.developer_id = p.developer_id and b.currency = p.currency
       returning clock_timestamp() as at),
     bt as (
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, reference, payout_id, created_at)
       select $3::uuid, p.developer_id, 'payout_reversal', p.amount, 0, p.amount, p.currency, p.id::text, p.id, bal.at from p, bal
       returning 1),
     le as (
       insert into ledger_entries (kind, account, developer_id, amount, currency, payout_id)
       select 'PAYOUT_REVERSAL', 'DEVELOPER_PAYOUTS', p.developer_id, -p.amount, p.currency, p.id from p
       union all select 'PAYOUT_REVERSAL', 'DEVELOPER', p.developer_id, p.amount, p.currency, p.id from p
       returning 1)
select ${payoutColumns('p')}, (select count(*) from bt)::int as moved from p`,
);

/**
 * One page of a payout's report: its items (the developer's entries of its currency in
 * [periodStart, periodEnd), its own payout entry excepted), oldest first, after the cursor (the
 * previous page's last item: its time to the microsecond, as text, and id) when there is one. The
 * bounds are constants (read once): the planner then walks balance_transactions_period_idx in
 * order from the cursor and stops at the page's end, whatever the payout's size.
 */
const reportPageSql = (cursor: boolean): string => `select bt.id, bt.type, bt.created_at as "createdAt", bt.created_at::text as "cursorAt",
       bt.transaction_id as "transactionId", bt.payment_request_id as "paymentRequestId", bt.reference, bt.currency,
       bt.amount::text as amount, bt.fee::text as fee, bt.net::text as net, pr.consent_receipt as "consentReceipt"
  from balance_transactions bt
  left join payment_requests pr on pr.id = bt.payment_request_id
 where bt.developer_id = $1::uuid and bt.currency = $2::bpchar and bt.type <> 'payout'
   and bt.created_at >= $3::timestamptz and bt.created_at < $4::timestamptz
   ${cursor ? 'and (bt.created_at, bt.id) > ($6::timestamptz, $7::uuid)' : ''}
 order by bt.created_at, bt.id
 limit $5`;
type ReportRow = Parameters<typeof csvLine>[0] & { cursorAt: string };
const REPORT_FIRST_PAGE: Statement<ReportRow> = sql('payout_report_first_page', reportPageSql(false));
const REPORT_NEXT_PAGE: Statement<ReportRow> = sql('payout_report_next_page', reportPageSql(true));

/** Payouts: made by a run (the schedule or an operator's `runPayouts`), read by their developer, settled by an operator. */
export class PayoutService {
  constructor(
    /** Each payout is a unit of work (a transaction) of its own. */
    private readonly works: UnitsOfWork,
    private readonly settings: { payoutMinimum: number },
    private readonly log: Logger,
  ) {}

  /**
   * Makes the payouts due at `cutoff` (an instant, by the database's clock already past): one per
   * developer and currency whose entries of the open period before it add up to at least
   * PAYOUT_MINIMUM and to no more than its available balance (after a refund made since the
   * cut-off, the payout waits for the next one). Each in a transaction of its own; a pair that
   * fails is logged and counted, and the others go on.
   */
  async run(cutoff: string): Promise<PayoutRunResult> {
    const minimum = this.settings.payoutMinimum.toFixed(2);
    const result: PayoutRunResult = { made: 0, failed: 0 };
    let after: { developerId: string; currency: string } = { developerId: '00000000-0000-0000-0000-000000000000', currency: '' };
    for (;;) {
      const pairs = await this.works.begin().run(CANDIDATES, [minimum, cutoff, cutoff, after.developerId, after.currency, CANDIDATE_BATCH]);
      for (const pair of pairs) {
        try {
          if (await this.makePayout(pair.developerId, pair.currency, cutoff)) result.made++;
        } catch (err) {
          result.failed++;
          this.log.error(
            { err: { message: (err as Error).message, code: (err as { code?: string }).code }, developerId: pair.developerId, currency: pair.currency, cutoff },
            'payout failed; the next run tries again',
          );
        }
      }
      if (pairs.length < CANDIDATE_BATCH) return result;
      after = pairs.at(-1)!;
    }
  }

  /** `runPayouts`: the payouts due now, with now (the database's clock) as the cut-off. Returns how many were made. */
  async runNow(): Promise<number> {
    const [row] = await this.works.begin().query<{ now: string }>('select clock_timestamp()::text as now');
    const { made, failed } = await this.run(row!.now);
    if (failed > 0) throw new AppError('SERVICE_UNAVAILABLE', `${made} payouts made; ${failed} could not be made now and will be tried at the next run`);
    return made;
  }

  /**
   * The payout of one developer and currency at `cutoff`, or null when none is due (paid out
   * through it already, nothing in the period, under the minimum, or more than available). First
   * the barrier (its own statement, committed at once: a payment of this developer waits at most
   * for that statement), then one transaction: the account row locked, the period summed, the
   * payout written (MAKE_PAYOUT) with its event.
   */
  async makePayout(developerId: string, currency: string, cutoff: string, minimum = this.settings.payoutMinimum): Promise<Payout | null> {
    const [barrier] = await this.works.begin().query<{ due: boolean }>(
      `select clock_timestamp() >= $1::timestamptz as due from developer_balances where developer_id = $2 and currency = $3 for share`,
      [cutoff, developerId, currency],
    );
    if (!barrier?.due) return null;
    return this.works.begin().transaction(async (tx) => {
      // Summing a large period (1,000,000 entries: bench/payouts.mjs) may take longer than a request's statement may.
      await tx.query(`set local statement_timeout = '10min'`);
      await tx.query('insert into payout_accounts (developer_id, currency) values ($1, $2) on conflict do nothing', [developerId, currency]);
      const [account] = await tx.query<{ paidOutUntil: string | null; done: boolean }>(
        `select paid_out_until::text as "paidOutUntil", coalesce(paid_out_until >= $1::timestamptz, false) as done
           from payout_accounts where developer_id = $2 and currency = $3 for update`,
        [cutoff, developerId, currency],
      );
      if (!account || account.done) return null;
      const [period] = await tx.query<{ amount: string; count: number; first: string | null; payable: boolean }>(
        `select coalesce(sum(net), 0)::text as amount, count(*)::int as count, min(created_at)::text as first,
                coalesce(sum(net), 0) >= $1::numeric
                  and coalesce(sum(net), 0) <= (select balance from developer_balances where developer_id = $2 and currency = $3) as payable
           from balance_transactions
          where developer_id = $2 and currency = $3 and type <> 'payout'
            and created_at >= coalesce($4::timestamptz, '-infinity') and created_at < $5::timestamptz`,
        [minimum.toFixed(2), developerId, currency, account.paidOutUntil, cutoff],
      );
      if (!period || period.count === 0 || !period.payable) return null;
      const id = randomUUID();
      const [row] = await tx.run(MAKE_PAYOUT, [id, randomUUID(), developerId, currency, period.amount, period.count, account.paidOutUntil ?? period.first, cutoff]);
      if (!row) return null; // a refund since the sum left less available: the next run pays it
      if (row.entriesWritten !== 1 || row.ledgerWritten !== 2 || row.moved !== 1) throw new Error(`payout ${id} was not written whole`);
      const payout = payoutFromRow(row);
      await writePayoutEvent(tx, 'payout.created', payout);
      return payout;
    });
  }

  /**
   * Development only (`wallet-gateway trigger payout.*`): the developer's payout now, of what is
   * available in its first currency that has any (whatever PAYOUT_MINIMUM), then marked PAID or
   * FAILED when `outcome` says so, each step with its event as in production. NOT_FOUND in
   * production; BAD_USER_INPUT when nothing is available.
   */
  async sandboxPayout(work: UnitOfWork, appEnv: string, developerId: string, outcome: PayoutStatus): Promise<Payout> {
    if (appEnv === 'production') throw notFound('Sandbox payouts exist only in the development environment');
    const [row] = await work.query<{ currency: string; now: string }>(
      `select currency, clock_timestamp()::text as now from developer_balances where developer_id = $1 and balance > 0 order by currency limit 1`,
      [developerId],
    );
    const made = row ? await this.makePayout(developerId, row.currency, row.now, 0.01) : null;
    if (!made) throw badInput('Nothing is available to pay out: be paid first (e.g. a payment request to test_approve)');
    if (outcome === PayoutStatus.PAID) return this.markPaid(work, made.id, 'SANDBOX');
    if (outcome === PayoutStatus.FAILED) return this.markFailed(work, made.id, 'Sandbox: the bank returned the transfer');
    return made;
  }

  /** An operator marks a PENDING payout PAID with the bank's reference (NOT_FOUND; CONFLICT when it is not PENDING). */
  async markPaid(work: UnitOfWork, id: string, bankReference: string): Promise<Payout> {
    requireUuid(id);
    const reference = requireNote(bankReference, 'bankReference', 200);
    return this.settle(work, id, 'payout.paid', MARK_PAID, [reference, id]);
  }

  /** An operator marks a PENDING payout FAILED: its amount returns to available as a `payout_reversal` (NOT_FOUND; CONFLICT when it is not PENDING). */
  async markFailed(work: UnitOfWork, id: string, reason: string): Promise<Payout> {
    requireUuid(id);
    const why = requireNote(reason, 'reason', 500);
    return this.settle(work, id, 'payout.failed', MARK_FAILED, [why, id, randomUUID()]);
  }

  private settle(
    work: UnitOfWork,
    id: string,
    event: 'payout.paid' | 'payout.failed',
    statement: Statement<Record<string, unknown> & { moved: number }>,
    values: unknown[],
  ): Promise<Payout> {
    return work.transaction(async (tx: Tx) => {
      const [row] = await tx.run(statement, values);
      if (!row) {
        const [found] = await tx.query<{ status: string }>('select status from payouts where id = $1', [id]);
        if (!found) throw notFound('Payout not found');
        throw new AppError('CONFLICT', `Only a PENDING payout can be marked paid or failed; this one is ${found.status}`);
      }
      if (row.moved !== 1) throw new Error(`payout ${id} was not settled whole`);
      const payout = payoutFromRow(row);
      await writePayoutEvent(tx, event, payout);
      return payout;
    });
  }

  /** A payout of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(q: Queryable, developerId: string, id: string): Promise<Payout> {
    requireUuid(id);
    const [row] = await q.query(`select ${payoutColumns('p')} from payouts p where p.id = $1 and p.developer_id = $2`, [id, developerId]);
    if (!row) throw notFound('Payout not found');
    return payoutFromRow(row);
  }

  /**
   * A developer's payouts, newest first, filtered by status and a creation range, a page of
   * `limit` (1-100, default 20) after the payout `after` (the previous page's `nextAfter`).
   */
  async search(q: Queryable, developerId: string, filter: PayoutSearch, after: string | null | undefined, limit: number | null | undefined): Promise<ListPage<Payout>> {
    const n = limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) throw badInput(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    const status = filter.status ?? null;
    if (status !== null && !STATUSES.includes(status)) throw badInput(`status must be one of ${STATUSES.join(', ')}`);
    const from = filter.createdFrom == null ? null : parseIsoTime(filter.createdFrom, 'createdFrom');
    const to = filter.createdTo == null ? null : parseIsoTime(filter.createdTo, 'createdTo');
    const cursor = after == null ? null : requireUuid(after, 'after');
    const where: string[] = [];
    const values: unknown[] = [];
    /** A condition whose `?` placeholders become the next $n. */
    const and = (condition: string, ...v: unknown[]): void => {
      where.push(condition.replace(/\?/g, () => `$${values.push(v.shift())}`));
    };
    and('p.developer_id = ?', developerId);
    if (status !== null) and('p.status = ?', status);
    if (from) and('p.created_at >= ?::timestamptz', from);
    if (to) and('p.created_at < ?::timestamptz', to);
    if (cursor) and('(p.created_at, p.id) < (select c.created_at, c.id from payouts c where c.id = ? and c.developer_id = ?)', cursor, developerId);
    const rows = await q.query(
      `select ${payoutColumns('p')} from payouts p where ${where.join(' and ')} order by p.created_at desc, p.id desc limit $${values.length + 1}`,
      [...values, n + 1],
    );
    if (cursor && rows.length === 0) {
      const [known] = await q.query('select 1 from payouts where id = $1 and developer_id = $2', [cursor, developerId]);
      if (!known) throw notFound('after names no payout of yours');
    }
    const data = rows.slice(0, n).map(payoutFromRow);
    const hasMore = rows.length > n;
    return { data, hasMore, nextAfter: hasMore ? data.at(-1)!.id : null };
  }

  /** Payouts newest first (internal tools, the ORM's read), filtered by status and developer. */
  list(em: EntityManager, filter: { status?: PayoutStatus | null | undefined; developerId?: string | null | undefined }, first?: number, after?: string): Promise<Page<Payout>> {
    const where: FilterQuery<Payout> = {};
    if (filter.status) where.status = filter.status;
    if (filter.developerId) where.developerId = requireUuid(filter.developerId, 'developerId');
    return paginate(em, Payout, where, first, after);
  }

  /**
   * The payout's report as CSV text (REPORT_HEADER, then one line per item, oldest first, RFC
   * 4180), read a page at a time: memory stays the same whatever the payout's size, and no
   * connection is held while the reader is slow. NOT_FOUND (before anything is produced) when the
   * payout is not the developer's. The items of a payout never change, so pages read at
   * different moments make one consistent report.
   */
  async reportLines(q: Queryable, developerId: string, id: string, pageSize = REPORT_PAGE): Promise<AsyncGenerator<string>> {
    requireUuid(id);
    const [payout] = await q.query<{ currency: string; start: string; end: string }>(
      'select currency, period_start::text as start, period_end::text as "end" from payouts where id = $1 and developer_id = $2',
      [id, developerId],
    );
    if (!payout) throw notFound('Payout not found');
    const period = [developerId, payout.currency, payout.start, payout.end, pageSize];
    return (async function* lines(): AsyncGenerator<string> {
      yield `${REPORT_HEADER}\r\n`;
      let cursor: { at: string; id: string } | null = null;
      for (;;) {
        const rows: ReportRow[] = cursor ? await q.run(REPORT_NEXT_PAGE, [...period, cursor.at, cursor.id]) : await q.run(REPORT_FIRST_PAGE, period);
        if (rows.length > 0) yield rows.map(csvLine).join('');
        if (rows.length < pageSize) return;
        const last = rows.at(-1)!;
        cursor = { at: last.cursorAt, id: last.id };
      }
    })();
  }
}
