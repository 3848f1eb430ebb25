import { opaqueId } from '../random-id.js';

/**
 * The event registry and envelope (SPEC §13): which events exist, what merchants receive
 * (webhook body, events API), and which wallet-app subscription each feeds. A feature serialises
 * its own subjects into an event's `data` (src/payment-requests, src/transactions); this module
 * knows no feature. Adding an event type is one line here plus its migration (the `events.type`
 * CHECK); the write path is `append.ts`, the read path `outbox.ts`.
 */

/** Event types (SPEC §13, §15): merchants' code depends on these names. */
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

/**
 * Events of the wallet app alone (SPEC §16, consent hardened): a change to how the wallet
 * approves, told to the user on every device. They travel the one outbox (append.ts) so that every
 * instance's subscribers get them, but they are no merchant's: written with no developer
 * (`events.developer_id` null, which the table's CHECK ties to these types), so no webhook queues
 * for them and the events API (by developer) never lists them.
 */
export const WALLET_ONLY_EVENT_TYPES = ['passkey.added', 'passkey.removed'] as const;

export type WalletOnlyEventType = (typeof WALLET_ONLY_EVENT_TYPES)[number];

/** Every type the outbox holds: the merchants' events and the wallet app's own. */
export type OutboxEventType = EventType | WalletOnlyEventType;

export const isOutboxEventType = (value: unknown): value is OutboxEventType =>
  isEventType(value) || (typeof value === 'string' && (WALLET_ONLY_EVENT_TYPES as readonly string[]).includes(value));

/** The wallet app's subscription topics. */
export type WalletEventType = 'paymentRequested' | 'paymentRequestUpdated' | 'passkeyChanged';

/** Which wallet-app subscription an event feeds (refunds, captures, voids and payouts are not sent to the app). */
export function walletTopicOf(type: OutboxEventType): WalletEventType | undefined {
  switch (type) {
    case 'passkey.added':
    case 'passkey.removed':
      return 'passkeyChanged';
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

/**
 * An event as merchants receive it (webhook body, events API): no user, wallet or developer
 * identifier. `data` is what the event's subject says of itself (for payment requests and their
 * transactions: `{ paymentRequest, transaction? }`, the REST bodies of both).
 */
export interface EventPayload {
  id: string;
  type: EventType;
  createdAt: string;
  data: JsonBody;
}

/** An outbox row's payload: a merchant's event, or one of the wallet app's own (same envelope). */
export type OutboxPayload = Omit<EventPayload, 'type'> & { type: OutboxEventType };

/**
 * A new event id: `evt_`, the time in milliseconds as 13 digits, then 24 random base62 characters
 * (≈142 bits). The time first keeps the `events.id` index growing at its right edge, as the
 * outbox grows, instead of touching a random leaf page per insert (bench/outbox-10m.mjs); digits
 * sort the same in every collation.
 */
export function newEventId(now = Date.now()): string {
  return opaqueId(`evt_${String(now).padStart(13, '0')}`);
}
