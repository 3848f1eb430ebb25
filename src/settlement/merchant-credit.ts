/**
 * The merchant's side of a payment as CTEs for a statement's WITH list (the ledger's payment
 * movement, src/ledger/ledger.ts, puts them after the wallet's debit; the capture runs them on
 * their own, src/settlement/settlement.service.ts): the fee under the developer's schedule, or the
 * defaults — round_half_up(gross × percent / 100, 2) + fixed, at most the gross, in NUMERIC — the
 * net credited to the developer's available balance (its row's lock first), the `payment` balance
 * transaction dated by the clock after that lock (`bal.at`), and the ledger: the developer credited
 * the gross, then the fee moved from the developer to the wallet company's account (both sides;
 * none for a zero fee). `bt` returns a row when the entry was written. With `onlyIf` (a CTE's
 * name), nothing happens unless that CTE returned a row. The parameters are SQL references ($n,
 * with their casts).
 */
export function merchantCreditSql(p: {
  entryId: string;
  developer: string;
  transaction: string;
  gross: string;
  currency: string;
  percent: string;
  fixed: string;
  onlyIf?: string;
}): string {
  return `terms as (
       select coalesce(fs.percent, ${p.percent}) as percent, coalesce(fs.fixed, ${p.fixed}) as fixed
         from (select) one left join fee_schedules fs on fs.developer_id = ${p.developer}),
     f as (select least(${p.gross}, round(${p.gross} * terms.percent / 100, 2) + terms.fixed) as fee from terms),
     bal as (
       insert into developer_balances as b (developer_id, currency, balance)
       select ${p.developer}, ${p.currency}, ${p.gross} - f.fee from f
        ${p.onlyIf ? `where exists (select 1 from ${p.onlyIf})` : ''}
       on conflict (developer_id, currency) do update set balance = b.balance + excluded.balance
       returning clock_timestamp() as at),
     bt as (
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, transaction_id, payment_request_id, reference, created_at)
       select ${p.entryId}, ${p.developer}, 'payment', ${p.gross}, f.fee, ${p.gross} - f.fee, ${p.currency}, t.id, t.payment_request_id, pr.reference, bal.at
         from bal, f, transactions t join payment_requests pr on pr.id = t.payment_request_id
        where t.id = ${p.transaction}
       returning 1),
     merchant_entries as (
       insert into ledger_entries (kind, account, transaction_id, developer_id, amount, currency)
       select 'PAYMENT', 'DEVELOPER', ${p.transaction}, ${p.developer}, ${p.gross}, ${p.currency} from bal
       union all select 'FEE', 'DEVELOPER', ${p.transaction}, ${p.developer}, -f.fee, ${p.currency} from bal, f where f.fee > 0
       union all select 'FEE', 'COMPANY', ${p.transaction}, null, f.fee, ${p.currency} from bal, f where f.fee > 0
       returning 1)`;
}
