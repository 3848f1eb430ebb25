import type { EventType } from './types.js';

/**
 * Every event type there is, at run time (the contract's EventType, which the types only know at
 * compile time): for checking a list of types a person typed, e.g. `listen --events`. A type
 * added to the contract and not here fails to compile (below).
 */
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
] as const satisfies readonly EventType[];

/** Compiles only while EVENT_TYPES lists every EventType of the contract. */
const everyType: [Exclude<EventType, (typeof EVENT_TYPES)[number]>] extends [never] ? true : false = true;
void everyType;

/** Whether a string is one of the event types. */
export const isEventType = (value: unknown): value is EventType => typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);
