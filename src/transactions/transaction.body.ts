import type { JsonBody } from '../events/events.js';
import { toAmountNumber } from '../money.js';
import type { Transaction } from './transaction.entity.js';

/**
 * A transaction as merchants receive it in events (and as GET /wallet/transaction/{id} answers
 * it: TRANSACTION_FIELDS): a plain serialiser of the domain, JSON-ready. Never who paid.
 */
export function transactionBody(tx: Transaction): JsonBody {
  return {
    id: tx.id,
    amount: toAmountNumber(tx.amount),
    currency: tx.currency,
    status: tx.status,
    type: tx.type,
    description: tx.description,
    createdAt: new Date(tx.createdAt).toISOString(),
    updatedAt: new Date(tx.updatedAt).toISOString(),
    paymentProvider: tx.paymentProvider,
    paymentReference: tx.paymentReference,
    consentReceipt: tx.consentReceipt ?? null,
    refundedAmount: toAmountNumber(tx.refundedAmount),
    capturedAmount: tx.capturedAmount === null || tx.capturedAmount === undefined ? null : toAmountNumber(tx.capturedAmount),
  };
}
