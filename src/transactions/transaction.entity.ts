import { Entity, Enum, Formula, PrimaryKey, Property } from '@mikro-orm/core';
import { registerEnumType } from 'type-graphql';

export enum TransactionStatus {
  PENDING = 'PENDING',
  PROCESSING = 'PROCESSING',
  COMPLETED = 'COMPLETED',
  FAILED = 'FAILED',
  CANCELLED = 'CANCELLED',
  REFUNDED = 'REFUNDED',
}
registerEnumType(TransactionStatus, { name: 'TransactionStatus' });

export enum TransactionType {
  WALLET_PAYMENT = 'WALLET_PAYMENT',
}
registerEnumType(TransactionType, { name: 'TransactionType' });

export enum PaymentProvider {
  WALLET = 'WALLET',
}
registerEnumType(PaymentProvider, { name: 'PaymentProvider' });

/**
 * Money that moved for an approved payment request. The payer's wallet and the developer are
 * kept for the ledger and for ownership checks; no GraphQL field ever exposes them.
 */
@Entity({ tableName: 'transactions' })
export class Transaction {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  paymentRequestId!: string;

  @Property({ type: 'text' })
  walletId!: string;

  @Property({ type: 'uuid' })
  developerId!: string;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  amount!: string;

  @Property({ type: 'text' })
  currency!: string;

  /** How much of `amount` operators have refunded so far (REFUNDED once it is all of it). */
  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  refundedAmount: string = '0.00';

  /** What was captured (MANUAL: set at capture; AUTOMATIC: the amount at once); null while held or after a void. */
  @Property({ type: 'decimal', columnType: 'numeric(18,2)', nullable: true })
  capturedAmount: string | null = null;

  /** A held (MANUAL) transaction: when the hold is voided by itself if not captured. */
  @Property({ type: 'datetime', columnType: 'timestamptz', nullable: true })
  holdExpiresAt: Date | null = null;

  @Enum({ items: () => TransactionStatus, nativeEnumName: 'transaction_status' })
  status!: TransactionStatus;

  @Property({ type: 'text' })
  type: TransactionType = TransactionType.WALLET_PAYMENT;

  @Property({ type: 'text' })
  description!: string;

  @Property({ type: 'text' })
  paymentProvider: PaymentProvider = PaymentProvider.WALLET;

  @Property({ type: 'text' })
  paymentReference!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt!: Date;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  updatedAt!: Date;

  /** Its payment request's consent receipt (kept there, read with the row: no query of its own). */
  @Formula((table) => `(select cr.consent_receipt from payment_requests cr where cr.id = ${table.alias}.payment_request_id)`)
  consentReceipt?: string | null;
}

/** One refund of (part of) a transaction, by an operator. */
@Entity({ tableName: 'refunds' })
export class Refund {
  @PrimaryKey({ type: 'uuid' })
  id!: string;

  @Property({ type: 'uuid' })
  transactionId!: string;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  amount!: string;

  @Property({ type: 'text' })
  currency!: string;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt!: Date;
}
