import { Migration } from '@mikro-orm/migrations';

/**
 * The endpoint list shows each endpoint's last delivery attempt (issue 20): an index to read it
 * per endpoint without scanning every attempt. (Pending deliveries per endpoint are counted
 * from webhook_deliveries_order_idx, which covers exactly the PENDING rows by endpoint.)
 */
export class Migration20261123002000_webhook_endpoint_activity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index webhook_attempts_endpoint_idx on webhook_attempts (endpoint_id, attempted_at desc, id desc);`);
  }
}
