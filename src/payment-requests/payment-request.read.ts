import type { Detached } from '../db/rows.js';
import { CaptureMode, PaymentRequestStatus, overdueSql, type PaymentRequest } from './payment-request.entity.js';

/**
 * The one read model of a payment request: every query that turns a row into a payment request
 * (the developer's reads and lists, the app's, the pages', the transitions' RETURNING, the sweeps,
 * the events) selects `paymentRequestColumns(alias)` and maps the row with `paymentRequestFromRow`,
 * so a new column or a computed field (`overdue`, by the database's clock) is added once.
 */
export function paymentRequestColumns(pr = 'pr'): string {
  return `${pr}.id, ${pr}.developer_id, ${pr}.wallet_id, ${pr}.amount::text as amount, ${pr}.currency, ${pr}.description,
       ${pr}.merchant_name, ${pr}.status, ${pr}.created_at, ${pr}.expires_at, ${pr}.updated_at, ${pr}.transaction_id,
       ${pr}.reference, ${pr}.metadata, ${pr}.idempotency_key, ${pr}.consent_receipt, ${pr}.open_link, ${pr}.capture,
       ${pr}.code, ${pr}.payment_url, ${overdueSql(pr)} as overdue`;
}

const date = (v: unknown): Date => (v instanceof Date ? v : new Date(v as string));

/** A row selected with `paymentRequestColumns` as a (plain, read-only) payment request. */
export function paymentRequestFromRow(row: Record<string, unknown>): Detached<PaymentRequest> {
  const pr: PaymentRequest = {
    id: row.id as string,
    developerId: row.developer_id as string,
    walletId: (row.wallet_id as string | null) ?? null,
    openLink: row.open_link === true,
    capture: (row.capture as CaptureMode | null) ?? CaptureMode.AUTOMATIC,
    code: row.code as string,
    paymentUrl: (row.payment_url as string | null) ?? null,
    amount: String(row.amount),
    currency: row.currency as string,
    description: row.description as string,
    merchantName: row.merchant_name as string,
    status: row.status as PaymentRequestStatus,
    createdAt: date(row.created_at),
    expiresAt: date(row.expires_at),
    updatedAt: date(row.updated_at),
    transactionId: (row.transaction_id as string | null) ?? null,
    overdue: row.overdue === true,
    reference: (row.reference as string | null) ?? null,
    metadata: (row.metadata as Record<string, string> | null) ?? null,
    idempotencyKey: (row.idempotency_key as string | null) ?? null,
    consentReceipt: (row.consent_receipt as string | null) ?? null,
  };
  return pr as Detached<PaymentRequest>;
}

/** Whether a mapped request is PENDING as clients see it (not past its expiry). */
export const isPending = (pr: Pick<PaymentRequest, 'status' | 'overdue'>): boolean => pr.status === PaymentRequestStatus.PENDING && pr.overdue !== true;
