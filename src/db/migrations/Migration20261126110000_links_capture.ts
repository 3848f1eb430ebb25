import { Migration } from '@mikro-orm/migrations';

/**
 * Links, QR codes, per-request lifetimes and manual capture (SPEC §15, issue #25).
 *
 * - A payment request may be open (`open_link`): no wallet until its first approval binds one
 *   (`wallet_id` becomes nullable; an APPROVED request always has one).
 * - Every request has an unguessable `code` (unique; its link is `payment_url`, fixed at
 *   creation so a printed QR code keeps pointing where it was printed to). The gateway writes
 *   both; a row written outside its doors (existing rows, load tests' SQL) gets a code of two
 *   random UUIDs' hex (244 random bits) from the default and no `payment_url` (read as the
 *   relative `/pay/<code>`).
 * - `capture` (AUTOMATIC | MANUAL). A MANUAL approval holds the amount: the transaction is
 *   PENDING with `hold_expires_at`, `captured_amount` null, and the wallet's `held` total grows.
 *   The CHECKs: held never negative nor above the balance (available = balance - held >= 0), a
 *   capture never above the authorised amount, refunds only of captured money.
 */
export class Migration20261126110000_links_capture extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table payment_requests
      alter column wallet_id drop not null,
      add column open_link boolean not null default false,
      add column capture text not null default 'AUTOMATIC' check (capture in ('AUTOMATIC', 'MANUAL')),
      add column code text not null default replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
      add column payment_url text;`);
    this.addSql(`alter table payment_requests
      add constraint payment_requests_code_check check (code ~ '^[A-Za-z0-9_-]{22,}$'),
      add constraint payment_requests_wallet_check check (open_link or wallet_id is not null),
      add constraint payment_requests_approved_wallet_check check (status <> 'APPROVED' or wallet_id is not null);`);
    this.addSql(`create unique index payment_requests_code_uq on payment_requests (code);`);

    this.addSql(`alter table wallets add column held numeric(18,2) not null default 0;`);
    this.addSql(`alter table wallets add constraint wallets_held_check check (held >= 0 and held <= balance);`);

    this.addSql(`alter table transactions
      add column captured_amount numeric(18,2),
      add column hold_expires_at timestamptz;`);
    this.addSql(`update transactions set captured_amount = amount where status in ('COMPLETED', 'REFUNDED');`);
    this.addSql(`alter table transactions drop constraint transactions_refunded_amount_check;`);
    this.addSql(`alter table transactions
      add constraint transactions_captured_amount_check
        check (captured_amount is null or (captured_amount > 0 and captured_amount <= amount)),
      add constraint transactions_capture_state_check
        check (case status when 'PENDING' then captured_amount is null and hold_expires_at is not null
                           when 'CANCELLED' then captured_amount is null
                           when 'COMPLETED' then captured_amount is not null
                           when 'REFUNDED' then captured_amount is not null
                           else true end),
      add constraint transactions_refunded_amount_check
        check (refunded_amount >= 0 and refunded_amount <= coalesce(captured_amount, 0)
               and ((status = 'REFUNDED') = (captured_amount is not null and refunded_amount = captured_amount)));`);
    this.addSql(`create index transactions_hold_expiry_idx on transactions (hold_expires_at) where status = 'PENDING';`);
    this.addSql(`create index transactions_wallet_pending_idx on transactions (wallet_id) where status = 'PENDING';`);

    this.addSql(`alter table events drop constraint events_type_check;`);
    this.addSql(`alter table events add constraint events_type_check
      check (type in ('payment_request.created', 'payment_request.approved', 'payment_request.rejected',
                      'payment_request.cancelled', 'payment_request.expired', 'transaction.refunded',
                      'transaction.captured', 'transaction.voided'));`);
  }
}
