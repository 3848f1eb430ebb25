import { Migration } from '@mikro-orm/migrations';

/**
 * Payout events (`payout.created`, `payout.paid`, `payout.failed`, SPEC §16) in the outbox: an
 * event's subject is a payment request or a payout (exactly one), each with its own sequence.
 * Webhook deliveries keep their subject's id in `webhook_deliveries.payment_request_id` (no
 * foreign key there), so one endpoint receives a payout's events in order as it does a payment
 * request's. The smallest change that lets a payout be an event's subject; the outbox's general
 * "subject" is the unit-of-work issue's (#31) to make.
 */
export class Migration20261128100100_payout_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table events alter column payment_request_id drop not null;`);
    this.addSql(`alter table events add column payout_id uuid references payouts (id);`);
    this.addSql(`alter table events add constraint events_subject_check check ((payment_request_id is null) <> (payout_id is null));`);
    this.addSql(`create unique index events_payout_sequence_uq on events (payout_id, sequence) where payout_id is not null;`);
    this.addSql(`alter table events drop constraint events_type_check;`);
    this.addSql(`alter table events add constraint events_type_check
      check (type in ('payment_request.created', 'payment_request.approved', 'payment_request.rejected', 'payment_request.cancelled',
                      'payment_request.expired', 'transaction.refunded', 'transaction.captured', 'transaction.voided',
                      'payout.created', 'payout.paid', 'payout.failed'));`);
    this.addSql(`comment on column webhook_deliveries.payment_request_id is 'The event''s subject: its payment request, or its payout. Deliveries of one subject to one endpoint go in sequence.';`);
  }
}
