import type { Queryable } from '../db/sql.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE, isEventType, type EventType } from '../events/events.js';
import { opaqueId } from '../random-id.js';
import type { SecretBox } from './secret-box.js';
import { newWebhookSecret, webhookHeaders } from './signing.js';
import { WEBHOOK_USER_AGENT, postWebhook, webhookPostOptions } from './http-post.js';
import type { RateLimits } from '../rate-limit.js';
import { checkEndpointUrl, type Resolver } from './url-policy.js';
import { tracing, webhookSpan } from '../observability/tracing.js';

/** At most this many endpoints (not deleted) per developer. */
export const MAX_ENDPOINTS_PER_DEVELOPER = 10;
/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_HOURS = 24;

export type WebhookEndpointStatus = 'ENABLED' | 'DISABLED' | 'DELETED';

/** An endpoint as its developer sees it (never its secret, except once in `secret`). */
export interface WebhookEndpointRecord {
  id: string;
  url: string;
  events: EventType[];
  status: WebhookEndpointStatus;
  disabledReason: string | null;
  createdAt: Date;
  /** When the last delivery attempt to it was made (test sends are not deliveries). */
  lastDeliveryAt: Date | null;
  /** The HTTP status of that attempt; null when none was answered (or none was made). */
  lastDeliveryStatus: number | null;
  /** Deliveries still to be made (waiting while the endpoint is DISABLED). */
  pendingDeliveries: number;
  /** Only right after creation or rotation. */
  secret?: string;
}

interface EndpointRow {
  id: string;
  url: string;
  events: string[] | null;
  status: WebhookEndpointStatus;
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

function toRecord(row: EndpointRow, secret?: string): WebhookEndpointRecord {
  return {
    id: row.id,
    url: row.url,
    events: (row.events ?? [...EVENT_TYPES]).filter(isEventType),
    status: row.status,
    disabledReason: row.disabled_reason,
    createdAt: new Date(row.created_at),
    lastDeliveryAt: row.last_delivery_at ? new Date(row.last_delivery_at) : null,
    lastDeliveryStatus: row.last_delivery_status ?? null,
    pendingDeliveries: Number(row.pending_deliveries ?? 0),
    ...(secret !== undefined ? { secret } : {}),
  };
}

/** What a test send to an endpoint came to (POST /webhook-endpoints/{id}/test). */
export interface WebhookTestResult {
  /** The receiver answered 2xx. */
  delivered: boolean;
  /** The receiver's HTTP status; null when none arrived. */
  status: number | null;
  durationMs: number;
  /** The start of the receiver's answer (at most TEST_EXCERPT_BYTES); null when none arrived. */
  body: string | null;
  /** Why no answer arrived (timeout, connection error, address not allowed); null otherwise. */
  error: string | null;
}

/** How much of a receiver's answer a test send returns. */
export const TEST_EXCERPT_BYTES = 1024;

/** The event types an endpoint asks for: null (all) when not given; otherwise known, non-empty, deduplicated. */
function parseEventTypes(events: readonly string[] | null | undefined): EventType[] | null {
  if (events === undefined || events === null) return null;
  if (events.length === 0) throw badInput('events must not be empty (omit it to receive every event type)');
  const unknown = events.filter((e) => !isEventType(e));
  if (unknown.length > 0) throw badInput(`Unknown event type ${JSON.stringify(unknown[0])}; known: ${EVENT_TYPES.join(', ')}`);
  return [...new Set(events as EventType[])];
}

/** Merchants' webhook endpoints: register, list, delete, rotate the signing secret, enable again, send a test. */
export class WebhookEndpointService {
  constructor(
    private readonly config: Config,
    private readonly secrets: SecretBox,
    private readonly limits: Pick<RateLimits, 'webhookTest'>,
    private readonly resolve?: Resolver,
  ) {}

  /** Registers an endpoint; the answer carries its signing secret, shown this once. */
  async create(work: UnitOfWork, developerId: string, input: { url: unknown; events?: readonly string[] | null }): Promise<WebhookEndpointRecord> {
    const url = await checkEndpointUrl(input.url, { production: this.config.appEnv === 'production', ...(this.resolve ? { resolve: this.resolve } : {}) });
    const events = parseEventTypes(input.events);
    const secret = newWebhookSecret();
    const row = await work.transaction(async (tx) => {
      // The developer's row serialises concurrent registrations, so the limit holds. FOR NO KEY
      // UPDATE, not FOR UPDATE: it must not wait for the KEY SHARE locks that every open
      // transaction inserting a row that references the developer (a payment request, an event) holds.
      await tx.query('select 1 from developers where id = $1 for no key update', [developerId]);
      const [count] = await tx.query<{ n: string }>(`select count(*) as n from webhook_endpoints where developer_id = $1 and status <> 'DELETED'`, [
        developerId,
      ]);
      if (Number(count!.n) >= MAX_ENDPOINTS_PER_DEVELOPER) {
        throw new AppError('CONFLICT', `At most ${MAX_ENDPOINTS_PER_DEVELOPER} webhook endpoints per account; delete one first`);
      }
      const [created] = await tx.query<EndpointRow>(
        `insert into webhook_endpoints (id, developer_id, url, events, secret_enc)
         values ($1, $2, $3, $4::text[], $5) returning ${COLUMNS}`,
        [opaqueId('we_'), developerId, url.href, events, this.secrets.seal(secret)],
      );
      return created!;
    });
    return toRecord(row, secret);
  }

  /** The developer's endpoints (not deleted), oldest first, each with its last delivery attempt and pending deliveries. */
  async list(db: Queryable, developerId: string): Promise<WebhookEndpointRecord[]> {
    const rows = await db.query<EndpointRow>(
      `${WITH_DELIVERIES} where ep.developer_id = $1 and ep.status <> 'DELETED' order by ep.created_at, ep.id`,
      [developerId],
    );
    return rows.map((r) => toRecord(r));
  }

  /** One endpoint of the developer's with its deliveries' figures (deleted ones too: a delete answers it). */
  private async one(db: Queryable, id: string, secret?: string): Promise<WebhookEndpointRecord> {
    const [row] = await db.query<EndpointRow>(`${WITH_DELIVERIES} where ep.id = $1`, [id]);
    return toRecord(row!, secret);
  }

  /**
   * Enables an endpoint again (a DISABLED one; one already ENABLED is left as it is). Its pending
   * deliveries are due at once and its failure clock starts over; deliveries that were given up
   * (FAILED) stay so: `POST /events/{id}/resend` sends those again.
   */
  async enable(work: UnitOfWork, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    return work.transaction(async (tx) => {
      const [row] = await tx.query<{ was: WebhookEndpointStatus }>(
        `update webhook_endpoints ep
            set status = 'ENABLED', disabled_reason = null,
                -- An enabled endpoint that is failing keeps its clock (enabling it again is no way to postpone its disabling).
                failing_since = case when ep.status = 'DISABLED' then null else ep.failing_since end,
                updated_at = case when ep.status = 'DISABLED' then now() else ep.updated_at end
           from (select id, status from webhook_endpoints where id = $1 and developer_id = $2 and status <> 'DELETED' for no key update) old
          where ep.id = old.id returning old.status as was`,
        [id, developerId],
      );
      if (!row) throw notFound('Webhook endpoint not found');
      // Re-enabled after a fix: what waited for a retry is due now, not hours later (the workers are woken at commit).
      if (row.was === 'DISABLED') {
        await tx.query(`update webhook_deliveries set next_attempt_at = now() where endpoint_id = $1 and status = 'PENDING' and next_attempt_at > now()`, [id]);
        tx.wrote([], true);
      }
      return this.one(tx, id);
    });
  }

  /**
   * Sends a signed `webhook.test` event to an endpoint now (DISABLED ones too, to check a fix
   * before enabling it) and answers with what the receiver said. It follows the rules of every
   * delivery (`webhookPostOptions`: timeout; in production public addresses only, no redirects)
   * and is signed like one (current and, during a rotation, previous secret), but it is not an
   * event: nothing is stored, nothing retried. At most `WEBHOOK_TEST_LIMIT_PER_MINUTE` per endpoint.
   */
  async sendTest(work: UnitOfWork, developerId: string, id: string): Promise<WebhookTestResult> {
    const [row] = await work.query<{ url: string; secret_enc: string; previous_secret_enc: string | null }>(
      `select url, secret_enc, case when previous_secret_expires_at > now() then previous_secret_enc end as previous_secret_enc
         from webhook_endpoints where id = $1 and developer_id = $2 and status <> 'DELETED'`,
      [id, developerId],
    );
    if (!row) throw notFound('Webhook endpoint not found');
    // A request to someone else's server: no connection or transaction is held while it runs.
    return work.outside(() => this.send(id, row));
  }

  /** Counts the test against the endpoint's limit, then signs and sends it. */
  private async send(id: string, row: { url: string; secret_enc: string; previous_secret_enc: string | null }): Promise<WebhookTestResult> {
    await this.limits.webhookTest(id);
    const event = {
      id: opaqueId('evt_test_'),
      type: WEBHOOK_TEST_EVENT_TYPE,
      createdAt: new Date().toISOString(),
      data: { endpointId: id, message: 'A test event from the wallet gateway: your endpoint received it.' },
    };
    const body = JSON.stringify(event);
    const secrets = [this.secrets.open(row.secret_enc), ...(row.previous_secret_enc ? [this.secrets.open(row.previous_secret_enc)] : [])];
    const url = new URL(row.url);
    const headers = { 'user-agent': WEBHOOK_USER_AGENT, ...webhookHeaders(secrets, event.id, body) };
    const post = (sent: Record<string, string>) => postWebhook(url, body, sent, { ...webhookPostOptions(this.config), excerptBytes: TEST_EXCERPT_BYTES });
    // With tracing on, a client span of the request's trace, whose traceparent the merchant receives.
    const outcome = tracing.on ? await webhookSpan(url, { 'webhook.event_id': event.id, 'webhook.endpoint_id': id, 'webhook.test': true }, headers, post) : await post(headers);
    const status = outcome.status ?? null;
    return {
      delivered: status !== null && status >= 200 && status < 300,
      status,
      durationMs: outcome.durationMs,
      body: outcome.excerpt ?? null,
      error: outcome.error ?? null,
    };
  }

  /** Deletes an endpoint: nothing more is sent to it; its pending deliveries fail. */
  async delete(work: UnitOfWork, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    return work.transaction(async (tx) => {
      const [row] = await tx.query<EndpointRow>(
        `update webhook_endpoints set status = 'DELETED', updated_at = now()
          where id = $1 and developer_id = $2 and status <> 'DELETED' returning ${COLUMNS}`,
        [id, developerId],
      );
      if (!row) throw notFound('Webhook endpoint not found');
      await tx.query(
        `update webhook_deliveries set status = 'FAILED', last_error = 'endpoint deleted', lease_token = null, lease_until = null
          where endpoint_id = $1 and status = 'PENDING'`,
        [id],
      );
      return this.one(tx, id);
    });
  }

  /**
   * Replaces the signing secret; the previous one keeps signing beside it (two `v1,` signatures)
   * for 24 hours, so the receiver can switch without dropping a delivery.
   */
  async rotateSecret(db: Queryable, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    const secret = newWebhookSecret();
    const [row] = await db.query<EndpointRow>(
      `update webhook_endpoints
          set previous_secret_enc = secret_enc, previous_secret_expires_at = now() + make_interval(hours => $1),
              secret_enc = $2, updated_at = now()
        where id = $3 and developer_id = $4 and status <> 'DELETED' returning ${COLUMNS}`,
      [ROTATION_OVERLAP_HOURS, this.secrets.seal(secret), id, developerId],
    );
    if (!row) throw notFound('Webhook endpoint not found');
    return this.one(db, id, secret);
  }
}
