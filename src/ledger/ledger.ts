import type { Tx } from '../db/unit-of-work.js';
import { sql } from '../db/sql.js';
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
 * A payment's movement as one statement: the conditional debit of an ACTIVE wallet whose available
 * balance (balance - held) covers the amount ($1), and only if it happened, the developer's credit
 * and both ledger entries. `moved` is 0 when the wallet refused.
 */
const MOVE_PAYMENT = sql<{ moved: number }>(
  'ledger_move_payment',
  `with debit as (
     update wallets set balance = balance - $1::numeric, updated_at = now()
      where id = $2 and status = 'ACTIVE' and balance - held >= $1::numeric returning id),
   credit as (
     insert into developer_balances (developer_id, currency, balance)
     select $3, $4, $1::numeric where exists (select 1 from debit)
     on conflict (developer_id, currency) do update set balance = developer_balances.balance + excluded.balance
     returning 1),
   entries as (
     insert into ledger_entries (kind, transaction_id, wallet_id, developer_id, amount, currency)
     select 'PAYMENT', $5::uuid, e.wallet_id, e.developer_id, e.amount, $4
       from (values ($2::text, null::uuid, -$1::numeric), (null::text, $3::uuid, $1::numeric)) as e(wallet_id, developer_id, amount)
      where exists (select 1 from debit)
     returning 1)
   select (select count(*) from debit)::int as moved`,
);

/**
 * A payment, inside the caller's database transaction: debits the wallet only if it is ACTIVE
 * and covers the amount (a conditional update; the CHECK constraint backs it), credits the
 * developer and writes both ledger entries, in one statement. This module is the only place a
 * balance changes.
 */
export async function movePayment(tx: Tx, m: Movement): Promise<void> {
  const move = async () => (await tx.run(MOVE_PAYMENT, [m.amount, m.walletId, m.developerId, m.currency, m.transactionId]))[0]!.moved > 0;
  if (await move()) return;
  await requireSpendable(tx, m);
  if (!(await move())) throw new Error('the locked wallet refused a debit it covers');
}

/**
 * Why a wallet refused to spend `m.amount` (a debit or a hold), read under the row lock the update
 * would take: a status change or top-up that committed after the update looked is seen here, so
 * the answer matches the wallet as it now is, and with the lock held a second update sees exactly
 * this row. FOR NO KEY UPDATE, not FOR UPDATE: the latter also waits for the KEY SHARE locks that
 * other approvals' transaction rows hold on this wallet, while they wait for this lock (a
 * deadlock). Returns when the wallet can spend it after all.
 */
async function requireSpendable(tx: Tx, m: Movement): Promise<void> {
  const [wallet] = await tx.query<{ status: string; covers: boolean }>(
    'select status, balance - held >= $1::numeric as covers from wallets where id = $2 for no key update',
    [m.amount, m.walletId],
  );
  if (!wallet) throw notFound('Wallet not found');
  if (wallet.status !== 'ACTIVE') throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
  if (!wallet.covers) throw new AppError('INSUFFICIENT_FUNDS', 'Insufficient funds');
}

/** The developer's side of a payment: its settlement balance credited, and both ledger entries. */
async function creditDeveloper(tx: Tx, m: Movement): Promise<void> {
  await tx.query(
    `insert into developer_balances (developer_id, currency, balance) values ($1, $2, $3::numeric)
     on conflict (developer_id, currency) do update set balance = developer_balances.balance + excluded.balance`,
    [m.developerId, m.currency, m.amount],
  );
  await writeEntries(tx, 'PAYMENT', m, true);
}

/**
 * A MANUAL approval, inside the caller's database transaction: reserves `m.amount` of an ACTIVE
 * wallet's available balance (balance - held) by raising its `held` total; no money moves and no
 * ledger entry is written. The conditional update refuses what is not available (of concurrent
 * holds on one wallet, each sees the others' committed `held`), and the CHECK `held <= balance`
 * backs it.
 */
export async function placeHold(tx: Tx, m: Movement): Promise<void> {
  const hold = () =>
    tx.query(
      `update wallets set held = held + $1::numeric, updated_at = now()
        where id = $2 and status = 'ACTIVE' and balance - held >= $1::numeric returning id`,
      [m.amount, m.walletId],
    );
  if ((await hold()).length > 0) return;
  await requireSpendable(tx, m);
  if ((await hold()).length === 0) throw new Error('the locked wallet refused a hold it covers');
}

/**
 * A capture of (part of) a hold, inside the caller's database transaction: the whole hold
 * (`held`) is released and `m.amount` (at most `held`) is debited from the wallet and credited to
 * the developer, with both ledger entries.
 */
export async function captureHold(tx: Tx, m: Movement, held: string): Promise<void> {
  const debited = await tx.query(
    `update wallets set balance = balance - $1::numeric, held = held - $2::numeric, updated_at = now()
      where id = $3 and held >= $2::numeric and $1::numeric <= $2::numeric returning id`,
    [m.amount, held, m.walletId],
  );
  if (debited.length === 0) throw new Error(`wallet ${m.walletId} does not hold ${held}`);
  await creditDeveloper(tx, m);
}

/** Gives a hold back (a void, or a hold past HOLD_TTL_HOURS), inside the caller's database transaction. */
export async function releaseHold(tx: Tx, walletId: string, held: string): Promise<void> {
  const released = await tx.query(
    `update wallets set held = held - $1::numeric, updated_at = now() where id = $2 and held >= $1::numeric returning id`,
    [held, walletId],
  );
  if (released.length === 0) throw new Error(`wallet ${walletId} does not hold ${held}`);
}

/**
 * The reverse of (part of) a payment: the wallet is credited back and the developer debited,
 * only if its settlement balance covers it (else everything rolls back); both sides are written
 * to the ledger under the refund. Wallet first, then developer, as in a payment: transactions
 * that lock the same rows in the same order cannot deadlock.
 */
export async function moveRefund(tx: Tx, m: Movement & { refundId: string }): Promise<void> {
  await tx.query(`update wallets set balance = balance + $1::numeric, updated_at = now() where id = $2`, [m.amount, m.walletId]);
  const debited = await tx.query(
    `update developer_balances set balance = balance - $1::numeric
      where developer_id = $2 and currency = $3 and balance >= $1::numeric returning developer_id`,
    [m.amount, m.developerId, m.currency],
  );
  if (debited.length === 0) throw new AppError('INSUFFICIENT_FUNDS', 'Developer settlement balance does not cover the refund');
  await writeEntries(tx, 'REFUND', m, false, m.refundId);
}

/** One entry per side: the wallet's and the developer's, with opposite signs. */
async function writeEntries(tx: Tx, kind: 'PAYMENT' | 'REFUND', m: Movement, walletPays: boolean, refundId: string | null = null): Promise<void> {
  const [walletSign, developerSign] = walletPays ? ['-', ''] : ['', '-'];
  await tx.query(
    `insert into ledger_entries (kind, transaction_id, refund_id, wallet_id, developer_id, amount, currency)
     values ($1, $2, $3, $4, null, ${walletSign}$5::numeric, $6), ($1, $2, $3, null, $7, ${developerSign}$5::numeric, $6)`,
    [kind, m.transactionId, refundId, m.walletId, m.amount, m.currency, m.developerId],
  );
}

/** Credits a wallet from an external source (a top-up), with its ledger entry. */
export async function recordTopUp(tx: Tx, walletId: string, amount: string): Promise<void> {
  const [wallet] = await tx.query<{ currency: string }>(
    `update wallets set balance = balance + $1::numeric, updated_at = now() where id = $2 returning currency`,
    [amount, walletId],
  );
  if (!wallet) throw notFound('Wallet not found');
  await tx.query(`insert into ledger_entries (kind, wallet_id, amount, currency) values ('TOPUP', $1, $2::numeric, $3)`, [walletId, amount, wallet.currency]);
}
