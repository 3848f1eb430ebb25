import { Migration } from '@mikro-orm/migrations';

/**
 * The outbox (`events`), merchants' webhook endpoints, their deliveries and delivery attempts,
 * and the merchant's own `reference` / `metadata` on payment requests (SPEC §13).
 *
 * `events.xid` is the writing transaction's id: readers order rows by (xid, position) and tell
 * from transaction snapshots which rows became visible since their last read, so a row that
 * commits late with a lower position is never skipped (src/events/outbox.ts).
 */
export class Migration20261122000300_events_webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table payment_requests
      add column reference text check (length(reference) between 1 and 64 and reference !~ '[[:cntrl:]]'),
      add column metadata jsonb check (metadata is null or jsonb_typeof(metadata) = 'object');`);
    this.addSql(
      `create index payment_requests_reference_idx on payment_requests (developer_id, reference, created_at desc) where reference is not null;`,
    );

    this.addSql(`create table events (
      position bigserial primary key,
      id text not null unique check (id ~ '^evt_[A-Za-z0-9]{20,}$'),
      type text not null check (type in ('payment_request.created', 'payment_request.approved', 'payment_request.rejected',
                                         'payment_request.cancelled', 'payment_request.expired', 'transaction.refunded')),
      developer_id uuid not null references developers (id),
      payment_request_id uuid not null references payment_requests (id),
      transaction_id uuid references transactions (id),
      sequence int not null check (sequence >= 1),
      payload jsonb not null,
      created_at timestamptz not null,
      xid xid8 not null default pg_current_xact_id(),
      unique (payment_request_id, sequence)
    );`);
    this.addSql(`create index events_xid_idx on events (xid, position);`);
    this.addSql(`create index events_developer_idx on events (developer_id, xid, position);`);

    this.addSql(`create table webhook_endpoints (
      id text primary key check (id ~ '^we_[A-Za-z0-9]{20,}$'),
      developer_id uuid not null references developers (id),
      url text not null check (length(url) between 8 and 2048),
      events text[],
      status text not null default 'ENABLED' check (status in ('ENABLED', 'DISABLED', 'DELETED')),
      disabled_reason text,
      secret_enc text not null,
      previous_secret_enc text,
      previous_secret_expires_at timestamptz,
      failing_since timestamptz,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );`);
    this.addSql(`create index webhook_endpoints_developer_idx on webhook_endpoints (developer_id) where status <> 'DELETED';`);

    this.addSql(`create table webhook_deliveries (
      id bigserial primary key,
      event_id text not null references events (id),
      endpoint_id text not null references webhook_endpoints (id),
      payment_request_id uuid not null,
      sequence int not null,
      status text not null default 'PENDING' check (status in ('PENDING', 'DELIVERED', 'FAILED')),
      attempts int not null default 0,
      next_attempt_at timestamptz not null default now(),
      lease_token uuid,
      lease_until timestamptz,
      last_error text,
      created_at timestamptz not null default now(),
      delivered_at timestamptz,
      unique (event_id, endpoint_id)
    );`);
    this.addSql(`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where status = 'PENDING';`);
    this.addSql(
      `create index webhook_deliveries_order_idx on webhook_deliveries (endpoint_id, payment_request_id, sequence) where status = 'PENDING';`,
    );

    this.addSql(`create table webhook_attempts (
      id bigserial primary key,
      delivery_id bigint not null references webhook_deliveries (id),
      event_id text not null,
      endpoint_id text not null,
      attempted_at timestamptz not null,
      http_status int,
      error text,
      duration_ms int not null check (duration_ms >= 0)
    );`);
    this.addSql(`create index webhook_attempts_event_idx on webhook_attempts (event_id, attempted_at);`);
  }
}
