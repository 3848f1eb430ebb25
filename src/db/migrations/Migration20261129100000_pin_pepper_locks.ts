import { Migration } from '@mikro-orm/migrations';

/**
 * PINs under a pepper and a guessing budget that ends (SPEC §16): `pin_hash` also holds the keyed
 * form `hmac$…` (the scrypt form moves to it at each PIN's next successful verification), and
 * `locks` counts the locks since the last successful verification; the PIN_MAX_LOCKS-th lock
 * lasts until an operator lifts it (`locked_until` = 'infinity').
 */
export class Migration20261129100000_pin_pepper_locks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table wallet_pins drop constraint wallet_pins_pin_hash_check;`);
    this.addSql(`alter table wallet_pins add constraint wallet_pins_pin_hash_check check (pin_hash like 'hmac$%' or pin_hash like 'scrypt$%');`);
    this.addSql(`alter table wallet_pins add column locks int not null default 0 check (locks >= 0);`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table wallet_pins drop column locks;`);
    this.addSql(`alter table wallet_pins drop constraint wallet_pins_pin_hash_check;`);
    this.addSql(`alter table wallet_pins add constraint wallet_pins_pin_hash_check check (pin_hash like 'scrypt$%');`);
  }
}
