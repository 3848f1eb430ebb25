// Names for the generated types of the contract (./generated/openapi.ts), as a merchant's code uses them.
import type { components, webhooks } from './generated/openapi.js';

type Schemas = components['schemas'];

/** The body of POST /wallet/request-payment. */
export type PaymentRequestInput = Schemas['PaymentRequest'];
/** The body of POST /wallet/payment-links: request-payment's body without `walletId`. */
export type PaymentLinkInput = Schemas['PaymentLink'];
/** AUTOMATIC (the approval moves the money) or MANUAL (it holds it until you capture or void). */
export type CaptureMode = Schemas['CaptureMode'];
/** The answer to POST /wallet/request-payment. */
export type PaymentRequestCreated = Schemas['PaymentRequestResponse'];
/** A payment request as GET /wallet/payment-request/{id} answers it. */
export type PaymentRequest = Schemas['PaymentRequestStatus'];
/** PENDING, APPROVED, REJECTED, EXPIRED or CANCELLED. */
export type PaymentRequestState = Schemas['PaymentRequestState'];
/** A final state: nothing changes any more. */
export type FinalState = Exclude<PaymentRequestState, 'PENDING'>;
export type PaymentRequestPage = Schemas['PaymentRequestPage'];
export type Transaction = Schemas['Transaction'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type WebhookTestResult = Schemas['WebhookTestResult'];
export type EventType = Schemas['EventType'];
/** GET /balance: available and in payouts, per currency. */
export type Balance = Schemas['Balance'];
export type CurrencyBalance = Schemas['CurrencyBalance'];
/** One change of your available balance: gross `amount`, the wallet company's `fee`, `net`. */
export type BalanceTransaction = Schemas['BalanceTransaction'];
/** payment, refund, payout, payout_reversal or adjustment. */
export type BalanceTransactionType = Schemas['BalanceTransactionType'];
export type BalanceTransactionPage = Schemas['BalanceTransactionPage'];
export type Payout = Schemas['Payout'];
/** PENDING, PAID or FAILED. */
export type PayoutStatus = Schemas['PayoutStatus'];
export type PayoutPage = Schemas['PayoutPage'];
export type EventDetail = Schemas['EventDetail'];

export type PaymentRequestCreatedEvent = Schemas['PaymentRequestCreatedEvent'];
export type PaymentRequestApprovedEvent = Schemas['PaymentRequestApprovedEvent'];
export type PaymentRequestRejectedEvent = Schemas['PaymentRequestRejectedEvent'];
export type PaymentRequestCancelledEvent = Schemas['PaymentRequestCancelledEvent'];
export type PaymentRequestExpiredEvent = Schemas['PaymentRequestExpiredEvent'];
export type TransactionRefundedEvent = Schemas['TransactionRefundedEvent'];
export type TransactionCapturedEvent = Schemas['TransactionCapturedEvent'];
export type TransactionVoidedEvent = Schemas['TransactionVoidedEvent'];
export type PayoutCreatedEvent = Schemas['PayoutCreatedEvent'];
export type PayoutPaidEvent = Schemas['PayoutPaidEvent'];
export type PayoutFailedEvent = Schemas['PayoutFailedEvent'];
export type WebhookTestEvent = Schemas['WebhookTestEvent'];

/** The body a webhook of this type delivers, as the contract's `webhooks` section describes it. */
type WebhookBody<T extends keyof webhooks> = webhooks[T]['post']['requestBody']['content']['application/json'];

/**
 * What a webhook endpoint can receive: one member per entry of the contract's `webhooks` section
 * (every event type, and the `webhook.test` of POST /webhook-endpoints/{id}/test), so a new event
 * type reaches this union when the types are generated again. Narrow it on `type`.
 */
export type WebhookEvent = { [T in keyof webhooks]: WebhookBody<T> }[keyof webhooks];

/** An event of the events API and of webhooks; narrow it on `type` (`data.transaction` exists on approved and refunded). */
export type GatewayEvent = Exclude<WebhookEvent, WebhookTestEvent>;

/** A page of GET /events, with its events typed. */
export interface EventPage {
  data: GatewayEvent[];
  hasMore: boolean;
  /** Pass as `after` for the next page (the last event's id). */
  nextAfter: string | null;
}
