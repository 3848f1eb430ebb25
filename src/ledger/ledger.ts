import type { EntityManager } from '@mikro-orm/postgresql';
import { randomInt, randomUUID } from 'node:crypto';
import { AppError, notFound } from '../errors.js';

const REFERENCE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** The random suffix of a payment reference: 6 characters of A-Z 0-9. */
export function referenceSuffix(): string {
  let s = '';
  for (let i = 0; i < 6; i++) s += REFERENCE_ALPHABET[randomInt(REFERENCE_ALPHABET.length)];
  return s;
}

export interface PaymentMovement {
  paymentRequestId: string;
  walletId: string;
  developerId: string;
  /** Exact decimal string, e.g. "12.50". */
  amount: string;
  currency: string;
  description: string;
}

/**
 * Moves a payment inside the caller's database transaction: debits the wallet only if it is
 * ACTIVE and covers the amount (a conditional update; the CHECK constraint backs it), credits the
 * developer, creates the COMPLETED transaction with its `WPAY` reference and writes both ledger
 * entries. This module is the only place a balance changes.
 */
export async function recordPayment(tem: EntityManager, m: PaymentMovement): Promise<string> {
  const debited: unknown[] = await tem.execute(
    `update wallets set balance = balance - ?::numeric, updated_at = now()
      where id = ? and status = 'ACTIVE' and balance >= ?::numeric returning id`,
    [m.amount, m.walletId, m.amount],
  );
  if (debited.length === 0) {
    const [wallet] = await tem.execute<Array<{ status: string }>>('select status from wallets where id = ?', [m.walletId]);
    if (!wallet) throw notFound('Wallet not found');
    if (wallet.status !== 'ACTIVE') throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
    throw new AppError('INSUFFICIENT_FUNDS', 'Insufficient funds');
  }
  await creditDeveloper(tem, m.developerId, m.currency, m.amount);
  const transactionId = randomUUID();
  await tem.execute(
    `insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, currency, status, type,
                               description, payment_provider, payment_reference, created_at, updated_at)
     values (?, ?, ?, ?, ?::numeric, ?, 'COMPLETED', 'WALLET_PAYMENT', ?, 'WALLET',
             'WPAY' || lpad(nextval('payment_reference_seq')::text, 12, '0') || '-' || ?, now(), now())`,
    [transactionId, m.paymentRequestId, m.walletId, m.developerId, m.amount, m.currency, m.description, referenceSuffix()],
  );
  await tem.execute(
    `insert into ledger_entries (kind, transaction_id, wallet_id, developer_id, amount, currency)
     values ('PAYMENT', ?, ?, null, -?::numeric, ?), ('PAYMENT', ?, null, ?, ?::numeric, ?)`,
    [transactionId, m.walletId, m.amount, m.currency, transactionId, m.developerId, m.amount, m.currency],
  );
  return transactionId;
}

async function creditDeveloper(tem: EntityManager, developerId: string, currency: string, amount: string): Promise<void> {
  await tem.execute(
    `insert into developer_balances (developer_id, currency, balance) values (?, ?, ?::numeric)
     on conflict (developer_id, currency) do update set balance = developer_balances.balance + excluded.balance`,
    [developerId, currency, amount],
  );
}

/** Credits a wallet from an external source (a top-up), with its ledger entry. */
export async function recordTopUp(tem: EntityManager, walletId: string, amount: string): Promise<void> {
  const rows = await tem.execute<Array<{ currency: string }>>(
    `update wallets set balance = balance + ?::numeric, updated_at = now() where id = ? returning currency`,
    [amount, walletId],
  );
  const wallet = rows[0];
  if (!wallet) throw notFound('Wallet not found');
  await tem.execute(
    `insert into ledger_entries (kind, wallet_id, amount, currency) values ('TOPUP', ?, ?::numeric, ?)`,
    [walletId, amount, wallet.currency],
  );
}

/**
 * Reverses a COMPLETED transaction: the wallet is credited back and the developer debited (only
 * if its settlement balance covers it), the transaction becomes REFUNDED.
 */
export async function recordRefund(tem: EntityManager, transactionId: string): Promise<void> {
  const rows = await tem.execute<Array<{ walletId: string; developerId: string; amount: string; currency: string }>>(
    `update transactions set status = 'REFUNDED', updated_at = now()
      where id = ? and status = 'COMPLETED'
      returning wallet_id as "walletId", developer_id as "developerId", amount, currency`,
    [transactionId],
  );
  const tx = rows[0];
  if (!tx) {
    const [exists] = await tem.execute('select status from transactions where id = ?', [transactionId]);
    if (!exists) throw notFound('Transaction not found');
    throw new AppError('CONFLICT', 'Only a COMPLETED transaction can be refunded');
  }
  const debited: unknown[] = await tem.execute(
    `update developer_balances set balance = balance - ?::numeric
      where developer_id = ? and currency = ? and balance >= ?::numeric returning developer_id`,
    [tx.amount, tx.developerId, tx.currency, tx.amount],
  );
  if (debited.length === 0) throw new AppError('INSUFFICIENT_FUNDS', 'Developer settlement balance does not cover the refund');
  await tem.execute(`update wallets set balance = balance + ?::numeric, updated_at = now() where id = ?`, [tx.amount, tx.walletId]);
  await tem.execute(
    `insert into ledger_entries (kind, transaction_id, wallet_id, developer_id, amount, currency)
     values ('REFUND', ?, ?, null, ?::numeric, ?), ('REFUND', ?, null, ?, -?::numeric, ?)`,
    [transactionId, tx.walletId, tx.amount, tx.currency, transactionId, tx.developerId, tx.amount, tx.currency],
  );
}
