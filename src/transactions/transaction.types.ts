import { Field, Float, ID, InputType, ObjectType } from 'type-graphql';
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

  @Field(() => Float, {
    nullable: true,
    description: 'What was captured: the amount for an AUTOMATIC payment; for a MANUAL one null while held (PENDING) or voided (CANCELLED), then what the merchant captured.',
  })
  capturedAmount!: number | null;

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
      capturedAmount: tx.capturedAmount === null ? null : toAmountNumber(tx.capturedAmount),
    });
  }
}

/** The body of POST /wallet/transaction/{id}/capture (optional). */
@InputType('CaptureTransactionInput', { description: 'What to capture of a held transaction.' })
export class CaptureTransactionInput {
  @Field(() => Float, { nullable: true, description: 'More than 0, at most the held amount, 2 decimals at most; default all of it.' })
  amount?: number | null;
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
  'capturedAmount',
] as const satisfies ReadonlyArray<keyof TransactionView>;
