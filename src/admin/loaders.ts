import DataLoader from 'dataloader';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityName } from '@mikro-orm/core';
import { Wallet } from '../accounts/wallet.entity.js';
import { User } from '../accounts/user.entity.js';
import { Developer } from '../developers/developer.entity.js';
import { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import { Refund, Transaction } from '../transactions/transaction.entity.js';
import { LedgerEntry } from '../ledger/ledger-entry.entity.js';
import { SecretKey } from '../auth/secret-key.entity.js';
import { childPageLoader } from '../db/pagination.js';
import type { EventPayload } from '../events/events.js';
import type { Context } from '../context.js';

/** A developer's settlement balance in one currency. */
export interface DeveloperBalanceRow {
  developerId: string;
  currency: string;
  balance: string;
  inPayouts: string;
}

/**
 * Per-operation batch loaders for the internal tools' graph: every field that follows a link
 * (a payment request's wallet, a wallet's user, …) asks its loader, and each loader answers all
 * the ids one level of a page asked for with one query, so a nested page costs one query per
 * level instead of one per row (N+1).
 */
export function createLoaders(em: EntityManager) {
  const byId = <T extends { id: string }>(entity: EntityName<T>) =>
    new DataLoader<string, T | null>(async (ids) => {
      const rows = await em.find(entity, { id: { $in: [...ids] } } as never);
      const found = new Map(rows.map((r) => [r.id, r]));
      return ids.map((id) => found.get(id) ?? null);
    });
  const groupedBy = <T extends object>(entity: EntityName<T>, key: keyof T & string, orderBy: Record<string, 'asc' | 'desc'>) =>
    new DataLoader<string, T[]>(async (ids) => {
      const rows = await em.find(entity, { [key]: { $in: [...ids] } } as never, { orderBy: orderBy as never });
      const groups = new Map<string, T[]>(ids.map((id) => [id, []]));
      for (const row of rows) groups.get(String(row[key]))?.push(row);
      return ids.map((id) => groups.get(id)!);
    });
  return {
    wallet: byId(Wallet),
    user: byId(User),
    developer: byId(Developer),
    paymentRequest: byId(PaymentRequest),
    transaction: byId(Transaction),
    walletOfUser: new DataLoader<string, Wallet | null>(async (userIds) => {
      const rows = await em.find(Wallet, { userId: { $in: [...userIds] } });
      const found = new Map(rows.map((w) => [w.userId, w]));
      return userIds.map((id) => found.get(id) ?? null);
    }),
    paymentRequestsOfWallet: childPageLoader(em, PaymentRequest, 'payment_requests', 'wallet_id'),
    paymentRequestsOfDeveloper: childPageLoader(em, PaymentRequest, 'payment_requests', 'developer_id'),
    /** The payer's report of each request (null: not reported); unmapped columns, read for operators only. */
    reportOfPaymentRequest: new DataLoader<string, { reportedAt: Date; reason: string | null } | null>(async (ids) => {
      const rows = await em.execute<Array<{ id: string; reported_at: Date; report_reason: string | null }>>(
        `select id, reported_at, report_reason from payment_requests where id in (?) and reported_at is not null`,
        [[...ids]],
      );
      const found = new Map(rows.map((r) => [r.id, { reportedAt: new Date(r.reported_at), reason: r.report_reason }]));
      return ids.map((id) => found.get(id) ?? null);
    }),
    /** How many wallets block each developer (payer controls). */
    blockedCountOfDeveloper: new DataLoader<string, number>(async (ids) => {
      const rows = await em.execute<Array<{ developer_id: string; n: number }>>(
        `select developer_id, count(*)::int as n from merchant_blocks where developer_id in (?) group by developer_id`,
        [[...ids]],
      );
      const found = new Map(rows.map((r) => [r.developer_id, r.n]));
      return ids.map((id) => found.get(id) ?? 0);
    }),
    /** How many of each developer's requests their payers reported as unwanted. */
    reportedCountOfDeveloper: new DataLoader<string, number>(async (ids) => {
      const rows = await em.execute<Array<{ developer_id: string; n: number }>>(
        `select developer_id, count(*)::int as n from payment_requests where developer_id in (?) and reported_at is not null group by developer_id`,
        [[...ids]],
      );
      const found = new Map(rows.map((r) => [r.developer_id, r.n]));
      return ids.map((id) => found.get(id) ?? 0);
    }),
    ledgerEntriesOfWallet: childPageLoader(em, LedgerEntry, 'ledger_entries', 'wallet_id'),
    refundsOfTransaction: groupedBy(Refund, 'transactionId', { createdAt: 'asc' }),
    ledgerEntriesOfTransaction: groupedBy(LedgerEntry, 'transactionId', { id: 'asc' }),
    secretKeysOfDeveloper: groupedBy(SecretKey, 'developerId', { createdAt: 'desc' }),
    eventsOfPaymentRequest: new DataLoader<string, EventPayload[]>(async (ids) => {
      const rows = await em.execute<Array<{ payment_request_id: string; payload: EventPayload }>>(
        `select payment_request_id, payload from events where payment_request_id = any(array[?]::uuid[]) order by sequence`,
        [[...ids]],
      );
      return ids.map((id) => rows.filter((r) => r.payment_request_id === id).map((r) => r.payload));
    }),
    balancesOfDeveloper: new DataLoader<string, DeveloperBalanceRow[]>(async (developerIds) => {
      const rows = await em.execute<Array<{ developer_id: string; currency: string; balance: string; in_payouts: string }>>(
        `select developer_id, currency, balance, in_payouts from developer_balances where developer_id = any(array[?]::uuid[]) order by currency`,
        [[...developerIds]],
      );
      return developerIds.map((id) =>
        rows.filter((r) => r.developer_id === id).map((r) => ({ developerId: id, currency: r.currency, balance: r.balance, inPayouts: r.in_payouts })),
      );
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;

/** The batch loaders of one operation (made on first use, shared by every field it resolves). */
export const loadersOf = (ctx: Pick<Context, 'scoped'>): Loaders => ctx.scoped(createLoaders);
