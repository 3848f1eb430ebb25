import { sql } from '../db/sql.js';

/**
 * The outbox's side of webhooks: the one rule of which endpoints want an event, the one statement
 * that queues a pending delivery for each of them (the outbox write, in the same statement as the
 * event, append.ts, and a resend both go through `queueDeliveriesSql`), and the events API's
 * statements on deliveries. What happens to a delivery after that (claim, send, record, endpoint
 * health) is src/webhooks/, whose statements are named in src/webhooks/statements.ts.
 */

/** An endpoint wants an event when it is the event's developer's, ENABLED, and takes the event's type (no list: every type). */
export function endpointWantsSql(endpoint: string, event: string): string {
  return `${endpoint}.developer_id = ${event}.developer_id and ${endpoint}.status = 'ENABLED' and (${endpoint}.events is null or ${event}.type = any(${endpoint}.events))`;
}

/**
 * An INSERT queueing one PENDING delivery per wanting endpoint for every event of `source` (a
 * table or CTE with the events' id, type, developer_id, subject_id and sequence; `where`
 * narrows it). With `restart`, a delivery that exists and is not pending starts over (same
 * webhook-id): a resend. Returns one row per delivery queued (usable as a CTE).
 */
export function queueDeliveriesSql(source: string, opts: { where?: string; restart?: boolean } = {}): string {
  return `insert into webhook_deliveries (event_id, endpoint_id, subject_id, sequence)
     select ev.id, ep.id, ev.subject_id, ev.sequence
       from ${source} ev join webhook_endpoints ep on ${endpointWantsSql('ep', 'ev')}
      ${opts.where ? `where ${opts.where}` : ''}
     ${
       opts.restart
         ? `on conflict (event_id, endpoint_id) do update
            set status = 'PENDING', attempts = 0, next_attempt_at = now(), last_error = null, delivered_at = null
          where webhook_deliveries.status <> 'PENDING'`
         : ''
     }
     returning 1`;
}

/** $1 event: each wanting endpoint's delivery of it, queued again (same webhook-id) unless one is pending. */
export const RESEND_DELIVERIES = sql('webhook_deliveries_resend', queueDeliveriesSql('events', { where: 'ev.id = $1', restart: true }));

/** $1 event: its deliveries, one per endpoint (GET /events/{id}). */
export const EVENT_DELIVERIES = sql<{
  endpoint_id: string;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  next_attempt_at: Date | string | null;
  delivered_at: Date | string | null;
  last_error: string | null;
}>(
  'event_webhook_deliveries',
  `select endpoint_id, status, attempts, case when status = 'PENDING' then next_attempt_at end as next_attempt_at, delivered_at, last_error
     from webhook_deliveries where event_id = $1 order by id`,
);

/** $1 event: its delivery attempts, oldest first, at most 200 (GET /events/{id}). */
export const EVENT_ATTEMPTS = sql<{
  endpoint_id: string;
  attempted_at: Date | string;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
}>(
  'event_webhook_attempts',
  `select endpoint_id, attempted_at, http_status, error, duration_ms from webhook_attempts where event_id = $1 order by attempted_at, id limit 200`,
);
