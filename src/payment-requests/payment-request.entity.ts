import { Entity, Enum, Formula, PrimaryKey, Property, type Opt } from '@mikro-orm/core';
import { randomBytes, randomUUID } from 'node:crypto';
import { registerEnumType } from 'type-graphql';

export enum PaymentRequestStatus {
  PENDING = 'PENDING',
  APPROVED = 'APPROVED',
  REJECTED = 'REJECTED',
  EXPIRED = 'EXPIRED',
  CANCELLED = 'CANCELLED',
}
registerEnumType(PaymentRequestStatus, { name: 'PaymentRequestStatus' });

/** When an approval moves the money: at once (AUTOMATIC), or held until the merchant captures it (MANUAL). */
export enum CaptureMode {
  AUTOMATIC = 'AUTOMATIC',
  MANUAL = 'MANUAL',
}
registerEnumType(CaptureMode, {
  name: 'CaptureMode',
  description: 'AUTOMATIC: the approval moves the money. MANUAL: the approval holds it until captured or voided.',
});

/**
 * SQL: "this PENDING request is past its expiresAt" by the database's clock — the one clock
 * every expiry decision reads (reads, transitions, the sweeper and filters).
 */
export const overdueSql = (alias: string): string => `(${alias}.status = 'PENDING' and ${alias}.expires_at <= now())`;

/** SQL twin of `effectiveStatus`: the status a client sees, for filters. */
export const effectiveStatusSql = (alias: string): string =>
  `(case when ${overdueSql(alias)} then 'EXPIRED' else ${alias}.status::text end)`;

/** A link's code: 18 random bytes as base64url (24 characters, 144 bits); never derived from the id. */
export function newPaymentCode(): string {
  return randomBytes(18).toString('base64url');
}

/** A developer's request for money from a wallet, waiting for the user's decision. */
@Entity({ tableName: 'payment_requests' })
export class PaymentRequest {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  developerId!: string;

  /** The payer's wallet; null for an open request (a link) until its first approval binds it. */
  @Property({ type: 'text', nullable: true })
  walletId!: string | null;

  /** Made by POST /wallet/payment-links: any wallet user may pay it (the first approval binds it). */
  @Property({ type: 'boolean' })
  openLink: Opt<boolean> = false;

  @Enum({ items: () => CaptureMode, columnType: 'text' })
  capture: Opt<CaptureMode> = CaptureMode.AUTOMATIC;

  /** The unguessable code of its link (base64url, 144 random bits; not the id). */
  @Property({ type: 'text' })
  code: Opt<string> = newPaymentCode();

  /**
   * PUBLIC_BASE_URL + /pay/ + code, fixed at creation (a printed QR code stays valid); null only
   * for a row written outside the gateway's doors (read as the relative /pay/<code>).
   */
  @Property({ type: 'text', nullable: true })
  paymentUrl!: string | null;

  @Property({ type: 'decimal', columnType: 'numeric(18,2)' })
  amount!: string;

  @Property({ type: 'text' })
  currency!: string;

  @Property({ type: 'text' })
  description!: string;

  @Property({ type: 'text' })
  merchantName!: string;

  @Enum({ items: () => PaymentRequestStatus, nativeEnumName: 'payment_request_status' })
  status: PaymentRequestStatus = PaymentRequestStatus.PENDING;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  createdAt!: Date;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'datetime', columnType: 'timestamptz' })
  updatedAt!: Date;

  @Property({ type: 'uuid', nullable: true })
  transactionId: string | null = null;

  /** Read with the row: PENDING and past `expiresAt` by the database's clock (see effectiveStatus). */
  @Formula((table) => overdueSql(table.alias))
  overdue?: boolean;

  /** The merchant's own reference (its order id): 1-64 printable characters, not unique. */
  @Property({ type: 'text', nullable: true })
  reference: string | null = null;

  /** The merchant's metadata: at most 20 string keys (≤ 40 characters) with string values (≤ 500). */
  @Property({ type: 'json', columnType: 'jsonb', nullable: true })
  metadata: Record<string, string> | null = null;

  /** The developer's Idempotency-Key, if it sent one; unique per developer. */
  @Property({ type: 'text', nullable: true })
  idempotencyKey: string | null = null;

  /** The signed consent receipt (compact JWS, src/consent), set in the approval's transaction; null until APPROVED. */
  @Property({ type: 'text', nullable: true })
  consentReceipt: string | null = null;

  // reported_at and report_reason (the payer's report, src/consent) are deliberately not mapped:
  // no read of a request carries them; only the operators' graph reads them (src/admin/loaders.ts).
}
