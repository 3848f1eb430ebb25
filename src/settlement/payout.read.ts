import type { Detached } from '../db/rows.js';
import type { Payout, PayoutStatus } from './payout.entity.js';

/** The one read model of a payout: the columns every query selects and the row-to-object mapping. */
export function payoutColumns(p = 'p'): string {
  return `${p}.id, ${p}.developer_id, ${p}.currency, ${p}.status, ${p}.amount::text as amount, ${p}.item_count, ${p}.period_start,
       ${p}.period_end, ${p}.created_at, ${p}.paid_at, ${p}.bank_reference, ${p}.failed_at, ${p}.failure_reason`;
}

const date = (v: unknown): Date => (v instanceof Date ? v : new Date(v as string));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));

/** A row selected with `payoutColumns` as a (plain, read-only) payout. */
export function payoutFromRow(row: Record<string, unknown>): Detached<Payout> {
  const payout: Payout = {
    id: row.id as string,
    developerId: row.developer_id as string,
    currency: row.currency as string,
    status: row.status as PayoutStatus,
    amount: String(row.amount),
    itemCount: Number(row.item_count),
    periodStart: date(row.period_start),
    periodEnd: date(row.period_end),
    createdAt: date(row.created_at),
    paidAt: dateOrNull(row.paid_at),
    bankReference: (row.bank_reference as string | null) ?? null,
    failedAt: dateOrNull(row.failed_at),
    failureReason: (row.failure_reason as string | null) ?? null,
  };
  return payout as Detached<Payout>;
}
