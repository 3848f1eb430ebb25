import { sql } from '../db/sql.js';

/*
 * Every SQL statement on webhook endpoints, deliveries and attempts that src/webhooks runs, each
 * named once (graphile-worker's habit, src/db/sql.ts) and run through the unit of work
 * (`work.run`, `tx.run`). What queues a delivery is the event's own statement
 * (src/events/webhook-queue.ts: it rides in the statement that writes the event).
 *
 * Lock order, the one rule that keeps these transactions from deadlocking: an endpoint's row
 * first, then its deliveries (delete, enable and the recording of an attempt all go that way),
 * and never FOR UPDATE on an endpoint or a developer: FOR NO KEY UPDATE (what an UPDATE takes)
 * does not wait for the KEY SHARE locks that open transactions inserting rows that reference it
 * hold until they commit (a delivery being queued, a payment request being created).
 */

/** An endpoint as the developer sees it (`WebhookEndpointRecord`), without its delivery figures. */
export interface EndpointRow {
  id: string;
  url: string;
  events: string[] | null;
  status: 'ENABLED' | 'DISABLED' | 'DELETED';
  disabled_reason: string | null;
  created_at: Date | string;
  last_delivery_at?: Date | string | null;
  last_delivery_status?: number | null;
  pending_deliveries?: number | string;
}

const COLUMNS = 'id, url, events, status, disabled_reason, created_at';

/** An endpoint with its last delivery attempt and its pending deliveries (indexed look-ups per endpoint). */
const WITH_DELIVERIES = `select ep.id, ep.url, ep.events, ep.status, ep.disabled_reason, ep.created_at,
       last.attempted_at as last_delivery_at, last.http_status as last_delivery_status,
       (select count(*) from webhook_deliveries d where d.endpoint_id = ep.id and d.status = 'PENDING')::int as pending_deliveries
  from webhook_endpoints ep
  left join lateral (select a.attempted_at, a.http_status from webhook_attempts a
                      where a.endpoint_id = ep.id order by a.attempted_at desc, a.id desc limit 1) last on true`;

// ---- Endpoints (src/webhooks/webhook-endpoint.service.ts) ----

/** $1 developer: serialises the developer's registrations (so the limit holds). */
export const LOCK_DEVELOPER_FOR_REGISTRATION = sql('webhook_endpoint_registration_lock', 'select 1 from developers where id = $1 for no key update');

/** $1 developer: its endpoints not deleted. */
export const COUNT_ENDPOINTS = sql<{ n: number }>(
  'webhook_endpoint_count',
  `select count(*)::int as n from webhook_endpoints where developer_id = $1 and status <> 'DELETED'`,
);

/** $1 id, $2 developer, $3 url, $4 event types (null: all), $5 sealed secret. */
export const INSERT_ENDPOINT = sql<EndpointRow>(
  'webhook_endpoint_insert',
  `insert into webhook_endpoints (id, developer_id, url, events, secret_enc) values ($1, $2, $3, $4::text[], $5) returning ${COLUMNS}`,
);

/** $1 developer: its endpoints not deleted, oldest first, with their delivery figures. */
export const LIST_ENDPOINTS = sql<EndpointRow>(
  'webhook_endpoint_list',
  `${WITH_DELIVERIES} where ep.developer_id = $1 and ep.status <> 'DELETED' order by ep.created_at, ep.id`,
);

/** $1 endpoint: with its delivery figures (a deleted one too). */
export const ONE_ENDPOINT = sql<EndpointRow>('webhook_endpoint_one', `${WITH_DELIVERIES} where ep.id = $1`);

/** $1 endpoint, $2 developer: where a test send goes and the secrets that sign it (the previous one while it overlaps). */
export const ENDPOINT_TARGET = sql<{ url: string; secretEnc: string; previousSecretEnc: string | null }>(
  'webhook_endpoint_target',
  `select url, secret_enc as "secretEnc", case when previous_secret_expires_at > now() then previous_secret_enc end as "previousSecretEnc"
     from webhook_endpoints where id = $1 and developer_id = $2 and status <> 'DELETED'`,
);

/** $1 endpoint, $2 developer: marks it deleted (its row first: the lock order). */
export const DELETE_ENDPOINT = sql<EndpointRow>(
  'webhook_endpoint_delete',
  `update webhook_endpoints set status = 'DELETED', updated_at = now()
    where id = $1 and developer_id = $2 and status <> 'DELETED' returning ${COLUMNS}`,
);

/** $1 endpoint: its pending deliveries fail (after DELETE_ENDPOINT, in its transaction). */
export const FAIL_DELETED_ENDPOINT_DELIVERIES = sql(
  'webhook_deliveries_fail_deleted',
  `update webhook_deliveries set status = 'FAILED', last_error = 'endpoint deleted', lease_token = null, lease_until = null
    where endpoint_id = $1 and status = 'PENDING'`,
);

/** $1 overlap hours, $2 new sealed secret, $3 endpoint, $4 developer: the current secret becomes the previous one. */
export const ROTATE_SECRET = sql<EndpointRow>(
  'webhook_endpoint_rotate_secret',
  `update webhook_endpoints
      set previous_secret_enc = secret_enc, previous_secret_expires_at = now() + make_interval(hours => $1),
          secret_enc = $2, updated_at = now()
    where id = $3 and developer_id = $4 and status <> 'DELETED' returning ${COLUMNS}`,
);

// ---- Endpoint health (src/webhooks/endpoint-health.ts) ----

/** $1 endpoint, $2 developer: locks the developer's endpoint (not deleted) and says what it is, before ENABLE_ENDPOINT. */
export const LOCK_ENDPOINT = sql<{ status: EndpointRow['status'] }>(
  'webhook_endpoint_lock',
  `select status from webhook_endpoints where id = $1 and developer_id = $2 and status <> 'DELETED' for no key update`,
);

/**
 * $1 endpoint (locked by LOCK_ENDPOINT in this transaction): ENABLED again. An enabled endpoint
 * that is failing keeps its clock (enabling it again is no way to postpone its disabling). Two
 * statements, not an UPDATE … FROM (SELECT … FOR … UPDATE): that one statement locked the row
 * in its sub-select and then updated it, and two enables of one endpoint, with a delivery being
 * queued to it, deadlocked on the row's tuple lock (seen under load: 503 on enable and rotate).
 */
export const ENABLE_ENDPOINT = sql(
  'webhook_endpoint_enable',
  `update webhook_endpoints
      set status = 'ENABLED', disabled_reason = null,
          failing_since = case when status = 'DISABLED' then null else failing_since end,
          updated_at = case when status = 'DISABLED' then now() else updated_at end
    where id = $1`,
);

/** $1 endpoint: its pending deliveries waiting for a retry are due now (after ENABLE_ENDPOINT, in its transaction). */
export const DELIVERIES_DUE_NOW = sql(
  'webhook_deliveries_due_now',
  `update webhook_deliveries set next_attempt_at = now() where endpoint_id = $1 and status = 'PENDING' and next_attempt_at > now()`,
);

/** $1 endpoint: answered 2xx, its failure clock stops (no row is locked when it was not running). */
export const ENDPOINT_ANSWERED = sql(
  'webhook_endpoint_answered',
  `update webhook_endpoints set failing_since = null where id = $1 and failing_since is not null`,
);

/**
 * $1 endpoint, $2 when the failed attempt was made, $3 seconds without a 2xx after which it is
 * disabled: starts its failure clock, or disables it once the clock has run that long.
 */
export const ENDPOINT_FAILED = sql(
  'webhook_endpoint_failed',
  `update webhook_endpoints
      set failing_since = coalesce(failing_since, $2),
          status = case when coalesce(failing_since, $2) <= now() - make_interval(secs => $3) then 'DISABLED' else status end,
          disabled_reason = case when coalesce(failing_since, $2) <= now() - make_interval(secs => $3)
                                 then 'No successful delivery since ' || to_char(coalesce(failing_since, $2) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                 else disabled_reason end,
          updated_at = now()
    where id = $1 and status = 'ENABLED'`,
);

// ---- Deliveries (src/webhooks/delivery-worker.ts) ----

/** A claimed delivery with everything its send needs. */
export interface ClaimedRow {
  id: string;
  eventId: string;
  endpointId: string;
  attempts: number;
  url: string;
  body: string;
  secretEnc: string;
  previousSecretEnc: string | null;
}

/**
 * $1 lease token, $2 lease seconds, $3 batch size: leases due deliveries of enabled endpoints (a
 * delivery waits while an earlier event of its subject is pending for its endpoint), counts the
 * attempt, and returns what each send needs. One statement, committed at once: the deliveries are
 * held by their lease, never by a row lock, while they are sent.
 */
export const CLAIM_DUE = sql<ClaimedRow>(
  'webhook_deliveries_claim',
  `with due as (
     select d.id from webhook_deliveries d
       join webhook_endpoints ep on ep.id = d.endpoint_id and ep.status = 'ENABLED'
      where d.status = 'PENDING' and d.next_attempt_at <= now() and (d.lease_until is null or d.lease_until < now())
        and not exists (select 1 from webhook_deliveries p
                         where p.endpoint_id = d.endpoint_id and p.subject_id = d.subject_id
                           and p.sequence < d.sequence and p.status = 'PENDING')
      order by d.next_attempt_at, d.id
      limit $3
      for update of d skip locked),
   claimed as (
     update webhook_deliveries d
        set lease_token = $1, lease_until = now() + make_interval(secs => $2), attempts = d.attempts + 1
       from due where d.id = due.id
     returning d.id, d.event_id, d.endpoint_id, d.attempts)
   select c.id::text as id, c.event_id as "eventId", c.endpoint_id as "endpointId", c.attempts,
          ep.url, e.payload::text as body, ep.secret_enc as "secretEnc",
          case when ep.previous_secret_expires_at > now() then ep.previous_secret_enc end as "previousSecretEnc"
     from claimed c join events e on e.id = c.event_id join webhook_endpoints ep on ep.id = c.endpoint_id`,
);

/**
 * $1 delivery, $2 lease token, $3 new status, $4 error, $5 delivered, $6 seconds to the next
 * attempt: the attempt's outcome, only while this worker still holds the lease (a lapsed lease
 * taken over by another worker is that worker's to record).
 */
export const RECORD_DELIVERY = sql(
  'webhook_delivery_record',
  `update webhook_deliveries
      set status = $3, last_error = $4, lease_token = null, lease_until = null,
          delivered_at = case when $5::boolean then now() end,
          next_attempt_at = now() + make_interval(secs => $6)
    where id = $1 and lease_token = $2`,
);

/** $1 delivery, $2 event, $3 endpoint, $4 attempted at, $5 HTTP status, $6 error, $7 duration (ms). */
export const INSERT_ATTEMPT = sql(
  'webhook_attempt_insert',
  `insert into webhook_attempts (delivery_id, event_id, endpoint_id, attempted_at, http_status, error, duration_ms)
   values ($1, $2, $3, $4, $5, $6, $7)`,
);
