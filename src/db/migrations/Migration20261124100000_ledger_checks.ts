import { Migration } from '@mikro-orm/migrations';

/**
 * The results of the scheduled ledger checks (Σ ledger entries = balance for every wallet and
 * developer balance): one row a run, whichever instance ran it. /metrics reports the latest one,
 * so every instance and worker shows the same figure, and the check itself runs once an interval.
 */
export class Migration20261124100000_ledger_checks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table ledger_checks (
      id bigserial primary key,
      checked_at timestamptz not null default now(),
      ok boolean not null,
      mismatches int not null check (mismatches >= 0),
      checked_wallets int not null,
      checked_developers int not null,
      duration_ms int not null check (duration_ms >= 0),
      check (ok = (mismatches = 0))
    );`);
    this.addSql(`create index ledger_checks_checked_at_idx on ledger_checks (checked_at desc);`);
  }
}
