import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt, randomUUID } from 'node:crypto';
import { parseAmount } from '../money.js';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { captureHold, moveRefund, releaseHold, type Movement } from '../ledger/ledger.js';
import { Transaction, type TransactionStatus } from './transaction.entity.js';
import { paginate, rangeConditions, type Page, type RangeFilter } from '../db/pagination.js';
import { sql, type Queryable } from '../db/sql.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import type { Detached } from '../db/rows.js';
import { appendEvents } from '../events/append.js';
import type { EventType } from '../events/events.js';
import { paymentRequestBody } from '../payment-requests/payment-request.body.js';
import { paymentRequestColumns, paymentRequestFromRow } from '../payment-requests/payment-request.read.js';
import { transactionBody } from './transaction.body.js';
import { transactionColumns, transactionFromRow } from './transaction.read.js';

const REFERENCE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** The random suffix of a payment reference: 6 characters of A-Z 0-9. */
export function referenceSuffix(): string {
  let s = '';
  for (let i = 0; i < 6; i++) s += REFERENCE_ALPHABET[randomInt(REFERENCE_ALPHABET.length)];
  return s;
}

/** What a payment's transaction records besides the money movement. */
export interface PaymentRecord extends Movement {
  paymentRequestId: string;
  description: string;
  /** The approval's signed consent receipt, kept on its payment request (the transaction reads it from there). */
  consentReceipt: string;
}

/** The columns a transaction's insert returns (its consent receipt is its request's, written by the same statement). */
const INSERTED = `id, payment_request_id, wallet_id, developer_id, amount::text as amount, currency, refunded_amount::text as refunded_amount,
  captured_amount::text as captured_amount, hold_expires_at, status, type, description, payment_provider, payment_reference, created_at, updated_at`;

/**
 * The transaction of an approved payment, with its request's consent receipt, in one statement:
 * COMPLETED with everything captured, or (`$9` true: a MANUAL request) PENDING and held until
 * `$10` hours from now. The reference is `WPAY` + 12 digits of a sequence + `-` + `$8`.
 */
const RECORD_PAYMENT = sql<Record<string, unknown>>(
  'transaction_record_payment',
  `with receipt as (update payment_requests set consent_receipt = $11 where id = $2)
   insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, captured_amount, currency, status, type,
                             description, payment_provider, payment_reference, hold_expires_at, created_at, updated_at)
   values ($1, $2, $3, $4, $5::numeric, case when $9::boolean then null else $5::numeric end, $6,
           case when $9::boolean then 'PENDING' else 'COMPLETED' end::transaction_status, 'WALLET_PAYMENT', $7, 'WALLET',
           'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-' || $8,
           case when $9::boolean then now() + make_interval(secs => $10::float8 * 3600) end, now(), now())
   returning ${INSERTED}`,
);

const FOR_DEVELOPER = sql<Record<string, unknown>>(
  'transaction_for_developer',
  `select ${transactionColumns('t')} from transactions t where t.id = $1 and t.developer_id = $2`,
);

/** A transaction and its payment request, as a transaction event carries them, read inside the event's own transaction. */
const WITH_REQUEST = `select ${transactionColumns('t')}, row_to_json(p) as request
  from transactions t,
       lateral (select ${paymentRequestColumns('pr')} from payment_requests pr where pr.id = t.payment_request_id) p
 where t.id = any($1::uuid[])`;

/** Transactions: created for an approved payment, read by their developer, captured, voided and refunded. */
export class TransactionService {
  /**
   * @param maxAmount MAX_AMOUNT: no payment, so no hold, is larger; a capture above it is a bad
   * input (400) before any transaction is looked at, whatever state that transaction is in.
   */
  constructor(private readonly maxAmount = 1e12) {}

  /**
   * Records the transaction of an approved payment inside the caller's database transaction, with
   * its `WPAY` + 12-digit sequence + `-` + 6 characters reference, and keeps the approval's consent
   * receipt on its payment request: COMPLETED, or for a MANUAL request (`holdTtlHours` given)
   * PENDING with nothing captured (`captured_amount` null), voided by itself `holdTtlHours` after
   * (see `expireHolds`). Returns the transaction as written.
   */
  async recordPayment(tx: Tx, p: PaymentRecord, holdTtlHours?: number): Promise<Detached<Transaction>> {
    const held = holdTtlHours !== undefined;
    const [row] = await tx.run(RECORD_PAYMENT, [
      p.transactionId,
      p.paymentRequestId,
      p.walletId,
      p.developerId,
      p.amount,
      p.currency,
      p.description,
      referenceSuffix(),
      held,
      holdTtlHours ?? 0,
      p.consentReceipt,
    ]);
    return transactionFromRow({ ...row!, consent_receipt: p.consentReceipt });
  }

  /**
   * The developer captures (part of) a held transaction, in one database transaction: the row is
   * locked and must be PENDING (else CONFLICT, 409), `amount` (all of it when omitted) may not
   * exceed what is held (400; the CHECK `captured_amount <= amount` backs it); the wallet is
   * debited by the captured amount and the whole hold released, the developer credited, the ledger
   * written, and `transaction.captured` goes out. Another developer's transaction is NOT_FOUND.
   */
  async capture(work: UnitOfWork, developerId: string, id: string, amount?: number | null): Promise<Detached<Transaction>> {
    requireUuid(id);
    const requested = amount === undefined || amount === null ? null : parseAmount(amount, this.maxAmount);
    return work.transaction(async (tx) => {
      const held = await this.lockHeld(tx, developerId, id, 'captured');
      const [fits] = await tx.query<{ fits: boolean }>(`select coalesce($1::numeric, $2::numeric) <= $2::numeric as fits`, [requested, held.held]);
      if (!fits!.fits) throw badInput(`amount must be at most the held amount (${held.held})`);
      const captured = requested ?? held.held;
      await tx.query(`update transactions set status = 'COMPLETED', captured_amount = $1::numeric, updated_at = now() where id = $2`, [captured, id]);
      await captureHold(tx, { transactionId: id, walletId: held.walletId, developerId, amount: captured, currency: held.currency }, held.held);
      return (await this.writeEvents(tx, 'transaction.captured', [id]))[0]!;
    });
  }

  /** The developer voids a held transaction: CANCELLED and the hold released, with `transaction.voided` (as `capture`). */
  async void(work: UnitOfWork, developerId: string, id: string): Promise<Detached<Transaction>> {
    requireUuid(id);
    return work.transaction(async (tx) => {
      const held = await this.lockHeld(tx, developerId, id, 'voided');
      await tx.query(`update transactions set status = 'CANCELLED', updated_at = now() where id = $1`, [id]);
      await releaseHold(tx, held.walletId, held.held);
      return (await this.writeEvents(tx, 'transaction.voided', [id]))[0]!;
    });
  }

  /**
   * Voids up to `batch` holds older than HOLD_TTL_HOURS (their `hold_expires_at` passed, by the
   * database's clock), each with its `transaction.voided`. Rows another instance (or a capture or
   * void under way) holds are skipped (`SKIP LOCKED`), and the claim re-checks PENDING, so each
   * hold ends exactly once. Returns how many it voided.
   */
  async expireHolds(work: UnitOfWork, batch = 500): Promise<number> {
    return work.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; wallet_id: string; amount: string }>(
        `with due as (
           select id from transactions
            where status = 'PENDING' and hold_expires_at <= now()
            order by hold_expires_at
            limit $1 for update skip locked)
         update transactions t set status = 'CANCELLED', updated_at = now()
           from due where t.id = due.id and t.status = 'PENDING'
         returning t.id, t.wallet_id, t.amount::text as amount`,
        [batch],
      );
      // Wallets in a fixed order, as every other writer locks one wallet at a time: no deadlock.
      for (const row of [...rows].sort((a, b) => (a.wallet_id < b.wallet_id ? -1 : a.wallet_id > b.wallet_id ? 1 : 0))) {
        await releaseHold(tx, row.wallet_id, row.amount);
      }
      await this.writeEvents(tx, 'transaction.voided', rows.map((r) => r.id));
      return rows.length;
    });
  }

  /** Locks a developer's transaction for a capture or void: NOT_FOUND if not its, CONFLICT unless PENDING (held). */
  private async lockHeld(tx: Tx, developerId: string, id: string, verb: 'captured' | 'voided') {
    const [held] = await tx.query<{ status: string; walletId: string; currency: string; held: string }>(
      `select status, wallet_id as "walletId", currency, amount::text as held
         from transactions where id = $1 and developer_id = $2 for update`,
      [id, developerId],
    );
    if (!held) throw notFound('Transaction not found');
    if (held.status !== 'PENDING') throw new AppError('CONFLICT', `Only a PENDING (held) transaction can be ${verb}; this one is ${held.status}`);
    return held;
  }

  /**
   * Transaction events (captured, voided, refunded), each with its payment request, inside the
   * caller's database transaction, which holds each transaction's row lock: a transaction's events
   * are its request's last, so that lock orders them (append.ts). Returns the transactions as written.
   */
  private async writeEvents(tx: Tx, type: EventType, ids: readonly string[]): Promise<Array<Detached<Transaction>>> {
    if (ids.length === 0) return [];
    const rows = await tx.query<Record<string, unknown> & { request: Record<string, unknown> }>(WITH_REQUEST, [ids]);
    const written = rows.map((row) => ({ transaction: transactionFromRow(row), request: paymentRequestFromRow(row.request) }));
    await appendEvents(
      tx,
      written.map(({ transaction, request }) => ({
        type,
        subjectId: request.id,
        developerId: transaction.developerId,
        paymentRequestId: request.id,
        transactionId: transaction.id,
        data: { paymentRequest: paymentRequestBody(request), transaction: transactionBody(transaction) },
      })),
    );
    const byId = new Map(written.map((w) => [w.transaction.id, w.transaction]));
    return ids.map((id) => byId.get(id)!);
  }

  /** A transaction of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(db: Queryable, developerId: string, id: string): Promise<Detached<Transaction>> {
    requireUuid(id);
    const [row] = await db.run(FOR_DEVELOPER, [id, developerId]);
    if (!row) throw notFound('Transaction not found');
    return transactionFromRow(row);
  }

  /**
   * An operator's refund of `amount` (all that is left when omitted) of a COMPLETED transaction,
   * in one database transaction: the row is locked, the refund may not exceed what is left
   * (REFUND_EXCEEDS_REMAINING; the CHECK constraint backs it), the developer's balance may not go
   * below zero (INSUFFICIENT_FUNDS), the money goes back to the wallet as a ledger pair, and the
   * transaction becomes REFUNDED when all of it has been refunded; each refund writes a
   * `transaction.refunded` event in the same database transaction.
   */
  async refund(work: UnitOfWork, id: string, amount?: number | null): Promise<Detached<Transaction>> {
    requireUuid(id);
    const requested = amount === undefined || amount === null ? null : parseAmount(amount, this.maxAmount);
    return work.transaction(async (tx) => {
      const [found] = await tx.query<Omit<Movement, 'transactionId' | 'amount'> & { status: string; remaining: string; fits: boolean }>(
        `select status, wallet_id as "walletId", developer_id as "developerId", currency,
                (captured_amount - refunded_amount)::text as remaining,
                coalesce($1::numeric, captured_amount - refunded_amount) <= captured_amount - refunded_amount as fits
           from transactions where id = $2 for update`,
        [requested, id],
      );
      if (!found) throw notFound('Transaction not found');
      // Refunds give back captured money only: a held (PENDING) or voided (CANCELLED) one has none.
      if (found.status !== 'COMPLETED') throw new AppError('CONFLICT', 'Only a COMPLETED transaction can be refunded');
      if (!found.fits) throw new AppError('REFUND_EXCEEDS_REMAINING', `At most ${found.remaining} of this transaction can still be refunded`);
      const refundAmount = requested ?? found.remaining;
      await tx.query(
        `update transactions
            set refunded_amount = refunded_amount + $1::numeric,
                status = case when refunded_amount + $1::numeric = captured_amount then 'REFUNDED'::transaction_status else status end,
                updated_at = now()
          where id = $2`,
        [refundAmount, id],
      );
      const refundId = randomUUID();
      await tx.query(`insert into refunds (id, transaction_id, amount, currency, created_at) values ($1, $2, $3::numeric, $4, now())`, [
        refundId,
        id,
        refundAmount,
        found.currency,
      ]);
      await moveRefund(tx, { transactionId: id, refundId, walletId: found.walletId, developerId: found.developerId, amount: refundAmount, currency: found.currency });
      return (await this.writeEvents(tx, 'transaction.refunded', [id]))[0]!;
    });
  }

  /** Transactions, newest first, filtered by status, developer, wallet, creation and amount ranges (internal tools). */
  list(
    em: EntityManager,
    filter: RangeFilter & { status?: TransactionStatus | undefined; developerId?: string | undefined; walletId?: string | undefined },
    first?: number,
    after?: string,
  ): Promise<Page<Transaction>> {
    return paginate(
      em,
      Transaction,
      {
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.developerId ? { developerId: requireUuid(filter.developerId, 'developerId') } : {}),
        ...(filter.walletId ? { walletId: filter.walletId } : {}),
        ...rangeConditions(filter),
      },
      first,
      after,
    );
  }
}
