import { Migration } from '@mikro-orm/migrations';

/**
 * Passkeys (WebAuthn credentials) of wallet users, and the single-use challenges of their
 * ceremonies (src/consent/passkey.service.ts). A challenge is consumed by a conditional update
 * (`used_at is null and expires_at > now()`), so a replay or a parallel second use finds nothing;
 * an approval challenge names the payment request it commits to.
 */
export class Migration20261126100000_passkeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table passkeys (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      credential_id text not null unique check (credential_id ~ '^[A-Za-z0-9_-]+$' and char_length(credential_id) between 16 and 1364),
      public_key bytea not null,
      counter bigint not null default 0 check (counter >= 0 and counter <= 4294967295),
      transports jsonb not null default '[]'::jsonb check (jsonb_typeof(transports) = 'array'),
      name text not null check (char_length(name) between 1 and 64),
      created_at timestamptz not null default now(),
      last_used_at timestamptz
    );`);
    this.addSql(`create index passkeys_user_idx on passkeys (user_id, created_at);`);
    this.addSql(`create table webauthn_challenges (
      challenge text primary key,
      user_id uuid not null references users (id) on delete cascade,
      purpose text not null check (purpose in ('registration', 'approval')),
      payment_request_id uuid references payment_requests (id) on delete cascade,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      used_at timestamptz,
      check ((purpose = 'approval') = (payment_request_id is not null)),
      check (expires_at > created_at)
    );`);
    this.addSql(`create index webauthn_challenges_user_idx on webauthn_challenges (user_id, expires_at);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists webauthn_challenges;`);
    this.addSql(`drop table if exists passkeys;`);
  }
}
