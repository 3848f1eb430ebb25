import { Migration } from '@mikro-orm/migrations';

/**
 * Events about any subject, and the subscriber on the row (#31):
 * - `subject_id`: what an event is about (a payment request's id, or another subject's such as a
 *   payout's); events of one subject are numbered by `sequence` and webhook deliveries keep that
 *   order per endpoint and subject. `payment_request_id` stays for the events of payment requests
 *   (the events API filters by it) and may be null for other subjects.
 * - `user_id`: the wallet user the event concerns (the app's subscriptions), written with the
 *   event, so a read of the outbox needs no join with payment_requests and wallets: it is one
 *   range of the (xid, position) index whatever the statistics say.
 */
export class Migration20261127100000_event_subjects extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table events add column subject_id text, add column user_id text;`);
    this.addSql(`update events e set subject_id = e.payment_request_id::text,
      user_id = (select w.user_id from payment_requests pr join wallets w on w.id = pr.wallet_id where pr.id = e.payment_request_id);`);
    this.addSql(`alter table events alter column subject_id set not null, alter column payment_request_id drop not null,
      drop constraint events_payment_request_id_sequence_key,
      add constraint events_subject_sequence_key unique (subject_id, sequence),
      add constraint events_payment_request_subject check (payment_request_id is null or subject_id = payment_request_id::text);`);
    this.addSql(`alter table webhook_deliveries add column subject_id text;`);
    this.addSql(`update webhook_deliveries set subject_id = payment_request_id::text;`);
    this.addSql(`alter table webhook_deliveries alter column subject_id set not null, drop column payment_request_id;`);
    this.addSql(`drop index if exists webhook_deliveries_order_idx;`);
    this.addSql(`create index webhook_deliveries_order_idx on webhook_deliveries (endpoint_id, subject_id, sequence) where status = 'PENDING';`);
  }
}
