import { Entity, PrimaryKey, Property } from '@mikro-orm/core';

/** One side of a balance change (read-only here: src/ledger/ledger.ts writes them). */
@Entity({ tableName: 'ledger_entries' })
export class LedgerEntry {
  @PrimaryKey({ type: 'bigint' })
  id!: string;

  @Property({ type: 'text' })
  kind!: 'PAYMENT' | 'REFUND' | 'TOPUP' | 'FEE' | 'PAYOUT' | 'PAYOUT_PAID' | 'PAYOUT_REVERSAL' | 'ADJUSTMENT';

  /** WALLET, DEVELOPER (its available balance), DEVELOPER_PAYOUTS (its money in payouts) or COMPANY (the wallet company's own account). */
  @Property({ type: 'text' })
  account!: 'WALLET' | 'DEVELOPER' | 'DEVELOPER_PAYOUTS' | 'COMPANY';

  @Property({ type: 'uuid', nullable: true })
  transactionId!: string | null;

  @Property({ type: 'uuid', nullable: true })
  refundId!: string | null;

  @Property({ type: 'text', nullable: true })
  walletId!: string | null;

  @Property({ type: 'uuid', nullable: true })
  developerId!: string | null;

  /** The payout a PAYOUT, PAYOUT_PAID or PAYOUT_REVERSAL entry moves. */
  @Property({ type: 'uuid', nullable: true })
  payoutId!: string | null;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  amount!: string;

  @Property({ type: 'text' })
  currency!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt!: Date;
}
