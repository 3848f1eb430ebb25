import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt, randomUUID } from 'node:crypto';
import { parseAmount } from '../money.js';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { captureHold, moveRefund, releaseHold, type MerchantSide, type Movement } from '../ledger/ledger.js';
import { Transaction, type TransactionStatus } from './transaction.entity.js';
import { paginate, rangeConditions, type Page, type RangeFilter } from '../db/pagination.js';
import { writeEvent, writeEvents } from '../events/outbox.js';
import type { EventType } from '../events/events.js';
import { PaymentRequest } from '../payment-requests/payment-request.entity.js';

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
}

/** Transactions: created for an approved payment, read by their developer, refunded by an operator. */
export class TransactionService {
  /**
   * @param maxAmount MAX_AMOUNT: no payment, so no hold, is larger; a capture above it is a bad
   * input (400) before any transaction is looked at, whatever state that transaction is in.
   * @param merchant The merchant's side of captures and refunds (fee, balance, balance transactions: src/settlement).
   */
  constructor(
    private readonly maxAmount: number,
    private readonly merchant: MerchantSide,
  ) {}

  /**
   * Creates the COMPLETED transaction of an approved payment inside the caller's database
   * transaction, with its `WPAY` + 12-digit sequence + `-` + 6 characters reference.
   */
  async createForPayment(tem: EntityManager, p: PaymentRecord): Promise<void> {
    await tem.execute(
      `insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, captured_amount, currency, status, type,
                                 description, payment_provider, payment_reference, created_at, updated_at)
       values (?, ?, ?, ?, ?::numeric, ?::numeric, ?, 'COMPLETED', 'WALLET_PAYMENT', ?, 'WALLET',
               'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-' || ?, now(), now())`,
      [p.transactionId, p.paymentRequestId, p.walletId, p.developerId, p.amount, p.amount, p.currency, p.description, referenceSuffix()],
    );
  }

  /**
   * Creates the PENDING transaction of an approved MANUAL payment (its amount held, nothing
   * captured: `captured_amount` null) inside the caller's database transaction; the hold is voided
   * by itself `holdTtlHours` after (see `expireHolds`).
   */
  async createHeld(tem: EntityManager, p: PaymentRecord, holdTtlHours: number): Promise<void> {
    await tem.execute(
      `insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, currency, status, type,
                                 description, payment_provider, payment_reference, hold_expires_at, created_at, updated_at)
       values (?, ?, ?, ?, ?::numeric, ?, 'PENDING', 'WALLET_PAYMENT', ?, 'WALLET',
               'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-' || ?,
               now() + make_interval(secs => ? * 3600), now(), now())`,
      [p.transactionId, p.paymentRequestId, p.walletId, p.developerId, p.amount, p.currency, p.description, referenceSuffix(), holdTtlHours],
    );
  }

  /**
   * The developer captures (part of) a held transaction, in one database transaction: the row is
   * locked and must be PENDING (else CONFLICT, 409), `amount` (all of it when omitted) may not
   * exceed what is held (400; the CHECK `captured_amount <= amount` backs it); the wallet is
   * debited by the captured amount and the whole hold released, the developer credited, the ledger
   * written, and `transaction.captured` goes out. Another developer's transaction is NOT_FOUND.
   */
  async capture(em: EntityManager, developerId: string, id: string, amount?: number | null): Promise<Transaction> {
    requireUuid(id);
    const requested = amount === undefined || amount === null ? null : parseAmount(amount, this.maxAmount);
    await em.transactional(async (tem) => {
      const tx = await this.lockHeld(tem, developerId, id, 'captured');
      const [fits] = await tem.execute<Array<{ fits: boolean }>>(`select coalesce(?::numeric, ?::numeric) <= ?::numeric as fits`, [
        requested,
        tx.held,
        tx.held,
      ]);
      if (!fits!.fits) throw badInput(`amount must be at most the held amount (${tx.held})`);
      const captured = requested ?? tx.held;
      await tem.execute(`update transactions set status = 'COMPLETED', captured_amount = ?::numeric, updated_at = now() where id = ?`, [captured, id]);
      await captureHold(tem, { transactionId: id, walletId: tx.walletId, developerId, amount: captured, currency: tx.currency }, tx.held, this.merchant);
      await this.writeTransactionEvent(tem, 'transaction.captured', id);
    });
    return em.findOneOrFail(Transaction, { id }, { refresh: true });
  }

  /** The developer voids a held transaction: CANCELLED and the hold released, with `transaction.voided` (as `capture`). */
  async void(em: EntityManager, developerId: string, id: string): Promise<Transaction> {
    requireUuid(id);
    await em.transactional(async (tem) => {
      const tx = await this.lockHeld(tem, developerId, id, 'voided');
      await tem.execute(`update transactions set status = 'CANCELLED', updated_at = now() where id = ?`, [id]);
      await releaseHold(tem, tx.walletId, tx.held);
      await this.writeTransactionEvent(tem, 'transaction.voided', id);
    });
    return em.findOneOrFail(Transaction, { id }, { refresh: true });
  }

  /**
   * Voids up to `batch` holds older than HOLD_TTL_HOURS (their `hold_expires_at` passed, by the
   * database's clock), each with its `transaction.voided`. Rows another instance (or a capture or
   * void under way) holds are skipped (`SKIP LOCKED`), and the claim re-checks PENDING, so each
   * hold ends exactly once. Returns how many it voided.
   */
  async expireHolds(em: EntityManager, batch = 500): Promise<number> {
    return em.transactional(async (tem) => {
      const rows = await tem.execute<Array<{ id: string; wallet_id: string; amount: string }>>(
        `with due as (
           select id from transactions
            where status = 'PENDING' and hold_expires_at <= now()
            order by hold_expires_at
            limit ? for update skip locked)
         update transactions t set status = 'CANCELLED', updated_at = now()
           from due where t.id = due.id and t.status = 'PENDING'
         returning t.id, t.wallet_id, t.amount::text as amount`,
        [batch],
      );
      // Wallets in a fixed order, as every other writer locks one wallet at a time: no deadlock.
      for (const row of [...rows].sort((a, b) => (a.wallet_id < b.wallet_id ? -1 : a.wallet_id > b.wallet_id ? 1 : 0))) {
        await releaseHold(tem, row.wallet_id, row.amount);
      }
      if (rows.length > 0) {
        const voided = await tem.find(Transaction, { id: { $in: rows.map((r) => r.id) } });
        const requests = await tem.find(PaymentRequest, { id: { $in: voided.map((t) => t.paymentRequestId) } });
        const requestOf = new Map(requests.map((pr) => [pr.id, pr]));
        await writeEvents(
          tem,
          voided.map((transaction) => ({ type: 'transaction.voided' as const, paymentRequest: requestOf.get(transaction.paymentRequestId)!, transaction })),
        );
      }
      return rows.length;
    });
  }

  /** Locks a developer's transaction for a capture or void: NOT_FOUND if not its, CONFLICT unless PENDING (held). */
  private async lockHeld(tem: EntityManager, developerId: string, id: string, verb: 'captured' | 'voided') {
    const [tx] = await tem.execute<Array<{ status: string; walletId: string; currency: string; held: string }>>(
      `select status, wallet_id as "walletId", currency, amount::text as held
         from transactions where id = ? and developer_id = ? for update`,
      [id, developerId],
    );
    if (!tx) throw notFound('Transaction not found');
    if (tx.status !== 'PENDING') throw new AppError('CONFLICT', `Only a PENDING (held) transaction can be ${verb}; this one is ${tx.status}`);
    return tx;
  }

  /** A transaction event (captured, voided) with its request, in the caller's database transaction. */
  private async writeTransactionEvent(tem: EntityManager, type: EventType, id: string): Promise<void> {
    const transaction = await tem.findOneOrFail(Transaction, { id }, { refresh: true });
    const paymentRequest = await tem.findOneOrFail(PaymentRequest, { id: transaction.paymentRequestId });
    await writeEvent(tem, { type, paymentRequest, transaction });
  }

  /** A transaction of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(em: EntityManager, developerId: string, id: string): Promise<Transaction> {
    requireUuid(id);
    const tx = await em.findOne(Transaction, { id, developerId });
    if (!tx) throw notFound('Transaction not found');
    return tx;
  }

  /**
   * An operator's refund of `amount` (all that is left when omitted) of a COMPLETED transaction,
   * in one database transaction: the row is locked, the refund may not exceed what is left
   * (REFUND_EXCEEDS_REMAINING; the CHECK constraint backs it), the developer's balance may not go
   * below zero (INSUFFICIENT_FUNDS), the money goes back to the wallet as a ledger pair, and the
   * transaction becomes REFUNDED when all of it has been refunded; each refund writes a
   * `transaction.refunded` event in the same database transaction.
   */
  async refund(em: EntityManager, id: string, amount?: number | null): Promise<Transaction> {
    requireUuid(id);
    const requested = amount === undefined || amount === null ? null : parseAmount(amount, this.maxAmount);
    await em.transactional(async (tem) => {
      const [tx] = await tem.execute<Array<Omit<Movement, 'transactionId' | 'amount'> & { status: string; remaining: string; fits: boolean }>>(
        `select status, wallet_id as "walletId", developer_id as "developerId", currency,
                (captured_amount - refunded_amount)::text as remaining,
                coalesce(?::numeric, captured_amount - refunded_amount) <= captured_amount - refunded_amount as fits
           from transactions where id = ? for update`,
        [requested, id],
      );
      if (!tx) throw notFound('Transaction not found');
      // Refunds give back captured money only: a held (PENDING) or voided (CANCELLED) one has none.
      if (tx.status !== 'COMPLETED') throw new AppError('CONFLICT', 'Only a COMPLETED transaction can be refunded');
      if (!tx.fits) throw new AppError('REFUND_EXCEEDS_REMAINING', `At most ${tx.remaining} of this transaction can still be refunded`);
      const refundAmount = requested ?? tx.remaining;
      await tem.execute(
        `update transactions
            set refunded_amount = refunded_amount + ?::numeric,
                status = case when refunded_amount + ?::numeric = captured_amount then 'REFUNDED'::transaction_status else status end,
                updated_at = now()
          where id = ?`,
        [refundAmount, refundAmount, id],
      );
      const refundId = randomUUID();
      await tem.execute(`insert into refunds (id, transaction_id, amount, currency, created_at) values (?, ?, ?::numeric, ?, now())`, [
        refundId,
        id,
        refundAmount,
        tx.currency,
      ]);
      await moveRefund(
        tem,
        { transactionId: id, refundId, walletId: tx.walletId, developerId: tx.developerId, amount: refundAmount, currency: tx.currency },
        this.merchant,
      );
      const refunded = await tem.findOneOrFail(Transaction, { id }, { refresh: true });
      const paymentRequest = await tem.findOneOrFail(PaymentRequest, { id: refunded.paymentRequestId });
      await writeEvent(tem, { type: 'transaction.refunded', paymentRequest, transaction: refunded });
    });
    return em.findOneOrFail(Transaction, { id }, { refresh: true });
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
