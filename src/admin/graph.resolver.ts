import { Arg, Authorized, Ctx, FieldResolver, Int, Resolver, Root } from 'type-graphql';
import type { Context } from '../context.js';
import { Role } from '../auth/authorization.js';
import { toAmountNumber } from '../money.js';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import { TransactionView } from '../transactions/transaction.types.js';
import { EventView } from '../events/event.types.js';
import type { Wallet } from '../accounts/wallet.entity.js';
import type { User } from '../accounts/user.entity.js';
import type { LedgerEntry } from '../ledger/ledger-entry.entity.js';
import { mapPage, type Page } from '../db/pagination.js';
import {
  DeveloperBalanceView,
  DeveloperView,
  LedgerEntryConnection,
  LedgerEntryView,
  PaymentRequestConnection,
  RefundView,
  SecretKeyView,
  UserView,
  WalletView,
} from './admin.types.js';
import { walletView } from './admin.resolver.js';
import { loadersOf } from './loaders.js';

const ledgerEntryView = (e: LedgerEntry): LedgerEntryView =>
  Object.assign(new LedgerEntryView(), { ...e, id: String(e.id), amount: toAmountNumber(e.amount) });


/**
 * The internal tools' graph: links between payment requests, wallets, users, developers,
 * transactions, refunds and ledger entries. Every link is admin-only and goes through the
 * operation's batch loaders (one query per level of a page, not per row).
 */
@Resolver(() => PaymentRequestView)
export class PaymentRequestGraph {
  @Authorized(Role.ADMIN)
  @FieldResolver(() => WalletView, { nullable: true, description: 'Internal tools: the wallet asked (an open request: the wallet that paid it, null before).' })
  async wallet(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<WalletView | null> {
    const row = await loadersOf(ctx).paymentRequest.load(pr.id);
    return row!.walletId === null ? null : walletView((await loadersOf(ctx).wallet.load(row!.walletId))!);
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => DeveloperView, { description: 'Internal tools: the developer that asked.' })
  async developer(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<DeveloperView> {
    const row = await loadersOf(ctx).paymentRequest.load(pr.id);
    return (await loadersOf(ctx).developer.load(row!.developerId))!;
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => TransactionView, { nullable: true, description: 'Internal tools: the transaction of an APPROVED request.' })
  async transaction(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<TransactionView | null> {
    if (!pr.transactionId) return null;
    const tx = await loadersOf(ctx).transaction.load(pr.transactionId);
    return tx ? TransactionView.from(tx) : null;
  }

  @Authorized(Role.ADMIN)
  @Authorized(Role.ADMIN)
  @FieldResolver(() => Boolean, { description: 'Internal tools: its payer reported it as unwanted (never shown to any developer).' })
  async reported(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<boolean> {
    return (await loadersOf(ctx).reportOfPaymentRequest.load(pr.id)) !== null;
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => String, { nullable: true, description: "Internal tools: the payer's reason, when it reported the request with one." })
  async reportReason(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<string | null> {
    return (await loadersOf(ctx).reportOfPaymentRequest.load(pr.id))?.reason ?? null;
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => [EventView], { description: 'Internal tools: its merchant events, in sequence (as delivered).' })
  async events(@Root() pr: PaymentRequestView, @Ctx() ctx: Context): Promise<EventView[]> {
    return (await loadersOf(ctx).eventsOfPaymentRequest.load(pr.id)).map(EventView.from);
  }
}

@Resolver(() => TransactionView)
export class TransactionGraph {
  @Authorized(Role.ADMIN)
  @FieldResolver(() => PaymentRequestView, { description: 'Internal tools: the payment request it paid.' })
  async paymentRequest(@Root() tx: TransactionView, @Ctx() ctx: Context): Promise<PaymentRequestView> {
    const row = await loadersOf(ctx).transaction.load(tx.id);
    return PaymentRequestView.from((await loadersOf(ctx).paymentRequest.load(row!.paymentRequestId))!);
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => [LedgerEntryView], { description: 'Internal tools: its ledger entries (payment and refunds), oldest first.' })
  async ledgerEntries(@Root() tx: TransactionView, @Ctx() ctx: Context): Promise<LedgerEntryView[]> {
    return (await loadersOf(ctx).ledgerEntriesOfTransaction.load(tx.id)).map(ledgerEntryView);
  }

  @Authorized(Role.ADMIN)
  @FieldResolver(() => [RefundView], { description: 'Internal tools: its refunds, oldest first.' })
  async refunds(@Root() tx: TransactionView, @Ctx() ctx: Context): Promise<RefundView[]> {
    return (await loadersOf(ctx).refundsOfTransaction.load(tx.id)).map((r) =>
      Object.assign(new RefundView(), { id: r.id, amount: toAmountNumber(r.amount), currency: r.currency, createdAt: r.createdAt }),
    );
  }
}

@Authorized(Role.ADMIN)
@Resolver(() => WalletView)
export class WalletGraph {
  @FieldResolver(() => UserView)
  async user(@Root() wallet: WalletView, @Ctx() ctx: Context): Promise<UserView> {
    return (await loadersOf(ctx).user.load(wallet.userId))!;
  }

  @FieldResolver(() => LedgerEntryConnection, { description: "The wallet's ledger entries, newest first." })
  async ledgerEntries(
    @Root() wallet: WalletView,
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<LedgerEntryView>> {
    return mapPage(await loadersOf(ctx).ledgerEntriesOfWallet.load({ parentId: wallet.walletId, first, after }), ledgerEntryView);
  }

  @FieldResolver(() => PaymentRequestConnection, { description: 'Payment requests made of this wallet, newest first.' })
  async paymentRequests(
    @Root() wallet: WalletView,
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<PaymentRequestView>> {
    return mapPage(await loadersOf(ctx).paymentRequestsOfWallet.load({ parentId: wallet.walletId, first, after }), PaymentRequestView.from);
  }
}

@Authorized(Role.ADMIN)
@Resolver(() => DeveloperView)
export class DeveloperGraph {
  @FieldResolver(() => [SecretKeyView], { description: 'Its secret keys (ids and state; the secrets are never stored).' })
  async secretKeys(@Root() developer: DeveloperView, @Ctx() ctx: Context): Promise<SecretKeyView[]> {
    return (await loadersOf(ctx).secretKeysOfDeveloper.load(developer.id)).map((k) =>
      Object.assign(new SecretKeyView(), { keyId: k.id, environment: k.environment, createdAt: k.createdAt, revokedAt: k.revokedAt }),
    );
  }

  @FieldResolver(() => [DeveloperBalanceView], { description: 'Settlement balance per currency: available and in payouts.' })
  async balance(@Root() developer: DeveloperView, @Ctx() ctx: Context): Promise<DeveloperBalanceView[]> {
    return (await loadersOf(ctx).balancesOfDeveloper.load(developer.id)).map((b) =>
      Object.assign(new DeveloperBalanceView(), {
        currency: b.currency,
        balance: toAmountNumber(b.balance),
        available: toAmountNumber(b.balance),
        inPayouts: toAmountNumber(b.inPayouts),
      }),
    );
  }

  @FieldResolver(() => Int, { description: 'How many of its payment requests their payers reported as unwanted (act on many).' })
  async reportedCount(@Root() developer: DeveloperView, @Ctx() ctx: Context): Promise<number> {
    return loadersOf(ctx).reportedCountOfDeveloper.load(developer.id);
  }

  @FieldResolver(() => Int, { description: 'How many wallets block it (their holders no longer accept its payment requests).' })
  async blockedCount(@Root() developer: DeveloperView, @Ctx() ctx: Context): Promise<number> {
    return loadersOf(ctx).blockedCountOfDeveloper.load(developer.id);
  }

  @FieldResolver(() => PaymentRequestConnection, { description: 'Its payment requests, newest first.' })
  async paymentRequests(
    @Root() developer: DeveloperView,
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<PaymentRequestView>> {
    return mapPage(await loadersOf(ctx).paymentRequestsOfDeveloper.load({ parentId: developer.id, first, after }), PaymentRequestView.from);
  }
}

@Authorized(Role.ADMIN)
@Resolver(() => UserView)
export class UserGraph {
  @FieldResolver(() => WalletView, { nullable: true })
  async wallet(@Root() user: UserView | User, @Ctx() ctx: Context): Promise<WalletView | null> {
    const wallet: Wallet | null = await loadersOf(ctx).walletOfUser.load(user.id);
    return wallet ? walletView(wallet) : null;
  }
}
