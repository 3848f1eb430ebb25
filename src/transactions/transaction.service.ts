import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt } from 'node:crypto';
import { AppError, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { moveRefund, type Movement } from '../ledger/ledger.js';
import { Transaction, type TransactionStatus } from './transaction.entity.js';
import { paginate, type Page } from '../admin/pagination.js';
import { writeEvent } from '../events/events.js';
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
   * An operator's refund: COMPLETED → REFUNDED, the money back to the wallet and the
   * `transaction.refunded` event, in one database transaction.
   */
  async refund(em: EntityManager, id: string): Promise<Transaction> {
    requireUuid(id);
    await em.transactional(async (tem) => {
      const [tx] = await tem.execute<Array<Omit<Movement, 'transactionId'>>>(
        `update transactions set status = 'REFUNDED', updated_at = now()
          where id = ? and status = 'COMPLETED'
          returning wallet_id as "walletId", developer_id as "developerId", amount, currency`,
        [id],
      );
      if (!tx) {
        const [exists] = await tem.execute('select 1 from transactions where id = ?', [id]);
        if (!exists) throw notFound('Transaction not found');
        throw new AppError('CONFLICT', 'Only a COMPLETED transaction can be refunded');
      }
      await moveRefund(tem, { transactionId: id, ...tx });
      const refunded = await tem.findOneOrFail(Transaction, { id }, { refresh: true });
      const paymentRequest = await tem.findOneOrFail(PaymentRequest, { id: refunded.paymentRequestId });
      await writeEvent(tem, { type: 'transaction.refunded', paymentRequest, transaction: refunded });
    });
    return em.findOneOrFail(Transaction, { id }, { refresh: true });
  }

  /** Transactions, newest first, filtered by status and developer (internal tools). */
  list(
    em: EntityManager,
    filter: { status?: TransactionStatus | undefined; developerId?: string | undefined },
    first?: number,
    after?: string,
  ): Promise<Page<Transaction>> {
    return paginate(
      em,
      Transaction,
      {
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.developerId ? { developerId: requireUuid(filter.developerId, 'developerId') } : {}),
      },
      first,
      after,
    );
  }
}
