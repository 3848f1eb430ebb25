import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, notFound } from '../errors.js';

/** Money that moves between a wallet and a developer for one transaction. */
export interface Movement {
  transactionId: string;
  walletId: string;
  developerId: string;
  /** Exact decimal string, e.g. "12.50". */
  amount: string;
  currency: string;
}

/**
 * The merchant's side of every movement (src/settlement/settlement.service.ts): its available
 * balance, the fee the wallet company takes, the balance transactions and their ledger entries.
 * This module moves the wallet's side and calls it, in the same database transaction, whenever
 * money reaches a merchant or leaves it for a payer.
 */
export interface MerchantSide {
  /**
   * `m.amount` (the gross) reached the merchant for transaction `m.transactionId`: the fee is
   * taken, the net credited, the balance transaction and both sides of each ledger movement written.
   */
  creditPayment(tem: EntityManager, m: Movement): Promise<void>;
  /** A refund of `m.amount` leaves the merchant's available balance (INSUFFICIENT_FUNDS when it does not cover it). */
  debitRefund(tem: EntityManager, m: Movement & { refundId: string }): Promise<void>;
}

/**
 * A payment, inside the caller's database transaction: debits the wallet only if it is ACTIVE
 * and covers the amount (a conditional update; the CHECK constraint backs it), writes the wallet's
 * ledger entry and hands the gross to the merchant's side (fee, net, balance transaction). This
 * module and `merchant` (src/settlement) are the only places a balance changes.
 */
export async function movePayment(tem: EntityManager, m: Movement, merchant: MerchantSide): Promise<void> {
  if (!(await debitWallet(tem, m))) {
    await requireSpendable(tem, m);
    if (!(await debitWallet(tem, m))) throw new Error('the locked wallet refused a debit it covers');
  }
  await writeWalletEntry(tem, 'PAYMENT', m, '-');
  await merchant.creditPayment(tem, m);
}

/**
 * Why a wallet refused to spend `m.amount` (a debit or a hold), read under the row lock the update
 * would take: a status change or top-up that committed after the update looked is seen here, so
 * the answer matches the wallet as it now is, and with the lock held a second update sees exactly
 * this row. FOR NO KEY UPDATE, not FOR UPDATE: the latter also waits for the KEY SHARE locks that
 * other approvals' transaction rows hold on this wallet, while they wait for this lock (a
 * deadlock). Returns when the wallet can spend it after all.
 */
async function requireSpendable(tem: EntityManager, m: Movement): Promise<void> {
  const [wallet] = await tem.execute<Array<{ status: string; covers: boolean }>>(
    'select status, balance - held >= ?::numeric as covers from wallets where id = ? for no key update',
    [m.amount, m.walletId],
  );
  if (!wallet) throw notFound('Wallet not found');
  if (wallet.status !== 'ACTIVE') throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
  if (!wallet.covers) throw new AppError('INSUFFICIENT_FUNDS', 'Insufficient funds');
}

/**
 * A MANUAL approval, inside the caller's database transaction: reserves `m.amount` of an ACTIVE
 * wallet's available balance (balance - held) by raising its `held` total; no money moves and no
 * ledger entry is written. The conditional update refuses what is not available (of concurrent
 * holds on one wallet, each sees the others' committed `held`), and the CHECK `held <= balance`
 * backs it.
 */
export async function placeHold(tem: EntityManager, m: Movement): Promise<void> {
  const hold = () =>
    tem.execute<unknown[]>(
      `update wallets set held = held + ?::numeric, updated_at = now()
        where id = ? and status = 'ACTIVE' and balance - held >= ?::numeric returning id`,
      [m.amount, m.walletId, m.amount],
    );
  if ((await hold()).length > 0) return;
  await requireSpendable(tem, m);
  if ((await hold()).length === 0) throw new Error('the locked wallet refused a hold it covers');
}

/**
 * A capture of (part of) a hold, inside the caller's database transaction: the whole hold
 * (`held`) is released and `m.amount` (at most `held`) is debited from the wallet and handed to
 * the merchant's side (its fee is taken on the captured amount), with the ledger entries. The
 * wallet's status does not matter: the money was reserved while it was ACTIVE.
 */
export async function captureHold(tem: EntityManager, m: Movement, held: string, merchant: MerchantSide): Promise<void> {
  const debited = await tem.execute<unknown[]>(
    `update wallets set balance = balance - ?::numeric, held = held - ?::numeric, updated_at = now()
      where id = ? and held >= ?::numeric and ?::numeric <= ?::numeric returning id`,
    [m.amount, held, m.walletId, held, m.amount, held],
  );
  if (debited.length === 0) throw new Error(`wallet ${m.walletId} does not hold ${held}`);
  await writeWalletEntry(tem, 'PAYMENT', m, '-');
  await merchant.creditPayment(tem, m);
}

/** Gives a hold back (a void, or a hold past HOLD_TTL_HOURS), inside the caller's database transaction. */
export async function releaseHold(tem: EntityManager, walletId: string, held: string): Promise<void> {
  const released = await tem.execute<unknown[]>(
    `update wallets set held = held - ?::numeric, updated_at = now() where id = ? and held >= ?::numeric returning id`,
    [held, walletId, held],
  );
  if (released.length === 0) throw new Error(`wallet ${walletId} does not hold ${held}`);
}

/**
 * The reverse of (part of) a payment: the wallet is credited back the gross and the merchant's
 * side debited, only if its available balance covers it (else INSUFFICIENT_FUNDS and everything
 * rolls back; the fee taken at payment is not returned); both sides are written to the ledger
 * under the refund. Wallet first, then developer, as in a payment: transactions that lock the
 * same rows in the same order cannot deadlock.
 */
export async function moveRefund(tem: EntityManager, m: Movement & { refundId: string }, merchant: MerchantSide): Promise<void> {
  await tem.execute(`update wallets set balance = balance + ?::numeric, updated_at = now() where id = ?`, [m.amount, m.walletId]);
  await writeWalletEntry(tem, 'REFUND', m, '', m.refundId);
  await merchant.debitRefund(tem, m);
}

/**
 * The conditional debit: only an ACTIVE wallet whose available balance (balance - held) covers
 * the amount (the CHECKs `balance >= 0` and `held <= balance` back it).
 */
async function debitWallet(tem: EntityManager, m: Movement): Promise<boolean> {
  const debited: unknown[] = await tem.execute(
    `update wallets set balance = balance - ?::numeric, updated_at = now()
      where id = ? and status = 'ACTIVE' and balance - held >= ?::numeric returning id`,
    [m.amount, m.walletId, m.amount],
  );
  return debited.length > 0;
}

/** The wallet's side of a payment (`-`: the wallet pays) or a refund (`''`: it is paid back); the merchant's side writes the other. */
async function writeWalletEntry(tem: EntityManager, kind: 'PAYMENT' | 'REFUND', m: Movement, sign: '-' | '', refundId: string | null = null): Promise<void> {
  await tem.execute(
    `insert into ledger_entries (kind, account, transaction_id, refund_id, wallet_id, amount, currency)
     values (?, 'WALLET', ?, ?, ?, ${sign}?::numeric, ?)`,
    [kind, m.transactionId, refundId, m.walletId, m.amount, m.currency],
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
    `insert into ledger_entries (kind, account, wallet_id, amount, currency) values ('TOPUP', 'WALLET', ?, ?::numeric, ?)`,
    [walletId, amount, wallet.currency],
  );
}
