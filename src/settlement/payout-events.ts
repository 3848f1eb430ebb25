import type { Tx } from '../db/unit-of-work.js';
import { appendEvents } from '../events/append.js';
import type { EventPayload } from '../events/events.js';
import type { Payout } from './payout.entity.js';
import { PAYOUT_FIELDS, PayoutView } from './settlement.types.js';

/** The events of a payout (SPEC §16): their `data` is the payout body (GET /payouts/{id}). */
export type PayoutEventType = 'payout.created' | 'payout.paid' | 'payout.failed';

/** The Payout body as the REST door answers it (exactly PAYOUT_FIELDS, dates as ISO strings). */
export function payoutBody(payout: Payout): Record<string, unknown> {
  const view = PayoutView.from(payout);
  return JSON.parse(JSON.stringify(Object.fromEntries(PAYOUT_FIELDS.map((f) => [f, view[f]])))) as Record<string, unknown>;
}

/**
 * A payout's event, in the caller's database transaction, through the outbox's one append path:
 * the payout is the event's subject (its events numbered in order: the payout's row lock, held by
 * whoever changes it, orders them); no wallet user is concerned.
 */
export async function writePayoutEvent(tx: Tx, type: PayoutEventType, payout: Payout): Promise<EventPayload> {
  const [payload] = await appendEvents(tx, [{ type, subjectId: payout.id, developerId: payout.developerId, userId: null, data: payoutBody(payout) }]);
  return payload!;
}
