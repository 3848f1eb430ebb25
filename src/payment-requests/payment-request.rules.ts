import { PaymentRequestStatus, type PaymentRequest } from './payment-request.entity.js';

/**
 * The status a client sees: a PENDING request whose `expiresAt` has passed (by the database's
 * clock, read with the row as `overdue`) reads as EXPIRED even before the sweeper wrote it.
 * `effectiveStatusSql` in the entity module is its twin for queries.
 */
export function effectiveStatus(pr: Pick<PaymentRequest, 'status' | 'overdue'>): PaymentRequestStatus {
  return pr.status === PaymentRequestStatus.PENDING && pr.overdue === true ? PaymentRequestStatus.EXPIRED : pr.status;
}

/** The request's link: as written at creation, or the relative /pay/<code> for a row written outside the gateway's doors. */
export function paymentUrlOf(pr: Pick<PaymentRequest, 'paymentUrl' | 'code'>): string {
  return pr.paymentUrl ?? `/pay/${pr.code}`;
}

/** When the request last changed as a client sees it (an unswept expiry changed it at `expiresAt`). */
export function effectiveUpdatedAt(pr: Pick<PaymentRequest, 'status' | 'overdue' | 'expiresAt' | 'updatedAt'>): Date {
  return pr.status === PaymentRequestStatus.PENDING && pr.overdue === true ? pr.expiresAt : pr.updatedAt;
}
