import type { EntityManager } from '@mikro-orm/postgresql';
import { badInput, notFound } from '../errors.js';
import { isUuid } from '../uuid.js';
import { recordRefund } from '../ledger/ledger.js';
import { Transaction } from './transaction.entity.js';

/** Reading and refunding transactions. */
export class TransactionService {
  /** A transaction of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(em: EntityManager, developerId: string, id: string): Promise<Transaction> {
    if (!isUuid(id)) throw badInput('transactionId must be a UUID');
    const tx = await em.findOne(Transaction, { id, developerId });
    if (!tx) throw notFound('Transaction not found');
    return tx;
  }

  /** An operator's refund: COMPLETED → REFUNDED, money back to the wallet, in one transaction. */
  async refund(em: EntityManager, id: string): Promise<Transaction> {
    if (!isUuid(id)) throw badInput('id must be a UUID');
    await em.transactional((tem) => recordRefund(tem, id));
    return em.findOneOrFail(Transaction, { id }, { refresh: true });
  }
}
