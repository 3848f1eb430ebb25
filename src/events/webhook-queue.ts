/**
 * Webhook queueing: the one rule of which endpoints want an event, and the one statement that
 * queues a pending delivery for each of them. Both the outbox write (same statement as the
 * event, append.ts) and a resend go through `queueDeliveriesSql`.
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
