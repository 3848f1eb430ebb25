import { Migration } from '@mikro-orm/migrations';

/**
 * Partial refunds: a transaction remembers how much of it was refunded (never more than its
 * amount, enforced here), each refund is a row of its own, and it is REFUNDED exactly when all
 * of it was. Indexes for the admin graph's lookups by transaction, wallet and payment request.
 */
export class Migration20261122001200_partial_refunds extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table transactions add column refunded_amount numeric(18,2) not null default 0;`);
    this.addSql(`update transactions set refunded_amount = amount where status = 'REFUNDED';`);
    this.addSql(`alter table transactions add constraint transactions_refunded_amount_check
      check (refunded_amount >= 0 and refunded_amount <= amount and ((status = 'REFUNDED') = (refunded_amount = amount)));`);
    this.addSql(`create table refunds (
      id uuid primary key,
      transaction_id uuid not null references transactions (id),
      amount numeric(18,2) not null check (amount > 0),
      currency char(3) not null,
      created_at timestamptz not null default now()
    );`);
    this.addSql(`create index refunds_transaction_idx on refunds (transaction_id, created_at);`);
    this.addSql(`alter table ledger_entries add column refund_id uuid references refunds (id);`);
    this.addSql(`create index ledger_entries_transaction_idx on ledger_entries (transaction_id) where transaction_id is not null;`);
    this.addSql(`create index payment_requests_wallet_idx on payment_requests (wallet_id, created_at desc);`);
  }
}
