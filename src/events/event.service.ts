import type { Queryable } from '../db/sql.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import { badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { EVENT_TYPES, isEventType, type EventPayload, type EventType } from './events.js';
import { EVENT_ATTEMPTS, EVENT_DELIVERIES, RESEND_DELIVERIES } from './webhook-queue.js';

export const DEFAULT_EVENTS_LIMIT = 50;
export const MAX_EVENTS_LIMIT = 100;

/** One page of a developer's events, oldest first. */
export interface EventPage {
  data: EventPayload[];
  hasMore: boolean;
  /** Pass as `after` for the next page (the last event's id), null on an empty page. */
  nextAfter: string | null;
}

/** Narrows a list of events (GET /events?type=&paymentRequestId=). */
export interface EventFilter {
  /** Only these types (any of them). */
  types?: readonly string[] | null | undefined;
  /** Only the events of this payment request. */
  paymentRequestId?: string | null | undefined;
}

/** The filter's types, each a known event type (else BAD_USER_INPUT naming it). */
function eventTypes(types: readonly string[] | null | undefined): EventType[] {
  const unknown = (types ?? []).find((t) => !isEventType(t));
  if (unknown !== undefined) throw badInput(`Unknown event type ${JSON.stringify(unknown)}; known: ${EVENT_TYPES.join(', ')}`);
  return [...new Set((types ?? []) as EventType[])];
}

/** A delivery of an event to one endpoint. */
export interface DeliveryRecord {
  endpointId: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  nextAttemptAt: Date | null;
  deliveredAt: Date | null;
  lastError: string | null;
}

/** One POST to an endpoint. */
export interface AttemptRecord {
  endpointId: string;
  attemptedAt: Date;
  httpStatus: number | null;
  error: string | null;
  durationMs: number;
}

export interface EventDetail {
  event: EventPayload;
  deliveries: DeliveryRecord[];
  attempts: AttemptRecord[];
}

/**
 * The settled horizon of the events API: every transaction of this database with a lower id has
 * ended, so rows below it can no longer appear and an `after` cursor over (xid, position) never
 * skips a late commit. It is the oldest transaction still running in this database (other
 * databases' transactions on the server cannot write our rows and must not hold the API back),
 * else the snapshot's xmax. Only when some transaction is running is the activity view
 * consulted; the outbox readers never do (outbox.ts). Read rows below it in a LATER statement.
 */
export async function settledHorizon(db: Queryable): Promise<string> {
  const [row] = await db.query<{ horizon: string }>(
    `select (case when not exists (select from pg_snapshot_xip(s)) then pg_snapshot_xmax(s)
             else coalesce(
               (select min(x) from pg_snapshot_xip(s) x
                 where (x::text::numeric % 4294967296) in (
                       select backend_xid::text::numeric from pg_stat_activity
                        where datname = current_database() and backend_xid is not null)),
               pg_snapshot_xmax(s)) end)::text as horizon
       from pg_current_snapshot() s`,
  );
  return row!.horizon;
}

const EVENT_ID = /^evt_[A-Za-z0-9]{20,40}$/;

function requireEventId(id: string, field = 'id'): string {
  if (!EVENT_ID.test(id)) throw badInput(`${field} must be an event id (evt_...)`);
  return id;
}

/**
 * The events API: a developer reads its own events from the outbox (pull), sees their
 * deliveries, and asks for one to be sent again. Only settled rows are listed (their writing
 * transaction is older than every one still running in this database), in (xid, position) order, so paging with
 * `after` never skips an event that committed late.
 */
export class EventService {
  async list(
    db: Queryable,
    developerId: string,
    after: string | null | undefined,
    limit: number | null | undefined,
    filter: EventFilter = {},
  ): Promise<EventPage> {
    const n = limit ?? DEFAULT_EVENTS_LIMIT;
    if (!Number.isInteger(n) || n < 1 || n > MAX_EVENTS_LIMIT) throw badInput(`limit must be an integer from 1 to ${MAX_EVENTS_LIMIT}`);
    const types = eventTypes(filter.types);
    const paymentRequestId =
      filter.paymentRequestId === undefined || filter.paymentRequestId === null ? null : requireUuid(filter.paymentRequestId, 'paymentRequestId');
    let cursor: { xid: string; position: string } = { xid: '0', position: '0' };
    if (after !== undefined && after !== null) {
      const [row] = await db.query<{ xid: string; position: string }>(
        'select xid::text as xid, position::text as position from events where id = $1 and developer_id = $2',
        [requireEventId(after, 'after'), developerId],
      );
      if (!row) throw notFound('Event not found');
      cursor = row;
    }
    const horizon = await settledHorizon(db);
    const rows = await db.query<{ payload: EventPayload }>(
      `select payload from events
        where (developer_id, xid, position) > ($1::uuid, $2::xid8, $3::bigint)
          and (developer_id, xid, position) < ($1::uuid, $4::xid8, 0)
          and ($5::text[] is null or type = any($5::text[]))
          and ($6::uuid is null or payment_request_id = $6::uuid)
        order by developer_id, xid, position
        limit $7`,
      // The page is one range of events_developer_idx (developer_id, xid, position): both bounds are
      // row comparisons from its first column (the developer's rows after the cursor, below the
      // horizon). Written as "developer_id = ?", the developer is a constant, (xid, position) order
      // is what events_xid_idx gives too, and at 2 million rows the planner read that one instead:
      // 0.5 s a page, against 0.1 ms (bench/outbox-10m.mjs, #17).
      [developerId, cursor.xid, cursor.position, horizon, types.length > 0 ? types : null, paymentRequestId, n + 1],
    );
    const data = rows.slice(0, n).map((r) => r.payload);
    return { data, hasMore: rows.length > n, nextAfter: data.at(-1)?.id ?? after ?? null };
  }

  async get(db: Queryable, developerId: string, id: string): Promise<EventDetail> {
    const [row] = await db.query<{ payload: EventPayload }>('select payload from events where id = $1 and developer_id = $2', [
      requireEventId(id),
      developerId,
    ]);
    if (!row) throw notFound('Event not found');
    const deliveries = await db.run(EVENT_DELIVERIES, [id]);
    const attempts = await db.run(EVENT_ATTEMPTS, [id]);
    const date = (v: unknown): Date | null => (v === null || v === undefined ? null : new Date(v as string));
    return {
      event: row.payload,
      deliveries: deliveries.map((d) => ({
        endpointId: d.endpoint_id,
        status: d.status,
        attempts: Number(d.attempts),
        nextAttemptAt: date(d.next_attempt_at),
        deliveredAt: date(d.delivered_at),
        lastError: d.last_error ?? null,
      })),
      attempts: attempts.map((a) => ({
        endpointId: a.endpoint_id,
        attemptedAt: new Date(a.attempted_at),
        httpStatus: a.http_status === null ? null : Number(a.http_status),
        error: a.error ?? null,
        durationMs: Number(a.duration_ms),
      })),
    };
  }

  /**
   * Sends an event again to each of the developer's enabled endpoints that want its type: a
   * delivery that is not pending starts over (same webhook-id); a missing one is created.
   */
  async resend(work: UnitOfWork, developerId: string, id: string): Promise<EventDetail> {
    return work.transaction(async (tx) => {
      const [event] = await tx.query('select id from events where id = $1 and developer_id = $2', [requireEventId(id), developerId]);
      if (!event) throw notFound('Event not found');
      const queued = await tx.run(RESEND_DELIVERIES, [id]);
      // The delivery workers are woken once this commits (here and, by the hint, on other instances).
      tx.wrote([], queued.length > 0);
      return this.get(tx, developerId, id);
    });
  }
}
