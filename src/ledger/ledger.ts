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
 * A payment, inside the caller's database transaction: debits the wallet only if it is ACTIVE
 * and covers the amount (a conditional update; the CHECK constraint backs it), credits the
 * developer and writes both ledger entries. This module is the only place a balance changes.
 */
export async function movePayment(tem: EntityManager, m: Movement): Promise<void> {
  if (!(await debitWallet(tem, m))) {
    await requireSpendable(tem, m);
    if (!(await debitWallet(tem, m))) throw new Error('the locked wallet refused a debit it covers');
  }
  await creditDeveloper(tem, m);
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

/** The developer's side of a payment: its settlement balance credited, and both ledger entries. */
async function creditDeveloper(tem: EntityManager, m: Movement): Promise<void> {
  await tem.execute(
    `insert into developer_balances (developer_id, currency, balance) values (?, ?, ?::numeric)
     on conflict (developer_id, currency) do update set balance = developer_balances.balance + excluded.balance`,
    [m.developerId, m.currency, m.amount],
  );
  await writeEntries(tem, 'PAYMENT', m, true);
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
 * (`held`) is released and `m.amount` (at most `held`) is debited from the wallet and credited to
 * the developer, with both ledger entries. The wallet's status does not matter: the money was
 * reserved while it was ACTIVE.
 */
export async function captureHold(tem: EntityManager, m: Movement, held: string): Promise<void> {
  const debited = await tem.execute<unknown[]>(
    `update wallets set balance = balance - ?::numeric, held = held - ?::numeric, updated_at = now()
      where id = ? and held >= ?::numeric and ?::numeric <= ?::numeric returning id`,
    [m.amount, held, m.walletId, held, m.amount, held],
  );
  if (debited.length === 0) throw new Error(`wallet ${m.walletId} does not hold ${held}`);
  await creditDeveloper(tem, m);
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
 * The reverse of (part of) a payment: the wallet is credited back and the developer debited,
 * only if its settlement balance covers it (else everything rolls back); both sides are written
 * to the ledger under the refund. Wallet first, then developer, as in a payment: transactions
 * that lock the same rows in the same order cannot deadlock.
 */
export async function moveRefund(tem: EntityManager, m: Movement & { refundId: string }): Promise<void> {
  await tem.execute(`update wallets set balance = balance + ?::numeric, updated_at = now() where id = ?`, [m.amount, m.walletId]);
  const debited: unknown[] = await tem.execute(
    `update developer_balances set balance = balance - ?::numeric
      where developer_id = ? and currency = ? and balance >= ?::numeric returning developer_id`,
    [m.amount, m.developerId, m.currency, m.amount],
  );
  if (debited.length === 0) throw new AppError('INSUFFICIENT_FUNDS', 'Developer settlement balance does not cover the refund');
  await writeEntries(tem, 'REFUND', m, false, m.refundId);
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

/** One entry per side: the wallet's and the developer's, with opposite signs. */
async function writeEntries(tem: EntityManager, kind: 'PAYMENT' | 'REFUND', m: Movement, walletPays: boolean, refundId: string | null = null): Promise<void> {
  const [walletSign, developerSign] = walletPays ? ['-', ''] : ['', '-'];
  await tem.execute(
    `insert into ledger_entries (kind, transaction_id, refund_id, wallet_id, developer_id, amount, currency)
     values (?, ?, ?, ?, null, ${walletSign}?::numeric, ?), (?, ?, ?, null, ?, ${developerSign}?::numeric, ?)`,
    [kind, m.transactionId, refundId, m.walletId, m.amount, m.currency, kind, m.transactionId, refundId, m.developerId, m.amount, m.currency],
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
