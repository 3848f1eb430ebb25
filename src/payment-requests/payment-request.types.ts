import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import { CaptureMode, PaymentRequestStatus, type PaymentRequest } from './payment-request.entity.js';
import { effectiveStatus, effectiveUpdatedAt, paymentUrlOf } from './payment-request.rules.js';
import { toAmountNumber } from '../money.js';

@ObjectType('PaymentRequest', { description: 'A request for money from a wallet, as its developer and its user see it.' })
export class PaymentRequestView {
  @Field(() => ID)
  id!: string;

  @Field(() => PaymentRequestStatus, { description: 'EXPIRED from expiresAt on, even before the sweeper ran.' })
  status!: PaymentRequestStatus;

  @Field(() => Float)
  amount!: number;

  @Field(() => String, { description: 'ISO 4217 code (the wallet’s currency).' })
  currency!: string;

  @Field(() => String)
  description!: string;

  @Field(() => String)
  merchantName!: string;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date)
  expiresAt!: Date;

  @Field(() => Date)
  updatedAt!: Date;

  @Field(() => ID, { nullable: true, description: 'Set when the request is APPROVED.' })
  transactionId!: string | null;

  @Field(() => String, { nullable: true, description: "The merchant's own reference (its order id), as sent." })
  reference!: string | null;

  @Field(() => GraphQLJSONObject, { nullable: true, description: "The merchant's metadata (string keys and values), as sent." })
  metadata!: Record<string, string> | null;

  @Field(() => String, {
    nullable: true,
    description:
      'Once APPROVED: the consent receipt, a compact JWS (EdDSA, typ consent+jwt) over what the payer approved and how, verifiable with the keys at GET /.well-known/jwks.json. Null before.',
  })
  consentReceipt!: string | null;
  @Field(() => String, { description: 'Where the payer opens it: PUBLIC_BASE_URL + /pay/ + an unguessable code (the QR code carries it).' })
  paymentUrl!: string;

  @Field(() => CaptureMode, { description: 'AUTOMATIC: the approval moves the money. MANUAL: it holds it until captured.' })
  capture!: CaptureMode;

  @Field(() => Boolean, {
    nullable: true,
    description:
      'paymentRequestByCode (wallet app) only: true when I blocked this request\'s developer; approving it then answers MERCHANT_BLOCKED (nothing changes) until I unblock. Null on every other read (a developer never learns of a block).',
  })
  merchantBlocked?: boolean | null;

  static from(pr: PaymentRequest): PaymentRequestView {
    return Object.assign(new PaymentRequestView(), {
      id: pr.id,
      status: effectiveStatus(pr),
      amount: toAmountNumber(pr.amount),
      currency: pr.currency,
      description: pr.description,
      merchantName: pr.merchantName,
      createdAt: pr.createdAt,
      expiresAt: pr.expiresAt,
      updatedAt: effectiveUpdatedAt(pr),
      transactionId: pr.transactionId,
      reference: pr.reference,
      metadata: pr.metadata,
      consentReceipt: pr.consentReceipt ?? null,
      paymentUrl: paymentUrlOf(pr),
      capture: pr.capture,
    });
  }
}

/**
 * The fields of the PaymentRequestStatus body (GET /wallet/payment-request/{id}); the REST route
 * selects exactly these and event payloads carry exactly these, so the two cannot drift.
 */
export const PAYMENT_REQUEST_STATUS_FIELDS = [
  'id',
  'status',
  'amount',
  'currency',
  'description',
  'merchantName',
  'createdAt',
  'expiresAt',
  'updatedAt',
  'transactionId',
  'reference',
  'metadata',
  'consentReceipt',
  'paymentUrl',
] as const satisfies ReadonlyArray<keyof PaymentRequestView>;

@ObjectType('PaymentRequestPage', { description: 'Payment requests, newest first.' })
export class PaymentRequestPage {
  @Field(() => [PaymentRequestView])
  data!: PaymentRequestView[];

  @Field(() => Boolean, { description: 'More requests match than were returned: pass nextAfter as after for the next page.' })
  hasMore!: boolean;

  @Field(() => ID, { nullable: true, description: 'The last request of this page when hasMore, else null.' })
  nextAfter!: string | null;

  static from(page: { data: PaymentRequest[]; hasMore: boolean; nextAfter: string | null }): PaymentRequestPage {
    return Object.assign(new PaymentRequestPage(), { data: page.data.map((pr) => PaymentRequestView.from(pr)), hasMore: page.hasMore, nextAfter: page.nextAfter });
  }
}

@ObjectType('PaymentRequestResponse', { description: 'Result of requestPayment.' })
export class PaymentRequestResponse {
  @Field(() => Boolean)
  success!: boolean;

  @Field(() => String)
  message!: string;

  @Field(() => ID, { nullable: true })
  paymentRequestId?: string;

  @Field(() => PaymentRequestStatus, { nullable: true })
  status?: PaymentRequestStatus;

  @Field(() => Date, { nullable: true })
  expiresAt?: Date;

  @Field(() => String, { nullable: true, description: 'PUBLIC_BASE_URL + /pay/ + the request’s code: the link (and QR code) a payer opens.' })
  paymentUrl?: string;

  /** The answer to a successful requestPayment: what the resolver returns and what the Idempotency-Key record keeps. */
  static created(pr: PaymentRequest): PaymentRequestResponse {
    return Object.assign(new PaymentRequestResponse(), {
      success: true,
      message: 'Payment request created; waiting for the user to approve it',
      paymentRequestId: pr.id,
      status: pr.status,
      expiresAt: pr.expiresAt,
      paymentUrl: paymentUrlOf(pr),
    });
  }
}

@InputType('PaymentLinkInput', {
  description: 'POST /wallet/payment-links: request-payment’s body without walletId (an open request any wallet user may pay).',
})
export class PaymentLinkInput {
  @Field(() => Float, { description: '0.01 to MAX_AMOUNT, at most 2 decimal places.' })
  amount!: number;

  @Field(() => String, { description: '1-255 characters after trimming.' })
  description!: string;

  @Field(() => String, { description: '1-100 characters after trimming.' })
  merchantName!: string;

  @Field(() => String, { nullable: true, description: "The merchant's own reference (its order id): 1-64 printable characters; not unique." })
  reference?: string | null;

  @Field(() => GraphQLJSONObject, {
    nullable: true,
    description: 'At most 20 keys of 1-40 characters, each with a string value of at most 500 characters.',
  })
  metadata?: Record<string, unknown> | null;

  @Field(() => Int, { nullable: true, description: 'The request’s lifetime in seconds: 60 to 86400; default PAYMENT_REQUEST_TTL_SECONDS.' })
  expiresInSeconds?: number | null;

  @Field(() => String, {
    nullable: true,
    description: 'AUTOMATIC (default): the approval moves the money. MANUAL: it holds it on the wallet until captured or voided.',
  })
  capture?: string | null;
}

@InputType('RequestPaymentInput', {
  description: 'The four documented fields of POST /wallet/request-payment, plus the optional reference, metadata, expiresInSeconds and capture.',
})
export class RequestPaymentInput extends PaymentLinkInput {
  @Field(() => String, { description: 'From walletId(identifier).' })
  walletId!: string;
}

/**
 * The two subscription payloads declare exactly the fields SPEC §8 names; resolvers return a
 * PaymentRequestView (a superset) and GraphQL sends only the declared fields.
 */
@ObjectType('PaymentRequestNotification', { description: 'Sent to the wallet owner when a payment request is created.' })
export class PaymentRequestNotification {
  @Field(() => ID) id!: string;
  @Field(() => Float) amount!: number;
  @Field(() => String) currency!: string;
  @Field(() => String) description!: string;
  @Field(() => String) merchantName!: string;
  @Field(() => PaymentRequestStatus) status!: PaymentRequestStatus;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) expiresAt!: Date;
}

@ObjectType('PaymentRequestUpdate', { description: 'Sent to the wallet owner on every status change of a payment request.' })
export class PaymentRequestUpdate {
  @Field(() => ID) id!: string;
  @Field(() => PaymentRequestStatus) status!: PaymentRequestStatus;
  @Field(() => Date) updatedAt!: Date;
  @Field(() => ID, { nullable: true }) transactionId!: string | null;
}
