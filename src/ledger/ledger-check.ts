import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { toAmountNumber } from '../money.js';

/**
 * An account whose balance differs from the sum of its ledger entries, or (HOLD) a wallet whose
 * held total (as `balance`) differs from the sum of its active holds (as `ledgerSum`).
 */
export interface LedgerMismatch {
  kind: 'WALLET' | 'DEVELOPER' | 'HOLD';
  /** The wallet id, or the developer id (with the currency after a colon). */
  id: string;
  balance: number;
  ledgerSum: number;
}

export interface LedgerCheck {
  ok: boolean;
  checkedWallets: number;
  checkedDevelopers: number;
  mismatches: LedgerMismatch[];
}

/**
 * Proves the books: for every wallet and every developer balance, Σ ledger entries = balance;
 * and for every wallet, its held total = Σ its active holds (PENDING transactions' amounts).
 * (held <= balance is a CHECK of the wallets table, so available = balance - held is never negative.)
 * One consistent snapshot (REPEATABLE READ, read only), so money moving meanwhile cannot make
 * a balanced ledger look unbalanced.
 */
export async function checkLedger(em: EntityManager): Promise<LedgerCheck> {
  return em.transactional(
    async (tem) => {
      const [counts] = await tem.execute<Array<{ wallets: string; developers: string }>>(
        `select (select count(*) from wallets) as wallets, (select count(*) from developer_balances) as developers`,
      );
      const rows = await tem.execute<Array<{ kind: LedgerMismatch['kind']; id: string; balance: string; ledgerSum: string }>>(
        `select 'WALLET' as kind, w.id, w.balance, coalesce(l.total, 0) as "ledgerSum"
           from wallets w
           left join (select wallet_id, sum(amount) as total from ledger_entries where wallet_id is not null group by wallet_id) l
             on l.wallet_id = w.id
          where w.balance <> coalesce(l.total, 0)
         union all
         select 'DEVELOPER', b.developer_id::text || ':' || b.currency, b.balance, coalesce(l.total, 0)
           from developer_balances b
           left join (select developer_id, currency, sum(amount) as total from ledger_entries
                       where developer_id is not null group by developer_id, currency) l
             on l.developer_id = b.developer_id and l.currency = b.currency
          where b.balance <> coalesce(l.total, 0)
         union all
         select 'DEVELOPER', l.developer_id::text || ':' || l.currency, 0, sum(l.amount)
           from ledger_entries l
          where l.developer_id is not null
            and not exists (select 1 from developer_balances b where b.developer_id = l.developer_id and b.currency = l.currency)
          group by l.developer_id, l.currency
         having sum(l.amount) <> 0
         union all
         select 'HOLD', w.id, w.held, coalesce(h.total, 0)
           from wallets w
           left join (select wallet_id, sum(amount) as total from transactions where status = 'PENDING' group by wallet_id) h
             on h.wallet_id = w.id
          where w.held <> coalesce(h.total, 0)`,
      );
      const mismatches = rows.map((r) => ({ kind: r.kind, id: r.id, balance: toAmountNumber(r.balance), ledgerSum: toAmountNumber(r.ledgerSum) }));
      return { ok: mismatches.length === 0, checkedWallets: Number(counts!.wallets), checkedDevelopers: Number(counts!.developers), mismatches };
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
  );
}
