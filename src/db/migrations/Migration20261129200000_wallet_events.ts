import { Migration } from '@mikro-orm/migrations';

/**
 * The wallet app's own events (SPEC §16: the user learns of each passkey added or removed): the
 * outbox carries `passkey.added` and `passkey.removed` to the app's subscribers on every instance.
 * They are no merchant's: they have no developer (so no webhook endpoint wants them and the events
 * API, read by developer, never lists them), and a merchant's event always has one.
 */
export class Migration20261129200000_wallet_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table events drop constraint events_type_check;`);
    this.addSql(`alter table events alter column developer_id drop not null,
      add constraint events_type_check
      check (type in ('payment_request.created', 'payment_request.approved', 'payment_request.rejected', 'payment_request.cancelled',
                      'payment_request.expired', 'transaction.refunded', 'transaction.captured', 'transaction.voided',
                      'payout.created', 'payout.paid', 'payout.failed', 'passkey.added', 'passkey.removed')),
      add constraint events_wallet_only_check check ((developer_id is null) = (type in ('passkey.added', 'passkey.removed')));`);
  }
}
