import type { EntityManager } from '@mikro-orm/postgresql';
import { newEventId, type EventPayload } from '../events/events.js';
import { recordFor } from '../events/outbox.js';
import { queueDeliveriesSql } from '../events/webhook-queue.js';
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
 * The settlement room's one way into the outbox: writes a payout's event in the caller's database
 * transaction, with its webhook deliveries queued in the same statement (as every event is), its
 * sequence the next of the payout's (the payout's row lock, held by whoever changes it, orders
 * them). No wallet-app subscriber wants it; the commit wakes the delivery workers. When the outbox
 * has one append function for every subject (issue 31), this becomes a call to it.
 */
export async function writePayoutEvent(tem: EntityManager, type: PayoutEventType, payout: Payout): Promise<EventPayload> {
  const trx = tem.getTransactionContext() as object | undefined;
  if (!trx) throw new Error('writePayoutEvent must run inside a database transaction');
  const now = new Date();
  const payload: EventPayload = { id: newEventId(now.getTime()), type, createdAt: now.toISOString(), data: payoutBody(payout) };
  const [row] = await tem.execute<Array<{ deliveries: number }>>(
    `with ev as (
       insert into events (id, type, developer_id, payment_request_id, payout_id, sequence, payload, created_at)
       select ?, ?, ?::uuid, null, ?::uuid, (select coalesce(max(e.sequence), 0) + 1 from events e where e.payout_id = ?::uuid), ?::jsonb, ?::timestamptz
       returning id, type, developer_id, payment_request_id, payout_id, sequence),
     queued as (${queueDeliveriesSql('ev')})
     select (select count(*) from queued)::int as deliveries`,
    [payload.id, type, payout.developerId, payout.id, payout.id, JSON.stringify(payload), payload.createdAt],
  );
  recordFor(trx, [], (row?.deliveries ?? 0) > 0);
  return payload;
}
