import { Migration } from '@mikro-orm/migrations';

/**
 * MAX_PENDING_PER_PAYER (#24) at a constant cost per create: `payer_pending` holds, per developer
 * and wallet, how many of its payment requests are in status PENDING, kept by triggers on
 * `payment_requests` (so every writer, the gateway's doors or anything else, keeps it true) and
 * never below zero. The create locks the pair's row and reads the count there instead of
 * counting the pair's requests, whose number a developer controls (src/payment-requests
 * CREATE_SQL). Open requests (no wallet yet) are not counted.
 */
export class Migration20261126120000_payer_pending extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table payer_pending (
      developer_id uuid not null,
      wallet_id text not null,
      pending int not null check (pending >= 0),
      primary key (developer_id, wallet_id)
    );`);
    this.addSql(`create function payer_pending_count() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.status = 'PENDING' and old.wallet_id is not null then
    update payer_pending set pending = pending - 1 where developer_id = old.developer_id and wallet_id = old.wallet_id;
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.status = 'PENDING' and new.wallet_id is not null then
    insert into payer_pending as p (developer_id, wallet_id, pending) values (new.developer_id, new.wallet_id, 1)
      on conflict (developer_id, wallet_id) do update set pending = p.pending + 1;
  end if;
  return null;
end $$;`);
    this.addSql(`create trigger payer_pending_insert after insert on payment_requests
      for each row when (new.status = 'PENDING' and new.wallet_id is not null) execute function payer_pending_count();`);
    this.addSql(`create trigger payer_pending_update after update of status, wallet_id, developer_id on payment_requests
      for each row when ((old.status, old.wallet_id, old.developer_id) is distinct from (new.status, new.wallet_id, new.developer_id))
      execute function payer_pending_count();`);
    this.addSql(`create trigger payer_pending_delete after delete on payment_requests
      for each row when (old.status = 'PENDING' and old.wallet_id is not null) execute function payer_pending_count();`);
    this.addSql(`insert into payer_pending (developer_id, wallet_id, pending)
      select developer_id, wallet_id, count(*) from payment_requests where status = 'PENDING' and wallet_id is not null group by 1, 2;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop trigger if exists payer_pending_delete on payment_requests;`);
    this.addSql(`drop trigger if exists payer_pending_update on payment_requests;`);
    this.addSql(`drop trigger if exists payer_pending_insert on payment_requests;`);
    this.addSql(`drop function if exists payer_pending_count();`);
    this.addSql(`drop table if exists payer_pending;`);
  }
}
