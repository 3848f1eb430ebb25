import { randomUUID } from 'node:crypto';
import { sql, type Queryable } from '../db/sql.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import { merchantCreditSql } from './merchant-credit.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import type { MerchantSide, Movement } from '../ledger/ledger.js';
import { parseDecimal } from '../money.js';
import { requireUuid } from '../uuid.js';
import { parseIsoTime } from '../iso-time.js';
import { BALANCE_TRANSACTION_COLUMNS, BALANCE_TRANSACTION_TYPES, type BalanceTransactionRow, type CurrencyBalance, type FeeSchedule } from './settlement.model.js';

/*
 * The merchant's side of the money (SPEC §16, "Settlement"): the fee the wallet company takes,
 * the developer's available balance, and the balance transactions that itemize every change of
 * it. The ledger (src/ledger/ledger.ts) calls `creditPayment` / `debitRefund` inside the
 * transaction that moves a wallet's money; payouts are src/settlement/payout.service.ts.
 *
 * Every writer of a balance transaction takes the developer's `developer_balances` row first and
 * dates the entry by the clock after that lock (`clock_timestamp()` in the update's RETURNING),
 * so an entry dated before a cut-off has committed once a payout run has waited for that row
 * (payout.service.ts): a payout's period, once made, never gains an entry.
 */

/** Largest and default page of the balance transactions list. */
export const MAX_LIST_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 20;

/** The filters of GET /balance-transactions; every one optional. */
export interface BalanceTransactionFilter {
  type?: string | null | undefined;
  payoutId?: string | null | undefined;
  /** ISO 8601: created at or after. */
  createdFrom?: string | null | undefined;
  /** ISO 8601: created before. */
  createdTo?: string | null | undefined;
}

/** One page, newest first (the shape of every developer list). */
export interface ListPage<T> {
  data: T[];
  hasMore: boolean;
  /** Pass as `after` for the next page; null on the last one. */
  nextAfter: string | null;
}

/**
 * The merchant's side of a capture, on its own (an approval's rides in the ledger's movement
 * statement): src/settlement/merchant-credit.ts. Values: 1 entry id, 2 developer, 3 transaction,
 * 4 gross, 5 currency, 6 default percent, 7 default fixed.
 */
const CREDIT_PAYMENT = sql<{ written: number }>(
  'settlement_credit_payment',
  `with ${merchantCreditSql({
    entryId: '$1::uuid',
    developer: '$2::uuid',
    transaction: '$3::uuid',
    gross: '$4::numeric',
    currency: '$5::text',
    percent: '$6::numeric',
    fixed: '$7::numeric',
  })}
   select (select count(*) from bt)::int as written`,
);

/**
 * A refund's merchant side: the available balance debited only if it covers the refund (the row
 * lock first), the `refund` balance transaction (amount and net negative, no fee) dated after the
 * lock, and the developer's ledger entry; `debited` 0 when the balance does not cover it.
 * Values: 1 entry id, 2 developer, 3 transaction, 4 amount, 5 currency, 6 refund.
 */
const DEBIT_REFUND = sql<{ debited: number; written: number }>(
  'settlement_debit_refund',
  `with bal as (
       update developer_balances set balance = balance - $4::numeric
        where developer_id = $2::uuid and currency = $5 and balance >= $4::numeric
       returning clock_timestamp() as at),
     bt as (
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, transaction_id, refund_id, payment_request_id, reference, created_at)
       select $1::uuid, $2::uuid, 'refund', -$4::numeric, 0, -$4::numeric, $5::text, t.id, $6::uuid, t.payment_request_id, pr.reference, bal.at
         from bal, transactions t join payment_requests pr on pr.id = t.payment_request_id
        where t.id = $3::uuid
       returning 1),
     le as (
       insert into ledger_entries (kind, account, transaction_id, refund_id, developer_id, amount, currency)
       select 'REFUND', 'DEVELOPER', $3::uuid, $6::uuid, $2::uuid, -$4::numeric, $5::text from bal
       returning 1)
select (select count(*) from bal)::int as debited, (select count(*) from bt)::int as written`,
);

/**
 * An operator's correction: the balance change `bal` (see `adjust`), the `adjustment` balance
 * transaction dated after its lock, and both ledger entries (the other side is the wallet
 * company's account). Values: 1 entry id, 2 developer, 3 currency, 4 signed amount, 5 note.
 */
const adjustmentSql = (bal: string): string => `with bal as (${bal} returning clock_timestamp() as at),
     bt as (
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, reference, created_at)
       select $1::uuid, $2::uuid, 'adjustment', $4::numeric, 0, $4::numeric, $3::text, $5::text, bal.at from bal
       returning id),
     le as (
       insert into ledger_entries (kind, account, developer_id, amount, currency)
       select 'ADJUSTMENT', 'DEVELOPER', $2::uuid, $4::numeric, $3::text from bal
       union all select 'ADJUSTMENT', 'COMPANY', null, -$4::numeric, $3::text from bal
       returning 1)
select (select count(*) from bt)::int as written`;

const CURRENCY = /^[A-Z]{3}$/;

/** Text of 1..max characters after trimming, no control characters (an operator's note, a bank reference). */
export function requireNote(value: unknown, field: string, max: number): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text.length === 0 || [...text].length > max) throw badInput(`${field} must be 1-${max} characters`);
  // eslint-disable-next-line no-control-regex -- exactly what is refused here
  if (/[\u0000-\u001F\u007F-\u009F\u200E\u200F\u202A-\u202E\u2066-\u2069]/.test(text)) throw badInput(`${field} must not contain control characters`);
  return text;
}

/** Fees, balances and balance transactions (see the file's comment). */
export class SettlementService implements MerchantSide {
  constructor(private readonly config: Pick<Config, 'defaultFeePercent' | 'defaultFeeFixed' | 'maxAmount'>) {}

  creditTerms(): [string, string, string] {
    return [randomUUID(), this.config.defaultFeePercent.toFixed(2), this.config.defaultFeeFixed.toFixed(2)];
  }

  async creditPayment(tx: Tx, m: Movement): Promise<void> {
    const [entryId, percent, fixed] = this.creditTerms();
    const [row] = await tx.run(CREDIT_PAYMENT, [entryId, m.developerId, m.transactionId, m.amount, m.currency, percent, fixed]);
    if (row?.written !== 1) throw new Error(`no balance transaction written for transaction ${m.transactionId}`);
  }

  async debitRefund(tx: Tx, m: Movement & { refundId: string }): Promise<void> {
    const [row] = await tx.run(DEBIT_REFUND, [randomUUID(), m.developerId, m.transactionId, m.amount, m.currency, m.refundId]);
    if (row?.debited !== 1) throw new AppError('INSUFFICIENT_FUNDS', 'Developer settlement balance does not cover the refund');
    if (row.written !== 1) throw new Error(`no balance transaction written for refund ${m.refundId}`);
  }

  /** The schedule in force from a developer's `fee_schedules` row, or the defaults when it has none. */
  feeScheduleOf(row: { percent: string; fixed: string; updatedAt: Date } | null | undefined): FeeSchedule {
    return row
      ? { percent: row.percent, fixed: row.fixed, isDefault: false, updatedAt: row.updatedAt }
      : { percent: this.config.defaultFeePercent.toFixed(2), fixed: this.config.defaultFeeFixed.toFixed(2), isDefault: true, updatedAt: null };
  }

  /**
   * An operator sets a developer's fee: `percent` 0 to 10 and `fixed` at least 0, each with at
   * most 2 decimals; it applies to payments from now on (a payment's fee is kept with its balance
   * transaction). NOT_FOUND for an unknown developer.
   */
  async setFeeSchedule(q: Queryable, developerId: string, percent: number, fixed: number): Promise<FeeSchedule> {
    requireUuid(developerId, 'developerId');
    const p = parseDecimal(percent, 'percent', 0, 10);
    const f = parseDecimal(fixed, 'fixed', 0, this.config.maxAmount);
    const [row] = await q.query<{ percent: string; fixed: string; updatedAt: Date }>(
      `insert into fee_schedules (developer_id, percent, fixed, updated_at)
       select d.id, $1::numeric, $2::numeric, now() from developers d where d.id = $3
       on conflict (developer_id) do update set percent = excluded.percent, fixed = excluded.fixed, updated_at = excluded.updated_at
       returning percent::text as percent, fixed::text as fixed, updated_at as "updatedAt"`,
      [p, f, developerId],
    );
    if (!row) throw notFound('Developer not found');
    return this.feeScheduleOf({ ...row, updatedAt: new Date(row.updatedAt) });
  }

  /** The developer's available balance and what its PENDING payouts hold, per currency. */
  async balance(q: Queryable, developerId: string): Promise<CurrencyBalance[]> {
    return q.query<CurrencyBalance>(
      `select currency, balance::text as available, in_payouts::text as "inPayouts"
         from developer_balances where developer_id = $1 order by currency`,
      [developerId],
    );
  }

  /**
   * The developer's balance transactions, newest first, filtered by `type`, the payout that holds
   * them (`payoutId`: its items and its own `payout` entry; NOT_FOUND when it is not the
   * developer's) and a creation range, a page of `limit` (1-100, default 20) after the entry
   * `after` (the previous page's `nextAfter`; compared in the database, to the microsecond).
   */
  async search(
    q: Queryable,
    developerId: string,
    filter: BalanceTransactionFilter,
    after: string | null | undefined,
    limit: number | null | undefined,
  ): Promise<ListPage<BalanceTransactionRow>> {
    const n = limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(n) || n < 1 || n > MAX_LIST_LIMIT) throw badInput(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`);
    const type = filter.type ?? null;
    if (type !== null && !(BALANCE_TRANSACTION_TYPES as readonly string[]).includes(type)) {
      throw badInput(`type must be one of ${BALANCE_TRANSACTION_TYPES.join(', ')}`);
    }
    const payoutId = filter.payoutId == null ? null : requireUuid(filter.payoutId, 'payoutId');
    const from = filter.createdFrom == null ? null : parseIsoTime(filter.createdFrom, 'createdFrom');
    const to = filter.createdTo == null ? null : parseIsoTime(filter.createdTo, 'createdTo');
    const cursor = after == null ? null : requireUuid(after, 'after');
    if (payoutId) {
      const [known] = await q.query('select 1 from payouts where id = $1 and developer_id = $2', [payoutId, developerId]);
      if (!known) throw notFound('payoutId names no payout of yours');
    }
    const where: string[] = [];
    const values: unknown[] = [];
    /** A condition whose `?` placeholders become the next $n. */
    const and = (condition: string, ...v: unknown[]): void => {
      where.push(condition.replace(/\?/g, () => `$${values.push(v.shift()) }`));
    };
    and('bt.developer_id = ?', developerId);
    if (type !== null) and('bt.type = ?', type);
    if (payoutId) {
      // Its items (the developer's entries in its period, its own payout entry excepted) and its own entry.
      and(
        `exists (select 1 from payouts p where p.id = ? and p.developer_id = bt.developer_id
                  and ((bt.type <> 'payout' and bt.currency = p.currency and bt.created_at >= p.period_start and bt.created_at < p.period_end)
                       or (bt.type = 'payout' and bt.payout_id = p.id)))`,
        payoutId,
      );
    }
    if (from) and('bt.created_at >= ?::timestamptz', from);
    if (to) and('bt.created_at < ?::timestamptz', to);
    if (cursor) {
      and('(bt.created_at, bt.id) < (select c.created_at, c.id from balance_transactions c where c.id = ? and c.developer_id = ?)', cursor, developerId);
    }
    const rows = await q.query<BalanceTransactionRow>(
      `select ${BALANCE_TRANSACTION_COLUMNS} from balance_transactions bt
        where ${where.join(' and ')} order by bt.created_at desc, bt.id desc limit $${values.length + 1}`,
      [...values, n + 1],
    );
    if (cursor && rows.length === 0) {
      const [known] = await q.query('select 1 from balance_transactions where id = $1 and developer_id = $2', [cursor, developerId]);
      if (!known) throw notFound('after names no balance transaction of yours');
    }
    const data = rows.slice(0, n);
    const hasMore = rows.length > n;
    return { data, hasMore, nextAfter: hasMore ? data.at(-1)!.id : null };
  }

  /**
   * An operator's correction of a developer's available balance in a currency (an `adjustment`
   * balance transaction, `reason` shown as its `reference`): a credit comes from the wallet
   * company's account, a debit goes to it, and a debit never takes the balance below zero
   * (INSUFFICIENT_FUNDS). NOT_FOUND for an unknown developer.
   */
  async adjust(work: UnitOfWork, developerId: string, currency: string, amount: number, reason: string): Promise<BalanceTransactionRow> {
    requireUuid(developerId, 'developerId');
    if (typeof currency !== 'string' || !CURRENCY.test(currency)) throw badInput('currency must be an ISO 4217 code such as ETB');
    if (amount === 0) throw badInput('amount must not be 0');
    const signed = parseDecimal(amount, 'amount', -this.config.maxAmount, this.config.maxAmount);
    const note = requireNote(reason, 'reason', 500);
    return work.transaction(async (tx) => {
      const [developer] = await tx.query('select 1 from developers where id = $1', [developerId]);
      if (!developer) throw notFound('Developer not found');
      const credit = amount > 0;
      // A credit may open the currency's balance; a debit must find it and leave it at 0 or more.
      const bal = credit
        ? `insert into developer_balances as b (developer_id, currency, balance) values ($2::uuid, $3::text, $4::numeric)
           on conflict (developer_id, currency) do update set balance = b.balance + excluded.balance`
        : `update developer_balances set balance = balance + $4::numeric
            where developer_id = $2::uuid and currency = $3::text and balance + $4::numeric >= 0`;
      const id = randomUUID();
      const [row] = await tx.query<{ written: number }>(adjustmentSql(bal), [id, developerId, currency, signed, note]);
      if (row?.written !== 1) throw new AppError('INSUFFICIENT_FUNDS', `The developer's available ${currency} balance does not cover ${signed}`);
      const [written] = await tx.query<BalanceTransactionRow>(`select ${BALANCE_TRANSACTION_COLUMNS} from balance_transactions bt where bt.id = $1`, [id]);
      return written!;
    });
  }
}
