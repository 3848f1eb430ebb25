import { Entity, Enum, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { registerEnumType } from 'type-graphql';

export enum WalletStatus {
  ACTIVE = 'ACTIVE',
  SUSPENDED = 'SUSPENDED',
  CLOSED = 'CLOSED',
}
registerEnumType(WalletStatus, { name: 'WalletStatus', description: 'Whether a wallet can pay.' });

/** A user's wallet. The balance is NUMERIC(18,2) (a decimal string here) and never below zero. */
@Entity({ tableName: 'wallets' })
export class Wallet {
  /** Opaque, unguessable identifier (`wlt_` + random). */
  @PrimaryKey({ type: 'text' })
  id!: string;

  @Property({ type: 'uuid' })
  userId!: string;

  @Enum({ items: () => WalletStatus, nativeEnumName: 'wallet_status' })
  status: WalletStatus = WalletStatus.ACTIVE;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  balance: string = '0.00';

  /** The sum of its active holds (MANUAL approvals not yet captured or voided); never above the balance. */
  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  held: Opt<string> = '0.00';

  @Property({ type: 'text' })
  currency!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
