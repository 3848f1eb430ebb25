import { opaqueId } from '../random-id.js';
import type { PaymentRequest, PaymentRequestStatus } from '../payment-requests/payment-request.entity.js';
import { PAYMENT_REQUEST_STATUS_FIELDS, PaymentRequestView } from '../payment-requests/payment-request.types.js';
import type { Transaction } from '../transactions/transaction.entity.js';
import { TRANSACTION_FIELDS, TransactionView } from '../transactions/transaction.types.js';

/**
 * The event registry and payload format (SPEC §13): which events exist, what merchants receive
 * (webhook body, events API), and which wallet-app subscription each feeds. The outbox write and
 * read are in `outbox.ts`; the webhook queueing in `webhook-queue.ts`.
 */

/** Event types (SPEC §13): merchants' code depends on these names. */
export const EVENT_TYPES = [
  'payment_request.created',
  'payment_request.approved',
  'payment_request.rejected',
  'payment_request.cancelled',
  'payment_request.expired',
  'transaction.refunded',
  'transaction.captured',
  'transaction.voided',
  'payout.created',
  'payout.paid',
  'payout.failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The type of the event `POST /webhook-endpoints/{id}/test` sends: signed like every delivery,
 * never stored in the outbox (not one of EVENT_TYPES, not in the events API).
 */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';

export const isEventType = (value: unknown): value is EventType =>
  typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);

/** The wallet app's subscription topics. */
export type WalletEventType = 'paymentRequested' | 'paymentRequestUpdated';

/** Which wallet-app subscription an event feeds (refunds are not sent to the app). */
export function walletTopicOf(type: EventType): WalletEventType | undefined {
  switch (type) {
    case 'payment_request.created':
      return 'paymentRequested';
    case 'payment_request.approved':
    case 'payment_request.rejected':
    case 'payment_request.cancelled':
    case 'payment_request.expired':
      return 'paymentRequestUpdated';
    case 'transaction.refunded':
    case 'transaction.captured':
    case 'transaction.voided':
    case 'payout.created':
    case 'payout.paid':
    case 'payout.failed':
      return undefined;
    default: {
      const never: never = type;
      throw new Error(`unknown event type ${String(never)}`);
    }
  }
}

/** A JSON body as the REST door sends it. */
export type JsonBody = Record<string, unknown>;

/** The `data` of a payment request's or transaction's event. */
export interface PaymentRequestEventData {
  paymentRequest: JsonBody;
  transaction?: JsonBody;
}

/**
 * An event as merchants receive it (webhook body, events API): no user, wallet or developer
 * identifier. A payment request's or transaction's event carries `paymentRequest` (the
 * PaymentRequestStatus body) and `transaction` (the Transaction body); a payout's event (`payout.*`)
 * carries the Payout body itself (src/settlement/payout-events.ts).
 */
export interface EventPayload {
  id: string;
  type: EventType;
  createdAt: string;
  data: PaymentRequestEventData | JsonBody;
}

/** Picks exactly the body's fields from a view and turns it into JSON as the REST door does (dates as ISO strings). */
function body<T extends object>(view: T, fields: readonly (keyof T & string)[]): JsonBody {
  const picked: Record<string, unknown> = {};
  for (const f of fields) picked[f] = view[f];
  return JSON.parse(JSON.stringify(picked)) as JsonBody;
}

/** The PaymentRequestStatus body of a request, as GET /wallet/payment-request/{id} answers it. */
export function paymentRequestBody(pr: PaymentRequest): JsonBody {
  return body(PaymentRequestView.from(pr), PAYMENT_REQUEST_STATUS_FIELDS);
}

/** The Transaction body, as GET /wallet/transaction/{id} answers it. */
export function transactionBody(tx: Transaction): JsonBody {
  return body(TransactionView.from(tx), TRANSACTION_FIELDS);
}

/**
 * A new event id: `evt_`, the time in milliseconds as 13 digits, then 24 random base62 characters
 * (≈142 bits). The time first keeps the `events.id` index growing at its right edge, as the
 * outbox grows, instead of touching a random leaf page per insert (bench/outbox-10m.mjs); digits
 * sort the same in every collation.
 */
export function newEventId(now = Date.now()): string {
  return opaqueId(`evt_${String(now).padStart(13, '0')}`);
}

/** The payload of one state change's event (`createdAt` is when it was written). */
export function eventPayload(id: string, type: EventType, createdAt: Date, paymentRequest: PaymentRequest, transaction?: Transaction): EventPayload {
  return {
    id,
    type,
    createdAt: createdAt.toISOString(),
    data: {
      paymentRequest: paymentRequestBody(paymentRequest),
      ...(transaction ? { transaction: transactionBody(transaction) } : {}),
    },
  };
}

/** The view a wallet-app subscriber receives, rebuilt from an event's PaymentRequestStatus body (the state the event describes). */
export function subscriberViewOf(payload: EventPayload): PaymentRequestView {
  const b = (payload.data as PaymentRequestEventData).paymentRequest;
  return Object.assign(new PaymentRequestView(), {
    id: b.id as string,
    status: b.status as PaymentRequestStatus,
    amount: b.amount as number,
    currency: b.currency as string,
    description: b.description as string,
    merchantName: b.merchantName as string,
    createdAt: new Date(b.createdAt as string),
    expiresAt: new Date(b.expiresAt as string),
    updatedAt: new Date(b.updatedAt as string),
    transactionId: (b.transactionId as string | null) ?? null,
    reference: (b.reference as string | null) ?? null,
    metadata: (b.metadata as Record<string, string> | null) ?? null,
    consentReceipt: (b.consentReceipt as string | null | undefined) ?? null,
    paymentUrl: b.paymentUrl as string,
  });
}
