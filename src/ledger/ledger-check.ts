import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { toAmountNumber } from '../money.js';

/**
 * A balance that differs from what its records add up to (`balance` vs `ledgerSum`):
 * - WALLET, DEVELOPER, DEVELOPER_PAYOUTS: an account (a wallet, a developer's available balance, a
 *   developer's money in payouts) vs the sum of its ledger entries;
 * - HOLD: a wallet's held total vs the sum of its active holds;
 * - BALANCE_TRANSACTIONS: a developer's available balance vs the sum of its balance transactions' net;
 * - IN_PAYOUTS: a developer's money in payouts vs the sum of its PENDING payouts;
 * - PAYOUT / PAYOUT_ITEMS: a payout's amount / item count vs the sum of its items' net / their number;
 * - COMPANY: the wallet company's account vs the fees taken less the adjustments it funded;
 * - BOOKS: per currency, the sum of every entry inside the books (all but top-ups and paid payouts,
 *   the two that cross their boundary) vs 0: every movement entered both sides.
 */
export interface LedgerMismatch {
  kind: 'WALLET' | 'DEVELOPER' | 'DEVELOPER_PAYOUTS' | 'HOLD' | 'BALANCE_TRANSACTIONS' | 'IN_PAYOUTS' | 'PAYOUT' | 'PAYOUT_ITEMS' | 'COMPANY' | 'BOOKS';
  /** The wallet id, the developer id with the currency after a colon, the payout id, or the currency. */
  id: string;
  balance: number;
  ledgerSum: number;
}

export interface LedgerCheck {
  ok: boolean;
  checkedWallets: number;
  checkedDevelopers: number;
  checkedPayouts: number;
  mismatches: LedgerMismatch[];
}

/** Σ of one ledger account per developer and currency, compared with a column of developer_balances (both ways: an entry without a balance row counts). */
const developerAccountSql = (kind: 'DEVELOPER' | 'DEVELOPER_PAYOUTS', column: string): string => `
         select '${kind}', b.developer_id::text || ':' || b.currency, b.${column}, coalesce(l.total, 0)
           from developer_balances b
           left join (select developer_id, currency, sum(amount) as total from ledger_entries
                       where account = '${kind}' group by developer_id, currency) l
             on l.developer_id = b.developer_id and l.currency = b.currency
          where b.${column} <> coalesce(l.total, 0)
         union all
         select '${kind}', l.developer_id::text || ':' || l.currency, 0, sum(l.amount)
           from ledger_entries l
          where l.account = '${kind}'
            and not exists (select 1 from developer_balances b where b.developer_id = l.developer_id and b.currency = l.currency)
          group by l.developer_id, l.currency
         having sum(l.amount) <> 0`;

/**
 * Proves the books: for every wallet and every developer account, Σ ledger entries = balance; for
 * every wallet, its held total = Σ its active holds (PENDING transactions' amounts); for every
 * developer and currency, available = Σ net of its balance transactions and in payouts = Σ its
 * PENDING payouts; for every payout, amount = Σ net of the balance transactions it holds (and
 * itemCount = their number); the wallet company's account = fees less adjustments; and every
 * movement inside the books entered both sides. (held <= balance is a CHECK of the wallets table,
 * so available = balance - held is never negative.) One consistent snapshot (REPEATABLE READ, read
 * only), so money moving meanwhile cannot make a balanced ledger look unbalanced.
 */
export async function checkLedger(em: EntityManager): Promise<LedgerCheck> {
  return em.transactional(
    async (tem) => {
      const [counts] = await tem.execute<Array<{ wallets: string; developers: string; payouts: string }>>(
        `select (select count(*) from wallets) as wallets, (select count(*) from developer_balances) as developers,
                (select count(*) from payouts) as payouts`,
      );
      const rows = await tem.execute<Array<{ kind: LedgerMismatch['kind']; id: string; balance: string; ledgerSum: string }>>(
        `select 'WALLET' as kind, w.id, w.balance, coalesce(l.total, 0) as "ledgerSum"
           from wallets w
           left join (select wallet_id, sum(amount) as total from ledger_entries where account = 'WALLET' group by wallet_id) l
             on l.wallet_id = w.id
          where w.balance <> coalesce(l.total, 0)
         union all ${developerAccountSql('DEVELOPER', 'balance')}
         union all ${developerAccountSql('DEVELOPER_PAYOUTS', 'in_payouts')}
         union all
         select 'HOLD', w.id, w.held, coalesce(h.total, 0)
           from wallets w
           left join (select wallet_id, sum(amount) as total from transactions where status = 'PENDING' group by wallet_id) h
             on h.wallet_id = w.id
          where w.held <> coalesce(h.total, 0)
         union all
         select 'BALANCE_TRANSACTIONS', coalesce(b.developer_id, t.developer_id)::text || ':' || coalesce(b.currency, t.currency),
                coalesce(b.balance, 0), coalesce(t.total, 0)
           from developer_balances b
           full join (select developer_id, currency, sum(net) as total from balance_transactions group by developer_id, currency) t
             on t.developer_id = b.developer_id and t.currency = b.currency
          where coalesce(b.balance, 0) <> coalesce(t.total, 0)
         union all
         select 'IN_PAYOUTS', coalesce(b.developer_id, p.developer_id)::text || ':' || coalesce(b.currency, p.currency),
                coalesce(b.in_payouts, 0), coalesce(p.total, 0)
           from developer_balances b
           full join (select developer_id, currency, sum(amount) as total from payouts where status = 'PENDING' group by developer_id, currency) p
             on p.developer_id = b.developer_id and p.currency = b.currency
          where coalesce(b.in_payouts, 0) <> coalesce(p.total, 0)
         union all
         select k.kind, p.id::text, case k.kind when 'PAYOUT' then p.amount else p.item_count end,
                case k.kind when 'PAYOUT' then coalesce(i.total, 0) else i.n end
           from payouts p
           cross join lateral (select sum(bt.net) as total, count(*) as n from balance_transactions bt
                                where bt.developer_id = p.developer_id and bt.currency = p.currency and bt.type <> 'payout'
                                  and bt.created_at >= p.period_start and bt.created_at < p.period_end) i
           cross join (values ('PAYOUT'), ('PAYOUT_ITEMS')) k(kind)
          where case k.kind when 'PAYOUT' then p.amount <> coalesce(i.total, 0) else p.item_count <> i.n end
         union all
         select 'COMPANY', coalesce(c.currency, f.currency), coalesce(c.total, 0), coalesce(f.total, 0)
           from (select currency, sum(amount) as total from ledger_entries where account = 'COMPANY' group by currency) c
           full join (select currency, sum(case type when 'adjustment' then -amount else fee end) as total
                        from balance_transactions where type in ('payment', 'adjustment') group by currency) f
             on f.currency = c.currency
          where coalesce(c.total, 0) <> coalesce(f.total, 0)
         union all
         select 'BOOKS', currency, 0, sum(amount)
           from ledger_entries where kind not in ('TOPUP', 'PAYOUT_PAID')
          group by currency having sum(amount) <> 0`,
      );
      const mismatches = rows.map((r) => ({ kind: r.kind, id: r.id, balance: toAmountNumber(r.balance), ledgerSum: toAmountNumber(r.ledgerSum) }));
      return {
        ok: mismatches.length === 0,
        checkedWallets: Number(counts!.wallets),
        checkedDevelopers: Number(counts!.developers),
        checkedPayouts: Number(counts!.payouts),
        mismatches,
      };
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
  );
}
