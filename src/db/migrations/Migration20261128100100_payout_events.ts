import { Migration } from '@mikro-orm/migrations';

/**
 * Payout events (`payout.created`, `payout.paid`, `payout.failed`, SPEC §16): a payout is an
 * event's subject (`events.subject_id`, migration event_subjects) with no payment request; the
 * outbox's type CHECK gains the three types.
 */
export class Migration20261128100100_payout_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table events drop constraint events_type_check;`);
    this.addSql(`alter table events add constraint events_type_check
      check (type in ('payment_request.created', 'payment_request.approved', 'payment_request.rejected', 'payment_request.cancelled',
                      'payment_request.expired', 'transaction.refunded', 'transaction.captured', 'transaction.voided',
                      'payout.created', 'payout.paid', 'payout.failed'));`);
  }
}
