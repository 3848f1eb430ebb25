import { Migration } from '@mikro-orm/migrations';

/**
 * The audit log of admin mutations and data-changing CLI commands. Append-only in the database
 * itself: triggers refuse every UPDATE, DELETE and TRUNCATE, whoever asks.
 */
export class Migration20261122001100_audit_log extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table audit_log (
      id bigserial primary key,
      -- milliseconds, like every other created_at: the page cursor carries a JavaScript Date
      at timestamptz not null default date_trunc('milliseconds', now()),
      actor text not null check (length(actor) between 1 and 100),
      operator_id uuid references operators (id),
      operation text not null check (length(operation) between 1 and 200),
      arguments jsonb not null default '{}'::jsonb,
      outcome text not null check (length(outcome) between 1 and 100),
      request_id text
    );`);
    // Pages run newest first over (at, id), optionally per actor, operator or operation.
    this.addSql(`create index audit_log_page_idx on audit_log (at desc, id desc);`);
    this.addSql(`create index audit_log_actor_idx on audit_log (actor, at desc, id desc);`);
    this.addSql(`create index audit_log_operator_idx on audit_log (operator_id, at desc, id desc) where operator_id is not null;`);
    this.addSql(`create index audit_log_operation_idx on audit_log (operation, at desc, id desc);`);
    this.addSql(`create function audit_log_append_only() returns trigger language plpgsql as $$
      begin
        raise exception 'audit_log is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
      end;
    $$;`);
    this.addSql(`create trigger audit_log_no_update_delete before update or delete on audit_log
      for each row execute function audit_log_append_only();`);
    this.addSql(`create trigger audit_log_no_truncate before truncate on audit_log
      for each statement execute function audit_log_append_only();`);
  }
}
