import { Migration } from '@mikro-orm/migrations';

/**
 * Settlement (SPEC §16, src/settlement): fee schedules, the wallet company's own ledger account,
 * balance transactions (every change of a developer's available balance, with gross, fee and
 * net), payouts and the schedule's record of the cut-offs it ran. The rules that can be
 * constraints are constraints:
 *
 * - `developer_balances.balance` is the developer's available balance (what can be paid out, and
 *   what refunds draw on; `>= 0` as before); `in_payouts` is what PENDING payouts hold (`>= 0`).
 * - The ledger names the account of every entry: a wallet, a developer's available balance
 *   (DEVELOPER), a developer's money in payouts (DEVELOPER_PAYOUTS) or the wallet company's own
 *   account (COMPANY: no wallet and no developer; it earns the fees and funds adjustments).
 * - A balance transaction's `net` is `amount - fee`; only a payment has a fee, never more than its
 *   amount; one payment entry per transaction, one refund entry per refund, one `payout` entry per
 *   payout, one reversal per failed payout (unique indexes: a retry can never take a fee twice).
 * - A payout holds the balance transactions of its developer and currency created in
 *   [period_start, period_end) (its own `payout` entry excepted): periods are contiguous and never
 *   overlap, because `payout_accounts.paid_out_until` only moves forward (a conditional update)
 *   and (developer, currency, period_end) is unique: the same cut-off is never paid out twice,
 *   whichever instance runs it.
 *
 * Money that was already settled before this migration gets its balance transactions here (a
 * payment or a refund per ledger entry of a developer, fee 0), so Σ net = available from the start.
 */
export class Migration20261128100000_settlement extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table fee_schedules (
      developer_id uuid primary key references developers (id),
      percent numeric(4,2) not null check (percent >= 0 and percent <= 10),
      fixed numeric(18,2) not null check (fixed >= 0),
      updated_at timestamptz not null default now()
    );`);

    this.addSql(`alter table developer_balances add column in_payouts numeric(18,2) not null default 0 check (in_payouts >= 0);`);
    this.addSql(`comment on column developer_balances.balance is 'The available balance: what can be paid out (Σ net of the balance transactions).';`);
    this.addSql(`comment on column developer_balances.in_payouts is 'What PENDING payouts hold.';`);

    this.addSql(`create table payouts (
      id uuid primary key,
      developer_id uuid not null references developers (id),
      currency char(3) not null,
      status text not null default 'PENDING' check (status in ('PENDING', 'PAID', 'FAILED')),
      amount numeric(18,2) not null check (amount > 0),
      item_count int not null check (item_count > 0),
      period_start timestamptz not null,
      period_end timestamptz not null,
      created_at timestamptz not null,
      paid_at timestamptz,
      bank_reference text check (length(bank_reference) between 1 and 200 and bank_reference !~ '[[:cntrl:]]'),
      failed_at timestamptz,
      failure_reason text check (length(failure_reason) between 1 and 500 and failure_reason !~ '[[:cntrl:]]'),
      check (period_start <= period_end),
      check ((status = 'PAID') = (paid_at is not null) and (status = 'PAID') = (bank_reference is not null)),
      check ((status = 'FAILED') = (failed_at is not null) and (status = 'FAILED') = (failure_reason is not null)),
      unique (developer_id, currency, period_end)
    );`);
    this.addSql(`create index payouts_developer_idx on payouts (developer_id, created_at desc, id desc);`);
    this.addSql(`create index payouts_created_idx on payouts (created_at desc, id desc);`);

    this.addSql(`create table payout_accounts (
      developer_id uuid not null references developers (id),
      currency char(3) not null,
      paid_out_until timestamptz,
      primary key (developer_id, currency)
    );`);
    this.addSql(`comment on table payout_accounts is 'Per developer and currency: the cut-off its latest payout holds through; locked by each payout made, moved only forward.';`);

    this.addSql(`create table payout_runs (
      cutoff timestamptz primary key,
      payouts int not null check (payouts >= 0),
      finished_at timestamptz not null default now()
    );`);

    this.addSql(`create table balance_transactions (
      id uuid primary key,
      developer_id uuid not null references developers (id),
      type text not null check (type in ('payment', 'refund', 'payout', 'payout_reversal', 'adjustment')),
      amount numeric(18,2) not null check (amount <> 0),
      fee numeric(18,2) not null default 0 check (fee >= 0),
      net numeric(18,2) not null,
      currency char(3) not null,
      transaction_id uuid references transactions (id),
      refund_id uuid unique references refunds (id),
      payment_request_id uuid references payment_requests (id),
      reference text,
      payout_id uuid references payouts (id),
      created_at timestamptz not null,
      check (net = amount - fee),
      check (fee = 0 or type = 'payment'),
      check (case type
        when 'payment' then amount > 0 and fee <= amount and transaction_id is not null and payment_request_id is not null and payout_id is null
        when 'refund' then amount < 0 and transaction_id is not null and payment_request_id is not null and payout_id is null
        when 'payout' then amount < 0 and payout_id is not null and transaction_id is null
        when 'payout_reversal' then amount > 0 and payout_id is not null and transaction_id is null
        else transaction_id is null and payout_id is null end)
    );`);
    this.addSql(`comment on column balance_transactions.payout_id is 'A payout entry: the payout it made; a payout_reversal: the failed payout it reverses. Which payout holds an entry follows from the payouts'' periods.';`);
    this.addSql(`create unique index balance_transactions_payment_uq on balance_transactions (transaction_id) where type = 'payment';`);
    this.addSql(`create unique index balance_transactions_payout_uq on balance_transactions (payout_id, type) where payout_id is not null;`);
    this.addSql(`create index balance_transactions_developer_idx on balance_transactions (developer_id, created_at desc, id desc);`);
    // Payouts find and report their items by (developer, currency, time): one index range each.
    this.addSql(`create index balance_transactions_period_idx on balance_transactions (developer_id, currency, created_at, id) include (net);`);

    // The ledger names every entry's account; the wallet company's account has neither a wallet nor a developer.
    this.addSql(`alter table ledger_entries add column account text;`);
    this.addSql(`update ledger_entries set account = case when wallet_id is not null then 'WALLET' else 'DEVELOPER' end;`);
    this.addSql(`alter table ledger_entries alter column account set not null;`);
    this.addSql(`alter table ledger_entries drop constraint ledger_entries_check;`);
    this.addSql(`alter table ledger_entries add constraint ledger_entries_account_check check (
      account in ('WALLET', 'DEVELOPER', 'DEVELOPER_PAYOUTS', 'COMPANY')
      and (account = 'WALLET') = (wallet_id is not null)
      and (account in ('DEVELOPER', 'DEVELOPER_PAYOUTS')) = (developer_id is not null));`);
    this.addSql(`alter table ledger_entries drop constraint ledger_entries_kind_check;`);
    this.addSql(`alter table ledger_entries add constraint ledger_entries_kind_check
      check (kind in ('PAYMENT', 'REFUND', 'TOPUP', 'FEE', 'PAYOUT', 'PAYOUT_PAID', 'PAYOUT_REVERSAL', 'ADJUSTMENT'));`);
    this.addSql(`alter table ledger_entries add column payout_id uuid references payouts (id);`);
    this.addSql(`create index ledger_entries_company_idx on ledger_entries (currency) where account = 'COMPANY';`);

    // What was settled before: one balance transaction per developer ledger entry (fee 0).
    this.addSql(`insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, transaction_id, refund_id,
                                                   payment_request_id, reference, created_at)
      select gen_random_uuid(), l.developer_id, case l.kind when 'PAYMENT' then 'payment' else 'refund' end, l.amount, 0, l.amount,
             l.currency, l.transaction_id, l.refund_id, t.payment_request_id, pr.reference, l.created_at
        from ledger_entries l
        join transactions t on t.id = l.transaction_id
        join payment_requests pr on pr.id = t.payment_request_id
       where l.account = 'DEVELOPER' and l.kind in ('PAYMENT', 'REFUND');`);
  }
}
