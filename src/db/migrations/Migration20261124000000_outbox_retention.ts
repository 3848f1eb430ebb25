import { Migration } from '@mikro-orm/migrations';

/**
 * The outbox at any size (#17). The outbox readers find new rows through `events_xid_idx` (xid,
 * position) and the events API through `events_developer_idx`; nothing looks rows up by
 * `position` alone, so its primary-key index goes (one index fewer to write per event; position
 * stays unique, it is a sequence). Retention (src/maintenance.ts) deletes by age: BRIN indexes on
 * the creation times (a few pages, nearly free to maintain on these append-only tables) and an
 * index from attempts to their delivery (deleting a delivery checks its attempts).
 */
export class Migration20261124000000_outbox_retention extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table events drop constraint events_pkey;`);
    this.addSql(`create index events_created_brin on events using brin (created_at);`);
    this.addSql(`create index webhook_deliveries_created_brin on webhook_deliveries using brin (created_at);`);
    this.addSql(`create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id);`);
  }
}
