import { Entity, Enum, Formula, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { registerEnumType } from 'type-graphql';

export enum PaymentRequestStatus {
  PENDING = 'PENDING',
  APPROVED = 'APPROVED',
  REJECTED = 'REJECTED',
  EXPIRED = 'EXPIRED',
  CANCELLED = 'CANCELLED',
}
registerEnumType(PaymentRequestStatus, { name: 'PaymentRequestStatus' });

/**
 * SQL: "this PENDING request is past its expiresAt" by the database's clock — the one clock
 * every expiry decision reads (reads, transitions, the sweeper and filters).
 */
export const overdueSql = (alias: string): string => `(${alias}.status = 'PENDING' and ${alias}.expires_at <= now())`;

/** SQL twin of `effectiveStatus`: the status a client sees, for filters. */
export const effectiveStatusSql = (alias: string): string =>
  `(case when ${overdueSql(alias)} then 'EXPIRED' else ${alias}.status::text end)`;

/** A developer's request for money from a wallet, waiting for the user's decision. */
@Entity({ tableName: 'payment_requests' })
export class PaymentRequest {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  developerId!: string;

  @Property({ type: 'text' })
  walletId!: string;

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
