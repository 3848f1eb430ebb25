import { Field, Float, ID, ObjectType } from 'type-graphql';
import { PaymentProvider, TransactionStatus, TransactionType, type Transaction } from './transaction.entity.js';
import { toAmountNumber } from '../money.js';

/** A transaction as clients see it: deliberately without any user, wallet or developer identifier. */
@ObjectType('Transaction', { description: 'Money moved for an approved payment request. Never says who paid.' })
export class TransactionView {
  @Field(() => ID)
  id!: string;

  @Field(() => Float)
  amount!: number;

  @Field(() => String)
  currency!: string;

  @Field(() => TransactionStatus)
  status!: TransactionStatus;

  @Field(() => TransactionType)
  type!: TransactionType;

  @Field(() => String)
  description!: string;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date)
  updatedAt!: Date;

  @Field(() => PaymentProvider)
  paymentProvider!: PaymentProvider;

  @Field(() => Float, { description: 'How much of amount has been refunded (REFUNDED once it is all of it).' })
  refundedAmount!: number;

  @Field(() => String, { description: 'WPAY + 12 digits + "-" + 6 of A-Z0-9, e.g. WPAY000000001234-X7K2QD.' })
  paymentReference!: string;

  @Field(() => String, {
    nullable: true,
    description:
      "The approval's consent receipt (as on its payment request): a compact JWS (EdDSA, typ consent+jwt), verifiable with the keys at GET /.well-known/jwks.json.",
  })
  consentReceipt!: string | null;

  static from(tx: Transaction): TransactionView {
    return Object.assign(new TransactionView(), {
      id: tx.id,
      amount: toAmountNumber(tx.amount),
      currency: tx.currency,
      status: tx.status,
      type: tx.type,
      description: tx.description,
      createdAt: tx.createdAt,
      updatedAt: tx.updatedAt,
      paymentProvider: tx.paymentProvider,
      paymentReference: tx.paymentReference,
      refundedAmount: toAmountNumber(tx.refundedAmount),
      consentReceipt: tx.consentReceipt ?? null,
    });
  }
}

/** The fields of the Transaction body (GET /wallet/transaction/{id}); event payloads carry exactly these. */
export const TRANSACTION_FIELDS = [
  'id',
  'amount',
  'currency',
  'status',
  'type',
  'description',
  'createdAt',
  'updatedAt',
  'paymentProvider',
  'paymentReference',
  'consentReceipt',
  'refundedAmount',
] as const satisfies ReadonlyArray<keyof TransactionView>;
