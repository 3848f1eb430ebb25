import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt, randomUUID } from 'node:crypto';
import { parseAmount } from '../money.js';
import { AppError, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { moveRefund, type Movement } from '../ledger/ledger.js';
import { Transaction, type TransactionStatus } from './transaction.entity.js';
import { paginate, rangeConditions, type Page, type RangeFilter } from '../db/pagination.js';
import { writeEvent } from '../events/outbox.js';
import { PaymentRequest } from '../payment-requests/payment-request.entity.js';

/** Largest refund a single call may ask for (the transaction's own amount bounds it anyway). */
const MAX_REFUND = 1e12;

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
   * Creates the COMPLETED transaction of an approved payment inside the caller's database
   * transaction, with its `WPAY` + 12-digit sequence + `-` + 6 characters reference.
   */
  async createForPayment(tem: EntityManager, p: PaymentRecord): Promise<void> {
    await tem.execute(
      `insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, currency, status, type,
                                 description, payment_provider, payment_reference, created_at, updated_at)
       values (?, ?, ?, ?, ?::numeric, ?, 'COMPLETED', 'WALLET_PAYMENT', ?, 'WALLET',
               'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-' || ?, now(), now())`,
      [p.transactionId, p.paymentRequestId, p.walletId, p.developerId, p.amount, p.currency, p.description, referenceSuffix()],
    );
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
    const requested = amount === undefined || amount === null ? null : parseAmount(amount, MAX_REFUND);
    await em.transactional(async (tem) => {
      const [tx] = await tem.execute<Array<Omit<Movement, 'transactionId' | 'amount'> & { status: string; remaining: string; fits: boolean }>>(
        `select status, wallet_id as "walletId", developer_id as "developerId", currency,
                (amount - refunded_amount)::text as remaining,
                coalesce(?::numeric, amount - refunded_amount) <= amount - refunded_amount as fits
           from transactions where id = ? for update`,
        [requested, id],
      );
      if (!tx) throw notFound('Transaction not found');
      if (tx.status !== 'COMPLETED') throw new AppError('CONFLICT', 'Only a COMPLETED transaction can be refunded');
      if (!tx.fits) throw new AppError('REFUND_EXCEEDS_REMAINING', `At most ${tx.remaining} of this transaction can still be refunded`);
      const refundAmount = requested ?? tx.remaining;
      await tem.execute(
        `update transactions
            set refunded_amount = refunded_amount + ?::numeric,
                status = case when refunded_amount + ?::numeric = amount then 'REFUNDED'::transaction_status else status end,
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
      await moveRefund(tem, { transactionId: id, refundId, walletId: tx.walletId, developerId: tx.developerId, amount: refundAmount, currency: tx.currency });
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
