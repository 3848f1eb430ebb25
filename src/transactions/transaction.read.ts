import type { Detached } from '../db/rows.js';
import type { PaymentProvider, Transaction, TransactionStatus, TransactionType } from './transaction.entity.js';

/**
 * The one read model of a transaction: the columns every query selects (its consent receipt is
 * its payment request's) and the row-to-object mapping.
 */
export function transactionColumns(t = 't'): string {
  return `${t}.id, ${t}.payment_request_id, ${t}.wallet_id, ${t}.developer_id, ${t}.amount::text as amount, ${t}.currency,
       ${t}.refunded_amount::text as refunded_amount, ${t}.captured_amount::text as captured_amount, ${t}.hold_expires_at,
       ${t}.status, ${t}.type, ${t}.description, ${t}.payment_provider, ${t}.payment_reference, ${t}.created_at, ${t}.updated_at,
       (select cr.consent_receipt from payment_requests cr where cr.id = ${t}.payment_request_id) as consent_receipt`;
}

const date = (v: unknown): Date => (v instanceof Date ? v : new Date(v as string));

/** A row selected with `transactionColumns` as a (plain, read-only) transaction. */
export function transactionFromRow(row: Record<string, unknown>): Detached<Transaction> {
  const tx: Transaction = {
    id: row.id as string,
    paymentRequestId: row.payment_request_id as string,
    walletId: row.wallet_id as string,
    developerId: row.developer_id as string,
    amount: String(row.amount),
    currency: row.currency as string,
    refundedAmount: String(row.refunded_amount ?? '0.00'),
    capturedAmount: row.captured_amount === null || row.captured_amount === undefined ? null : String(row.captured_amount),
    holdExpiresAt: row.hold_expires_at === null || row.hold_expires_at === undefined ? null : date(row.hold_expires_at),
    status: row.status as TransactionStatus,
    type: row.type as TransactionType,
    description: row.description as string,
    paymentProvider: row.payment_provider as PaymentProvider,
    paymentReference: row.payment_reference as string,
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
    consentReceipt: (row.consent_receipt as string | null) ?? null,
  };
  return tx as Detached<Transaction>;
}
