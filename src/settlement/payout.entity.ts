import { Entity, Enum, PrimaryKey, Property } from '@mikro-orm/core';
import { registerEnumType } from 'type-graphql';

/** A payout's state: made (PENDING), then PAID by an operator with the bank's reference, or FAILED (its money back to available). */
export enum PayoutStatus {
  PENDING = 'PENDING',
  PAID = 'PAID',
  FAILED = 'FAILED',
}
registerEnumType(PayoutStatus, { name: 'PayoutStatus', description: 'PENDING (made, not yet paid), PAID or FAILED (its money back to available).' });

/**
 * One payout: a developer's available balance in one currency, as the balance transactions of
 * [periodStart, periodEnd) add up, on its way to the developer's bank (src/settlement/payout.service.ts).
 */
@Entity({ tableName: 'payouts' })
export class Payout {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  developerId!: string;

  @Property({ type: 'text' })
  currency!: string;

  @Enum({ items: () => PayoutStatus, type: 'text' })
  status!: PayoutStatus;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  amount!: string;

  @Property({ type: 'integer' })
  itemCount!: number;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  periodStart!: Date;

  /** The cut-off: its items were made before it. */
  @Property({ type: 'datetime', columnType: 'timestamptz' })
  periodEnd!: Date;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt!: Date;

  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  paidAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  bankReference: string | null = null;

  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  failedAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  failureReason: string | null = null;
}
