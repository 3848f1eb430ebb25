import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/**
 * A wallet's approval credential (table `wallet_pins`): the transaction PIN's hash and the
 * attempt counter shared by every instance. Never a GraphQL type, never read with the wallet.
 * The counting itself is done by conditional UPDATEs in src/consent/consent.service.ts.
 */
@Entity({ tableName: 'wallet_pins' })
export class WalletPin {
  @PrimaryKey({ type: 'text' })
  walletId!: string;

  /** `hmac$pepperId$salt$mac`, or the earlier `scrypt$N$r$p$salt$hash` until its next success (src/consent/pin.ts). */
  @Property({ type: 'text', hidden: true, lazy: true })
  pinHash!: string;

  /** Failed verifications in a row since the last success or lock. */
  @Property({ type: 'integer' })
  failures: number = 0;

  /** Locks since the last successful verification; the PIN_MAX_LOCKS-th lasts until an operator unlocks. */
  @Property({ type: 'integer' })
  locks: number = 0;

  /** Approvals of the wallet are refused until then ('infinity': until an operator unlocks). */
  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  lockedUntil: Date | null = null;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  updatedAt: Date = new Date();
}
