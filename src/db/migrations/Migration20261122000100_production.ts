import { Migration } from '@mikro-orm/migrations';

/** Rate-limit counters shared by every instance, and idempotency records of POST calls. */
export class Migration20261122000100_production extends Migration {
  override async up(): Promise<void> {
    // Layout required by rate-limiter-flexible's RateLimiterPostgres (created here, not at run time).
    this.addSql(`create table rate_limits (
      key varchar(255) primary key,
      points integer not null default 0,
      expire bigint
    );`);
    this.addSql(`create index rate_limits_expire_idx on rate_limits (expire);`);

    this.addSql(`create table idempotency_keys (
      developer_id uuid not null references developers (id),
      key text not null check (length(key) between 1 and 255),
      fingerprint char(64) not null,
      state text not null check (state in ('IN_PROGRESS', 'COMPLETED')),
      response_status integer,
      response_body jsonb,
      locked_at timestamptz not null default now(),
      created_at timestamptz not null default now(),
      primary key (developer_id, key),
      check ((state = 'COMPLETED') = (response_status is not null))
    );`);
    this.addSql(`create index idempotency_keys_created_idx on idempotency_keys (created_at);`);

    this.addSql(`alter table payment_requests add column idempotency_key text;`);
    this.addSql(
      `create unique index payment_requests_idempotency_uq on payment_requests (developer_id, idempotency_key) where idempotency_key is not null;`,
    );
  }
}
