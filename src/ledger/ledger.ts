import type { Tx } from '../db/unit-of-work.js';
import { sql } from '../db/sql.js';
import { AppError, notFound } from '../errors.js';
import { merchantCreditSql } from '../settlement/merchant-credit.js';

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
 * This module moves the wallet's side and hands the merchant's to it, in the same database
 * transaction, whenever money reaches a merchant or leaves it for a payer.
 */
export interface MerchantSide {
  /**
   * The values of a payment's merchant side inside this module's movement statement (its entry's
   * id, the default fee's percent and fixed amount: the `merchantCreditSql` parameters besides the
   * movement's own).
   */
  creditTerms(): [entryId: string, defaultPercent: string, defaultFixed: string];
  /** `m.amount` (the gross) reached the merchant (a capture): fee, net, balance transaction and ledger entries. */
  creditPayment(tx: Tx, m: Movement): Promise<void>;
  /** A refund of `m.amount` leaves the merchant's available balance (INSUFFICIENT_FUNDS when it does not cover it). */
  debitRefund(tx: Tx, m: Movement & { refundId: string }): Promise<void>;
}

/**
 * A payment's movement as one statement: the conditional debit of an ACTIVE wallet whose available
 * balance (balance - held) covers the amount ($1), and only if it happened, the wallet's ledger
 * entry and the merchant's side (src/settlement/merchant-credit.ts: the fee, the net credited,
 * the balance transaction, the developer's and the wallet company's entries). `moved` is 0 when
 * the wallet refused.
 */
const MOVE_PAYMENT = sql<{ moved: number; written: number }>(
  'ledger_move_payment',
  `with debit as (
     update wallets set balance = balance - $1::numeric, updated_at = now()
      where id = $2 and status = 'ACTIVE' and balance - held >= $1::numeric returning id),
   wallet_entry as (
     insert into ledger_entries (kind, account, transaction_id, wallet_id, amount, currency)
     select 'PAYMENT', 'WALLET', $5::uuid, $2, -$1::numeric, $4 from debit
     returning 1),
   ${merchantCreditSql({
     entryId: '$6::uuid',
     developer: '$3::uuid',
     transaction: '$5::uuid',
     gross: '$1::numeric',
     currency: '$4::text',
     percent: '$7::numeric',
     fixed: '$8::numeric',
     onlyIf: 'debit',
   })}
   select (select count(*) from debit)::int as moved, (select count(*) from bt)::int as written`,
);

/**
 * A payment, inside the caller's database transaction: debits the wallet only if it is ACTIVE
 * and covers the amount (a conditional update; the CHECK constraint backs it), and in the same
 * statement writes the wallet's ledger entry and the merchant's side (`merchant`: fee, net,
 * balance transaction, entries). This module and the merchant's side (src/settlement) are the
 * only places a balance changes.
 */
export async function movePayment(tx: Tx, m: Movement, merchant: MerchantSide): Promise<void> {
  const move = async () => {
    const [row] = await tx.run(MOVE_PAYMENT, [m.amount, m.walletId, m.developerId, m.currency, m.transactionId, ...merchant.creditTerms()]);
    if (row!.moved > 0 && row!.written !== 1) throw new Error(`no balance transaction written for transaction ${m.transactionId}`);
    return row!.moved > 0;
  };
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
 * (`held`) is released and `m.amount` (at most `held`) is debited from the wallet (its ledger
 * entry) and handed to the merchant's side (its fee is taken on the captured amount). Only from an
 * ACTIVE wallet (SPEC §16): one an operator suspended or closed answers CONFLICT (409) and keeps
 * its hold (the caller's transaction rolls back; a void is still allowed). The condition is part
 * of the update, so a suspension that commits first, while the capture waits for the wallet's
 * row, is seen.
 */
export async function captureHold(tx: Tx, m: Movement, held: string, merchant: MerchantSide): Promise<void> {
  const debited = await tx.query(
    `update wallets set balance = balance - $1::numeric, held = held - $2::numeric, updated_at = now()
      where id = $3 and status = 'ACTIVE' and held >= $2::numeric and $1::numeric <= $2::numeric returning id`,
    [m.amount, held, m.walletId],
  );
  if (debited.length === 0) {
    const [wallet] = await tx.query<{ status: string }>('select status from wallets where id = $1', [m.walletId]);
    if (wallet && wallet.status !== 'ACTIVE') {
      throw new AppError('CONFLICT', `The wallet is not active (${wallet.status.toLowerCase()}): the hold stays until the wallet is active again or the transaction is voided`);
    }
    throw new Error(`wallet ${m.walletId} does not hold ${held}`);
  }
  await writeWalletEntry(tx, 'PAYMENT', m, '-');
  await merchant.creditPayment(tx, m);
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
 * The reverse of (part of) a payment: the wallet is credited back the gross (its ledger entry) and
 * the merchant's side debited, only if its available balance covers it (else INSUFFICIENT_FUNDS
 * and everything rolls back; the fee taken at payment is not returned). Wallet first, then
 * developer, as in a payment: transactions that lock the same rows in the same order cannot deadlock.
 */
export async function moveRefund(tx: Tx, m: Movement & { refundId: string }, merchant: MerchantSide): Promise<void> {
  await tx.query(`update wallets set balance = balance + $1::numeric, updated_at = now() where id = $2`, [m.amount, m.walletId]);
  await writeWalletEntry(tx, 'REFUND', m, '', m.refundId);
  await merchant.debitRefund(tx, m);
}

/** The wallet's side of a capture (`-`: the wallet pays) or a refund (`''`: it is paid back); the merchant's side writes the other. */
async function writeWalletEntry(tx: Tx, kind: 'PAYMENT' | 'REFUND', m: Movement, sign: '-' | '', refundId: string | null = null): Promise<void> {
  await tx.query(
    `insert into ledger_entries (kind, account, transaction_id, refund_id, wallet_id, amount, currency)
     values ($1, 'WALLET', $2, $3, $4, ${sign}$5::numeric, $6)`,
    [kind, m.transactionId, refundId, m.walletId, m.amount, m.currency],
  );
}

/** Credits a wallet from an external source (a top-up), with its ledger entry. */
export async function recordTopUp(tx: Tx, walletId: string, amount: string): Promise<void> {
  const [wallet] = await tx.query<{ currency: string }>(
    `update wallets set balance = balance + $1::numeric, updated_at = now() where id = $2 returning currency`,
    [amount, walletId],
  );
  if (!wallet) throw notFound('Wallet not found');
  await tx.query(`insert into ledger_entries (kind, account, wallet_id, amount, currency) values ('TOPUP', 'WALLET', $1, $2::numeric, $3)`, [
    walletId,
    amount,
    wallet.currency,
  ]);
}
