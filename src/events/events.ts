import type { EntityManager } from '@mikro-orm/postgresql';
import { opaqueId } from '../random-id.js';
import type { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import { PAYMENT_REQUEST_STATUS_FIELDS, PaymentRequestView } from '../payment-requests/payment-request.types.js';
import type { Transaction } from '../transactions/transaction.entity.js';
import { TRANSACTION_FIELDS, TransactionView } from '../transactions/transaction.types.js';

/** The PostgreSQL channel on which committed events are hinted to every gateway instance. */
export const EVENTS_CHANNEL = 'wallet_gateway_events';

/** Event types (SPEC §13): merchants' code depends on these names. */
export const EVENT_TYPES = [
  'payment_request.created',
  'payment_request.approved',
  'payment_request.rejected',
  'payment_request.cancelled',
  'payment_request.expired',
  'transaction.refunded',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The type of the event `POST /webhook-endpoints/{id}/test` sends: signed like every delivery,
 * never stored in the outbox (not one of EVENT_TYPES, not in the events API).
 */
export const WEBHOOK_TEST_EVENT_TYPE = 'webhook.test';

export const isEventType = (value: unknown): value is EventType =>
  typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);

/** A JSON body as the REST door sends it. */
export type JsonBody = Record<string, unknown>;

/**
 * An event as merchants receive it (webhook body, events API): no user, wallet or developer
 * identifier; `paymentRequest` is the PaymentRequestStatus body, `transaction` the Transaction body.
 */
export interface EventPayload {
  id: string;
  type: EventType;
  createdAt: string;
  data: { paymentRequest: JsonBody; transaction?: JsonBody };
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

/** What a state change tells the outbox. */
export interface EventFacts {
  type: EventType;
  paymentRequest: PaymentRequest;
  transaction?: Transaction | undefined;
}

/**
 * The outbox's settled horizon: every transaction of this database with a lower id has ended,
 * so rows below it can no longer appear. It is the oldest transaction still running in this
 * database (transactions of other databases on the server cannot write our rows and must not
 * hold us back), else the snapshot's xmax. Read rows below it in a LATER statement: a
 * transaction that ended between the snapshot and the activity read is then visible.
 */
export async function settledHorizon(em: EntityManager): Promise<string> {
  const [row] = await em.execute<Array<{ horizon: string }>>(
    `select coalesce(
       (select min(x) from pg_snapshot_xip(s) x
         where (x::text::numeric % 4294967296) in (
               select backend_xid::text::numeric from pg_stat_activity
                where datname = current_database() and backend_xid is not null)),
       pg_snapshot_xmax(s))::text as horizon
       from pg_current_snapshot() s`,
  );
  return row!.horizon;
}

/** Transactions (of the ORM) that wrote an event, so the commit hook knows to wake the readers. */
const wroteEvents = new WeakSet<object>();

/** Transactions that also queued webhook deliveries, so the commit hook wakes the delivery workers. */
const queuedDeliveries = new WeakSet<object>();

/** Whether a committed ORM transaction wrote events (read by the after-commit wake-up). */
export function transactionWroteEvents(trx: object): boolean {
  return wroteEvents.has(trx);
}

/** Whether a committed ORM transaction queued webhook deliveries (the delivery workers are woken only then). */
export function transactionQueuedDeliveries(trx: object): boolean {
  return queuedDeliveries.has(trx);
}

/**
 * Writes one outbox row per state change inside the caller's database transaction (`tem` must be
 * in one): the event exists if and only if the change commits. In the same statement, a pending
 * delivery is queued for each of the developer's enabled webhook endpoints that want this type.
 * The per-request `sequence` is the next after the request's previous event; the request's row
 * lock (held by every transition) serialises it, and a transaction event takes that lock itself.
 */
export async function writeEvents(tem: EntityManager, facts: readonly EventFacts[]): Promise<EventPayload[]> {
  const trx = tem.getTransactionContext() as object | undefined;
  if (!trx) throw new Error('writeEvents must run inside a database transaction');
  if (facts.length === 0) return [];
  const now = new Date();
  const rows = facts.map((f) => {
    const payload: EventPayload = {
      id: opaqueId('evt_'),
      type: f.type,
      createdAt: now.toISOString(),
      data: {
        paymentRequest: paymentRequestBody(f.paymentRequest),
        ...(f.transaction ? { transaction: transactionBody(f.transaction) } : {}),
      },
    };
    return {
      id: payload.id,
      type: f.type,
      developer_id: f.paymentRequest.developerId,
      payment_request_id: f.paymentRequest.id,
      transaction_id: f.transaction?.id ?? null,
      payload,
      created_at: payload.createdAt,
    };
  });
  const needsLock = facts.filter((f) => !f.type.startsWith('payment_request.')).map((f) => f.paymentRequest.id);
  if (needsLock.length > 0) {
    await tem.execute('select 1 from payment_requests where id = any(array[?]::uuid[]) for update', [needsLock]);
  }
  const queued = await tem.execute<{ affectedRows: number }>(
    `with ev as (
       insert into events (id, type, developer_id, payment_request_id, transaction_id, sequence, payload, created_at)
       select x.id, x.type, x.developer_id, x.payment_request_id, x.transaction_id,
              (select coalesce(max(e.sequence), 0) + 1 from events e where e.payment_request_id = x.payment_request_id),
              x.payload, x.created_at
         from jsonb_to_recordset(?::jsonb) as x(id text, type text, developer_id uuid, payment_request_id uuid,
                                                transaction_id uuid, payload jsonb, created_at timestamptz)
       returning id, type, developer_id, payment_request_id, sequence)
     insert into webhook_deliveries (event_id, endpoint_id, payment_request_id, sequence)
     select ev.id, ep.id, ev.payment_request_id, ev.sequence
       from ev join webhook_endpoints ep
         on ep.developer_id = ev.developer_id and ep.status = 'ENABLED' and (ep.events is null or ev.type = any(ep.events))`,
    [JSON.stringify(rows)],
    'run',
  );
  wroteEvents.add(trx);
  if (queued.affectedRows > 0) queuedDeliveries.add(trx);
  return rows.map((r) => r.payload);
}

/** One state change's event (see `writeEvents`). */
export async function writeEvent(tem: EntityManager, facts: EventFacts): Promise<EventPayload> {
  const [payload] = await writeEvents(tem, [facts]);
  return payload!;
}
