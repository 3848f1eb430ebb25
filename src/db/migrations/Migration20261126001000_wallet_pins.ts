import { Migration } from '@mikro-orm/migrations';

/**
 * Per-wallet approval credentials (src/consent): the transaction PIN's slow salted hash and the
 * attempt counter every instance shares. Kept out of `wallets` (and so out of every GraphQL type
 * and list that reads wallets). A wallet without a row (made outside the gateway's doors) cannot
 * approve until an operator sets a PIN.
 */
export class Migration20261126001000_wallet_pins extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table wallet_pins (
      wallet_id text primary key references wallets (id),
      pin_hash text not null check (pin_hash like 'scrypt$%'),
      failures int not null default 0 check (failures >= 0),
      locked_until timestamptz,
      updated_at timestamptz not null default now()
    );`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists wallet_pins;`);
  }
}
