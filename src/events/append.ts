import { sql } from '../db/sql.js';
import type { Tx } from '../db/unit-of-work.js';
import { newEventId, type EventPayload, type EventType, type JsonBody, type OutboxPayload, type WalletOnlyEventType } from './events.js';
import { queueDeliveriesSql } from './webhook-queue.js';

/*
 * The one way an event is written: every state change appends its events to the outbox
 * (`events`) inside the change's own database transaction, through `appendEvents` (or, for a
 * statement that creates a subject together with its first event, `appendSql` + `appended`, the
 * same SQL and the same hand-off). The event exists if and only if the change commits; the
 * transaction hands what it wrote to this instance's subscribers after the commit (src/db/unit-of-work.ts).
 */

/** One change's event, as its writer knows it. */
export interface NewEvent {
  type: EventType;
  /**
   * What the event is about (a payment request's id; another subject's, e.g. a payout's). Events of
   * one subject are numbered in order: the writer holds the lock that orders the subject's
   * changes (its row's), so two transactions never number the same subject at once.
   */
  subjectId: string;
  developerId: string;
  paymentRequestId?: string | null | undefined;
  transactionId?: string | null | undefined;
  /** The wallet user the event concerns (the app's subscriptions); null or absent for none. */
  userId?: string | null | undefined;
  /** The payload's `data`, serialised by the subject's own feature. */
  data: JsonBody;
}

/** One of the wallet app's own events (no developer: never a merchant's, events.ts). */
export interface NewWalletEvent {
  type: WalletOnlyEventType;
  subjectId: string;
  userId: string;
  data: JsonBody;
}

/** An event of either kind as the outbox row is written. */
type OutboxEvent = Omit<NewEvent, 'type' | 'developerId'> & { type: EventType | WalletOnlyEventType; developerId: string | null };

/** Events drafted for one statement: their payloads, and the rows as the statement's one JSON parameter. */
export interface DraftedEvents {
  readonly events: ReadonlyArray<OutboxEvent & { payload: OutboxPayload }>;
  /** The `jsonb` parameter `appendSql` reads. */
  readonly json: string;
}

/** Gives each event its id and payload (created now). */
export function draftEvents(events: readonly OutboxEvent[], at = new Date()): DraftedEvents {
  const drafted = events.map((e) => ({
    ...e,
    payload: { id: newEventId(at.getTime()), type: e.type, createdAt: at.toISOString(), data: e.data } satisfies OutboxPayload,
  }));
  const rows = drafted.map((e, n) => ({
    n,
    id: e.payload.id,
    type: e.type,
    subject_id: e.subjectId,
    developer_id: e.developerId,
    payment_request_id: e.paymentRequestId ?? null,
    transaction_id: e.transactionId ?? null,
    user_id: e.userId ?? null,
    payload: e.payload,
    created_at: e.payload.createdAt,
  }));
  return { events: drafted, json: JSON.stringify(rows) };
}

/**
 * The CTEs, for a statement's WITH list, that insert drafted events (`param`: the SQL reference
 * of `DraftedEvents.json`) and queue a pending webhook delivery for each endpoint that wants one
 * (webhook-queue.ts): `ev` returns each event's id and sequence, `queued` one row per delivery.
 * Each event is numbered after its subject's last (1 for a new subject). With `onlyIf` (a CTE's
 * name), nothing is inserted unless that CTE returned a row.
 */
export function appendSql(param: string, onlyIf?: string): string {
  return `ev as (
       insert into events (id, type, subject_id, developer_id, payment_request_id, transaction_id, user_id, sequence, payload, created_at)
       select x.id, x.type, x.subject_id, x.developer_id, x.payment_request_id, x.transaction_id, x.user_id,
              coalesce((select max(e.sequence) from events e where e.subject_id = x.subject_id), 0)
                + row_number() over (partition by x.subject_id order by x.n),
              x.payload, x.created_at
         from jsonb_to_recordset(${param}::jsonb) as x(n int, id text, type text, subject_id text, developer_id uuid,
                payment_request_id uuid, transaction_id uuid, user_id text, payload jsonb, created_at timestamptz)
        ${onlyIf ? `where exists (select 1 from ${onlyIf})` : ''}
       returning id, type, developer_id, subject_id, sequence),
     queued as (${queueDeliveriesSql('ev')})`;
}

const APPEND = sql<{ id: string; sequence: number; deliveries: number }>(
  'events_append',
  `with ${appendSql('$1')}
   select ev.id, ev.sequence, (select count(*) from queued)::int as deliveries from ev`,
);

/**
 * Records what a statement with `appendSql` inserted (`inserted`: each event's id and sequence;
 * `deliveries`: how many webhook deliveries it queued) with the transaction, which publishes it
 * after its commit. Returns the payloads.
 */
export function appended(tx: Tx, drafted: DraftedEvents, inserted: ReadonlyArray<{ id: string; sequence: number }>, deliveries: number): OutboxPayload[] {
  const sequenceOf = new Map(inserted.map((r) => [r.id, Number(r.sequence)]));
  const written = drafted.events.filter((e) => sequenceOf.has(e.payload.id));
  tx.wrote(
    written.map((e) => ({
      id: e.payload.id,
      type: e.type,
      subjectId: e.subjectId,
      sequence: sequenceOf.get(e.payload.id)!,
      userId: e.userId ?? null,
      payload: e.payload,
    })),
    deliveries > 0,
  );
  return written.map((e) => e.payload);
}

/** Appends events inside the caller's transaction (one statement) and returns their payloads. */
export async function appendEvents(tx: Tx, events: readonly NewEvent[]): Promise<EventPayload[]> {
  if (events.length === 0) return [];
  const drafted = draftEvents(events);
  const rows = await tx.run(APPEND, [drafted.json]);
  // Merchants' events in, merchants' events out.
  return appended(tx, drafted, rows, rows[0]?.deliveries ?? 0) as EventPayload[];
}

/** Appends one of the wallet app's own events inside the caller's transaction (no developer: no webhook, not in the events API). */
export async function appendWalletEvent(tx: Tx, event: NewWalletEvent): Promise<OutboxPayload> {
  const drafted = draftEvents([{ ...event, developerId: null }]);
  const rows = await tx.run(APPEND, [drafted.json]);
  return appended(tx, drafted, rows, rows[0]?.deliveries ?? 0)[0]!;
}
