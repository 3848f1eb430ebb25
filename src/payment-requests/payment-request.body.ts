import type { JsonBody } from '../events/events.js';
import { toAmountNumber } from '../money.js';
import type { PaymentRequest } from './payment-request.entity.js';
import { effectiveStatus, effectiveUpdatedAt, paymentUrlOf } from './payment-request.rules.js';

/**
 * A payment request as merchants receive it in events (and as GET /wallet/payment-request/{id}
 * answers it: PAYMENT_REQUEST_STATUS_FIELDS, which the REST route selects): a plain serialiser of
 * the domain, JSON-ready (times as ISO strings).
 */
export function paymentRequestBody(pr: PaymentRequest): JsonBody {
  return {
    id: pr.id,
    status: effectiveStatus(pr),
    amount: toAmountNumber(pr.amount),
    currency: pr.currency,
    description: pr.description,
    merchantName: pr.merchantName,
    createdAt: new Date(pr.createdAt).toISOString(),
    expiresAt: new Date(pr.expiresAt).toISOString(),
    updatedAt: new Date(effectiveUpdatedAt(pr)).toISOString(),
    transactionId: pr.transactionId ?? null,
    reference: pr.reference ?? null,
    metadata: pr.metadata ?? null,
    consentReceipt: pr.consentReceipt ?? null,
    paymentUrl: paymentUrlOf(pr),
  };
}
