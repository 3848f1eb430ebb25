// Names for the generated types of the contract (./generated/openapi.ts), as a merchant's code uses them.
import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/** The body of POST /wallet/request-payment. */
export type PaymentRequestInput = Schemas['PaymentRequest'];
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
export type EventDetail = Schemas['EventDetail'];

export type PaymentRequestCreatedEvent = Schemas['PaymentRequestCreatedEvent'];
export type PaymentRequestApprovedEvent = Schemas['PaymentRequestApprovedEvent'];
export type PaymentRequestRejectedEvent = Schemas['PaymentRequestRejectedEvent'];
export type PaymentRequestCancelledEvent = Schemas['PaymentRequestCancelledEvent'];
export type PaymentRequestExpiredEvent = Schemas['PaymentRequestExpiredEvent'];
export type TransactionRefundedEvent = Schemas['TransactionRefundedEvent'];
export type WebhookTestEvent = Schemas['WebhookTestEvent'];

/** An event of the events API and of webhooks; narrow it on `type` (`data.transaction` exists on approved and refunded). */
export type GatewayEvent =
  | PaymentRequestCreatedEvent
  | PaymentRequestApprovedEvent
  | PaymentRequestRejectedEvent
  | PaymentRequestCancelledEvent
  | PaymentRequestExpiredEvent
  | TransactionRefundedEvent;

/** What a webhook endpoint can receive: an event, or the `webhook.test` of POST /webhook-endpoints/{id}/test. */
export type WebhookEvent = GatewayEvent | WebhookTestEvent;

/** A page of GET /events, with its events typed. */
export interface EventPage {
  data: GatewayEvent[];
  hasMore: boolean;
  /** Pass as `after` for the next page (the last event's id). */
  nextAfter: string | null;
}
