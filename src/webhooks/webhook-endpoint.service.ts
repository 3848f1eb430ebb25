import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { EVENT_TYPES, isEventType, type EventType } from '../events/events.js';
import { opaqueId } from '../random-id.js';
import type { SecretBox } from './secret-box.js';
import { newWebhookSecret } from './signing.js';
import { checkEndpointUrl, type Resolver } from './url-policy.js';

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
}

const COLUMNS = 'id, url, events, status, disabled_reason, created_at';

function toRecord(row: EndpointRow, secret?: string): WebhookEndpointRecord {
  return {
    id: row.id,
    url: row.url,
    events: (row.events ?? [...EVENT_TYPES]).filter(isEventType),
    status: row.status,
    disabledReason: row.disabled_reason,
    createdAt: new Date(row.created_at),
    ...(secret !== undefined ? { secret } : {}),
  };
}

/** The event types an endpoint asks for: null (all) when not given; otherwise known, non-empty, deduplicated. */
function parseEventTypes(events: readonly string[] | null | undefined): EventType[] | null {
  if (events === undefined || events === null) return null;
  if (events.length === 0) throw badInput('events must not be empty (omit it to receive every event type)');
  const unknown = events.filter((e) => !isEventType(e));
  if (unknown.length > 0) throw badInput(`Unknown event type ${JSON.stringify(unknown[0])}; known: ${EVENT_TYPES.join(', ')}`);
  return [...new Set(events as EventType[])];
}

/** Merchants' webhook endpoints: register, list, delete, rotate the signing secret. */
export class WebhookEndpointService {
  constructor(
    private readonly config: Config,
    private readonly secrets: SecretBox,
    private readonly resolve?: Resolver,
  ) {}

  /** Registers an endpoint; the answer carries its signing secret, shown this once. */
  async create(em: EntityManager, developerId: string, input: { url: unknown; events?: readonly string[] | null }): Promise<WebhookEndpointRecord> {
    const url = await checkEndpointUrl(input.url, { production: this.config.appEnv === 'production', ...(this.resolve ? { resolve: this.resolve } : {}) });
    const events = parseEventTypes(input.events);
    const secret = newWebhookSecret();
    const row = await em.transactional(async (tem) => {
      // The developer's row serialises concurrent registrations, so the limit holds.
      await tem.execute('select 1 from developers where id = ? for update', [developerId]);
      const [count] = await tem.execute<Array<{ n: string }>>(
        `select count(*) as n from webhook_endpoints where developer_id = ? and status <> 'DELETED'`,
        [developerId],
      );
      if (Number(count!.n) >= MAX_ENDPOINTS_PER_DEVELOPER) {
        throw new AppError('CONFLICT', `At most ${MAX_ENDPOINTS_PER_DEVELOPER} webhook endpoints per account; delete one first`);
      }
      const [created] = await tem.execute<EndpointRow[]>(
        `insert into webhook_endpoints (id, developer_id, url, events, secret_enc)
         values (?, ?, ?, ${events ? 'array[?]::text[]' : 'null'}, ?) returning ${COLUMNS}`,
        events ? [opaqueId('we_'), developerId, url.href, events, this.secrets.seal(secret)] : [opaqueId('we_'), developerId, url.href, this.secrets.seal(secret)],
      );
      return created!;
    });
    return toRecord(row, secret);
  }

  /** The developer's endpoints (not deleted), oldest first. */
  async list(em: EntityManager, developerId: string): Promise<WebhookEndpointRecord[]> {
    const rows = await em.execute<EndpointRow[]>(
      `select ${COLUMNS} from webhook_endpoints where developer_id = ? and status <> 'DELETED' order by created_at, id`,
      [developerId],
    );
    return rows.map((r) => toRecord(r));
  }

  /** Deletes an endpoint: nothing more is sent to it; its pending deliveries fail. */
  async delete(em: EntityManager, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    return em.transactional(async (tem) => {
      const [row] = await tem.execute<EndpointRow[]>(
        `update webhook_endpoints set status = 'DELETED', updated_at = now()
          where id = ? and developer_id = ? and status <> 'DELETED' returning ${COLUMNS}`,
        [id, developerId],
      );
      if (!row) throw notFound('Webhook endpoint not found');
      await tem.execute(
        `update webhook_deliveries set status = 'FAILED', last_error = 'endpoint deleted', lease_token = null, lease_until = null
          where endpoint_id = ? and status = 'PENDING'`,
        [id],
      );
      return toRecord(row);
    });
  }

  /**
   * Replaces the signing secret; the previous one keeps signing beside it (two `v1,` signatures)
   * for 24 hours, so the receiver can switch without dropping a delivery.
   */
  async rotateSecret(em: EntityManager, developerId: string, id: string): Promise<WebhookEndpointRecord> {
    const secret = newWebhookSecret();
    const [row] = await em.execute<EndpointRow[]>(
      `update webhook_endpoints
          set previous_secret_enc = secret_enc, previous_secret_expires_at = now() + make_interval(hours => ?),
              secret_enc = ?, updated_at = now()
        where id = ? and developer_id = ? and status <> 'DELETED' returning ${COLUMNS}`,
      [ROTATION_OVERLAP_HOURS, this.secrets.seal(secret), id, developerId],
    );
    if (!row) throw notFound('Webhook endpoint not found');
    return toRecord(row, secret);
  }
}
