import { Migration } from '@mikro-orm/migrations';

/**
 * Consent receipts and payer controls (#24): the signed receipt of an approval kept with its
 * request (every read answers the same one), a request's report by its payer (never shown to a
 * developer), and the merchants a wallet's holder blocked (one row per wallet and developer).
 */
export class Migration20261126003000_consent_receipts_payer_controls extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table payment_requests add column consent_receipt text null;`);
    this.addSql(`alter table payment_requests add column reported_at timestamptz null;`);
    this.addSql(`alter table payment_requests add column report_reason text null;`);
    this.addSql(
      `alter table payment_requests add constraint payment_requests_report_reason_len check (report_reason is null or char_length(report_reason) <= 500);`,
    );
    this.addSql(`alter table payment_requests add constraint payment_requests_receipt_approved check (consent_receipt is null or status = 'APPROVED');`);
    this.addSql(`create index payment_requests_reported_idx on payment_requests (developer_id, reported_at) where reported_at is not null;`);
    this.addSql(`create table merchant_blocks (
      id uuid primary key,
      wallet_id text not null references wallets (id),
      developer_id uuid not null references developers (id),
      merchant_name text not null,
      blocked_at timestamptz not null default now(),
      constraint merchant_blocks_wallet_developer_uq unique (wallet_id, developer_id)
    );`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists merchant_blocks;`);
    this.addSql(`drop index if exists payment_requests_reported_idx;`);
    this.addSql(`alter table payment_requests drop constraint if exists payment_requests_receipt_approved;`);
    this.addSql(`alter table payment_requests drop constraint if exists payment_requests_report_reason_len;`);
    this.addSql(`alter table payment_requests drop column if exists report_reason, drop column if exists reported_at, drop column if exists consent_receipt;`);
  }
}
