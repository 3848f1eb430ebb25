import { Migration } from '@mikro-orm/migrations';

/** The initial schema. Money is NUMERIC(18,2); the invariants are constraints, not conventions. */
export class Migration20261122000000_initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create type wallet_status as enum ('ACTIVE', 'SUSPENDED', 'CLOSED');`);
    this.addSql(
      `create type payment_request_status as enum ('PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'CANCELLED');`,
    );
    this.addSql(
      `create type transaction_status as enum ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'CANCELLED', 'REFUNDED');`,
    );

    this.addSql(`create table developers (
      id uuid primary key,
      name text not null check (length(name) between 1 and 100),
      created_at timestamptz not null default now()
    );`);

    this.addSql(`create table developer_balances (
      developer_id uuid not null references developers (id),
      currency char(3) not null,
      balance numeric(18,2) not null default 0 check (balance >= 0),
      primary key (developer_id, currency)
    );`);

    this.addSql(`create table secret_keys (
      id uuid primary key,
      developer_id uuid not null references developers (id),
      key_hash char(64) not null,
      environment text not null check (environment in ('test', 'live')),
      created_at timestamptz not null default now(),
      revoked_at timestamptz
    );`);
    this.addSql(`create index secret_keys_developer_idx on secret_keys (developer_id);`);

    this.addSql(`create table users (
      id uuid primary key,
      username text not null check (username ~ '^[a-z0-9_.]{3,32}$' and username !~ '^(0?[89])'),
      phone text not null check (phone ~ '^[1-9][0-9]{5,14}$'),
      created_at timestamptz not null default now()
    );`);
    this.addSql(`create unique index users_username_lower_uq on users (lower(username));`);
    this.addSql(`create unique index users_phone_uq on users (phone);`);

    this.addSql(`create table wallets (
      id text primary key check (id ~ '^wlt_[A-Za-z0-9]{20,}$'),
      user_id uuid not null unique references users (id),
      status wallet_status not null default 'ACTIVE',
      balance numeric(18,2) not null default 0 check (balance >= 0),
      currency char(3) not null check (currency ~ '^[A-Z]{3}$'),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );`);

    this.addSql(`create table payment_requests (
      id uuid primary key,
      developer_id uuid not null references developers (id),
      wallet_id text not null references wallets (id),
      amount numeric(18,2) not null check (amount >= 0.01),
      currency char(3) not null,
      description text not null check (length(description) between 1 and 255),
      merchant_name text not null check (length(merchant_name) between 1 and 100),
      status payment_request_status not null default 'PENDING',
      created_at timestamptz not null,
      expires_at timestamptz not null check (expires_at > created_at),
      updated_at timestamptz not null,
      transaction_id uuid unique,
      check ((status = 'APPROVED') = (transaction_id is not null))
    );`);
    this.addSql(`create index payment_requests_developer_idx on payment_requests (developer_id, created_at desc);`);
    this.addSql(`create index payment_requests_wallet_pending_idx on payment_requests (wallet_id, expires_at) where status = 'PENDING';`);
    this.addSql(`create index payment_requests_expiry_idx on payment_requests (expires_at) where status = 'PENDING';`);

    this.addSql(`create sequence payment_reference_seq;`);
    this.addSql(`create table transactions (
      id uuid primary key,
      payment_request_id uuid not null unique references payment_requests (id),
      wallet_id text not null references wallets (id),
      developer_id uuid not null references developers (id),
      amount numeric(18,2) not null check (amount > 0),
      currency char(3) not null,
      status transaction_status not null,
      type text not null check (type = 'WALLET_PAYMENT'),
      description text not null,
      payment_provider text not null check (payment_provider = 'WALLET'),
      payment_reference text not null unique check (payment_reference ~ '^WPAY[0-9]{12}-[A-Z0-9]{6}$'),
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    this.addSql(`create index transactions_developer_idx on transactions (developer_id, created_at desc);`);
    this.addSql(
      `alter table payment_requests add constraint payment_requests_transaction_fk foreign key (transaction_id) references transactions (id) deferrable initially deferred;`,
    );

    this.addSql(`create table ledger_entries (
      id bigserial primary key,
      kind text not null check (kind in ('PAYMENT', 'REFUND', 'TOPUP')),
      transaction_id uuid references transactions (id),
      wallet_id text references wallets (id),
      developer_id uuid references developers (id),
      amount numeric(18,2) not null check (amount <> 0),
      currency char(3) not null,
      created_at timestamptz not null default now(),
      check ((wallet_id is null) <> (developer_id is null))
    );`);
    this.addSql(`create index ledger_entries_wallet_idx on ledger_entries (wallet_id) where wallet_id is not null;`);
    this.addSql(`create index ledger_entries_developer_idx on ledger_entries (developer_id) where developer_id is not null;`);
  }
}
