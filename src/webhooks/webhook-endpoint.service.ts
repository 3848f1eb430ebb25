import type { Queryable } from '../db/sql.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE, isEventType, type EventType } from '../events/events.js';
import { opaqueId } from '../random-id.js';
import type { SecretBox } from './secret-box.js';
import { newWebhookSecret } from './signing.js';
import type { RateLimits } from '../rate-limit.js';
import { checkEndpointUrl, type Resolver } from './url-policy.js';
import type { WebhookSender } from './sender.js';
import type { EndpointHealth } from './endpoint-health.js';
import {
  COUNT_ENDPOINTS,
  DELETE_ENDPOINT,
  ENDPOINT_TARGET,
  FAIL_DELETED_ENDPOINT_DELIVERIES,
  INSERT_ENDPOINT,
  LIST_ENDPOINTS,
  LOCK_DEVELOPER_FOR_REGISTRATION,
  ONE_ENDPOINT,
  ROTATE_SECRET,
  type EndpointRow,
} from './statements.js';

/** At most this many endpoints (not deleted) per developer. */
export const MAX_ENDPOINTS_PER_DEVELOPER = 10;
/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_HOURS = 24;

export type WebhookEndpointStatus = EndpointRow['status'];

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
    private readonly sender: WebhookSender,
    private readonly health: EndpointHealth,
    private readonly resolve?: Resolver,
  ) {}

  /** Registers an endpoint; the answer carries its signing secret, shown this once. */
  async create(work: UnitOfWork, developerId: string, input: { url: unknown; events?: readonly string[] | null }): Promise<WebhookEndpointRecord> {
    const url = await checkEndpointUrl(input.url, { production: this.config.appEnv === 'production', ...(this.resolve ? { resolve: this.resolve } : {}) });
    const events = parseEventTypes(input.events);
    const secret = newWebhookSecret();
    const row = await work.transaction(async (tx) => {
      // The developer's row serialises concurrent registrations, so the limit holds.
      await tx.run(LOCK_DEVELOPER_FOR_REGISTRATION, [developerId]);
      const [count] = await tx.run(COUNT_ENDPOINTS, [developerId]);
      if (count!.n >= MAX_ENDPOINTS_PER_DEVELOPER) {
        throw new AppError('CONFLICT', `At most ${MAX_ENDPOINTS_PER_DEVELOPER} webhook endpoints per account; delete one first`);
      }
      const [created] = await tx.run(INSERT_ENDPOINT, [opaqueId('we_'), developerId, url.href, events, this.secrets.seal(secret)]);
      return created!;
    });
    return toRecord(row, secret);
  }

  /** The developer's endpoints (not deleted), oldest first, each with its last delivery attempt and pending deliveries. */
  async list(db: Queryable, developerId: string): Promise<WebhookEndpointRecord[]> {
    return (await db.run(LIST_ENDPOINTS, [developerId])).map((r) => toRecord(r));
  }

  /** One endpoint with its deliveries' figures (deleted ones too: a delete answers it). */
  private async one(db: Queryable, id: string, secret?: string): Promise<WebhookEndpointRecord> {
    const [row] = await db.run(ONE_ENDPOINT, [id]);
    return toRecord(row!, secret);
  }

  /**
   * Enables an endpoint again (a DISABLED one; one already ENABLED is left as it is). Its pending
   * deliveries are due at once and its failure clock starts over; deliveries that were given up
   * (FAILED) stay so: `POST /events/{id}/resend` sends those again. (`EndpointHealth.enable`.)
   */
  async enable(work: UnitOfWork, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    return work.transaction(async (tx) => {
      if (!(await this.health.enable(tx, developerId, id))) throw notFound('Webhook endpoint not found');
      return this.one(tx, id);
    });
  }

  /**
   * Sends a signed `webhook.test` event to an endpoint now (DISABLED ones too, to check a fix
   * before enabling it) and answers with what the receiver said. It is the delivery's own send
   * (`WebhookSender`: timeout; in production public addresses only, no redirects; signed with the
   * current and, during a rotation, the previous secret), but it is not an event: nothing is
   * stored, nothing retried, the endpoint's health is not touched. At most
   * `WEBHOOK_TEST_LIMIT_PER_MINUTE` per endpoint.
   */
  async sendTest(work: UnitOfWork, developerId: string, id: string): Promise<WebhookTestResult> {
    const [target] = await work.run(ENDPOINT_TARGET, [id, developerId]);
    if (!target) throw notFound('Webhook endpoint not found');
    // A request to someone else's server: no connection or transaction is held while it runs.
    return work.outside(async () => {
      await this.limits.webhookTest(id);
      const event = {
        id: opaqueId('evt_test_'),
        type: WEBHOOK_TEST_EVENT_TYPE,
        createdAt: new Date().toISOString(),
        data: { endpointId: id, message: 'A test event from the wallet gateway: your endpoint received it.' },
      };
      const sent = await this.sender.send(
        { endpointId: id, ...target },
        { id: event.id, body: JSON.stringify(event), trace: { 'webhook.test': true } },
        { excerptBytes: TEST_EXCERPT_BYTES },
      );
      return sent.phase === 'answered'
        ? { delivered: sent.delivered, status: sent.status, durationMs: sent.durationMs, body: sent.excerpt ?? null, error: null }
        : { delivered: false, status: null, durationMs: sent.durationMs, body: null, error: sent.error };
    });
  }

  /** Deletes an endpoint: nothing more is sent to it; its pending deliveries fail. */
  async delete(work: UnitOfWork, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    return work.transaction(async (tx) => {
      const [row] = await tx.run(DELETE_ENDPOINT, [id, developerId]);
      if (!row) throw notFound('Webhook endpoint not found');
      await tx.run(FAIL_DELETED_ENDPOINT_DELIVERIES, [id]);
      return this.one(tx, id);
    });
  }

  /**
   * Replaces the signing secret; the previous one keeps signing beside it (two `v1,` signatures)
   * for 24 hours, so the receiver can switch without dropping a delivery.
   */
  async rotateSecret(db: Queryable, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    const secret = newWebhookSecret();
    const [row] = await db.run(ROTATE_SECRET, [ROTATION_OVERLAP_HOURS, this.secrets.seal(secret), id, developerId]);
    if (!row) throw notFound('Webhook endpoint not found');
    return this.one(db, id, secret);
  }
}
