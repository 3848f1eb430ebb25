/*
 * The settlement room's records as its services return them (money as exact decimal strings, as
 * NUMERIC reads), and the one column list every read of a balance transaction uses.
 */

/** The kinds of balance transaction (SPEC §16): what changed the developer's available balance. */
export const BALANCE_TRANSACTION_TYPES = ['payment', 'refund', 'payout', 'payout_reversal', 'adjustment'] as const;
export type BalanceTransactionType = (typeof BALANCE_TRANSACTION_TYPES)[number];

/** One change of a developer's available balance. */
export interface BalanceTransactionRow {
  id: string;
  type: BalanceTransactionType;
  /** Signed: the gross of a payment; negative for a refund and a payout. */
  amount: string;
  fee: string;
  /** amount - fee: what the available balance changed by. */
  net: string;
  currency: string;
  transactionId: string | null;
  paymentRequestId: string | null;
  /** The payment request's reference (payment, refund), the failed payout's id (payout_reversal) or the operator's note (adjustment). */
  reference: string | null;
  /** The payout that holds it (one of its items); for a `payout` entry, the payout it made. */
  payoutId: string | null;
  createdAt: Date;
}

/** A developer's money in one currency. */
export interface CurrencyBalance {
  currency: string;
  /** What can be paid out (Σ net of its balance transactions). */
  available: string;
  /** What PENDING payouts hold. */
  inPayouts: string;
}

/** A developer's fee: percent of the gross plus a fixed amount, from its own schedule or the defaults. */
export interface FeeSchedule {
  percent: string;
  fixed: string;
  /** True when the developer has no schedule of its own (DEFAULT_FEE_PERCENT and DEFAULT_FEE_FIXED apply). */
  isDefault: boolean;
  updatedAt: Date | null;
}

/**
 * The columns of a balance transaction `bt` as BalanceTransactionRow: the payout that holds an
 * entry is the one of its developer and currency whose period [period_start, period_end) contains
 * its time (periods never overlap: src/settlement/payout.service.ts); a `payout` entry names the
 * payout it made.
 */
export const BALANCE_TRANSACTION_COLUMNS = `bt.id, bt.type, bt.amount::text as amount, bt.fee::text as fee, bt.net::text as net,
       bt.currency, bt.transaction_id as "transactionId", bt.payment_request_id as "paymentRequestId", bt.reference,
       case when bt.type = 'payout' then bt.payout_id
            else (select p.id from payouts p
                   where p.developer_id = bt.developer_id and p.currency = bt.currency
                     and p.period_end > bt.created_at and p.period_start <= bt.created_at
                   order by p.period_end limit 1) end as "payoutId",
       bt.created_at as "createdAt"`;
