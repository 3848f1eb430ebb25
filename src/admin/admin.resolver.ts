import { Arg, Authorized, Ctx, Float, ID, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import { Audited } from '../audit/audit.middleware.js';
import type { Context } from '../context.js';
import { Role } from '../auth/authorization.js';
import type { Wallet} from '../accounts/wallet.entity.js';
import { WalletStatus } from '../accounts/wallet.entity.js';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import { TransactionView } from '../transactions/transaction.types.js';
import { issueSecretKey, revokeSecretKey } from '../auth/secret-keys.js';
import { differenceOf, toAmountNumber } from '../money.js';
import { mapPage, type Page } from '../db/pagination.js';
import type {
  UserView} from './admin.types.js';
import {
  CreatedUser,
  CreateUserInput,
  DeveloperConnection,
  DeveloperView,
  IssuedSecretKey,
  PaymentRequestConnection,
  PaymentRequestFilter,
  RevokedSecretKey,
  TransactionConnection,
  TransactionFilter,
  LedgerCheckView,
  UserConnection,
  UserFilter,
  WalletConnection,
  WalletView,
} from './admin.types.js';
import { checkLedger } from '../ledger/ledger-check.js';

/** A wallet as internal tools see it. */
export const walletView = (w: Wallet): WalletView =>
  Object.assign(new WalletView(), {
    walletId: w.id,
    userId: w.userId,
    status: w.status,
    balance: toAmountNumber(w.balance),
    held: toAmountNumber(w.held),
    availableBalance: differenceOf(w.balance, w.held),
    currency: w.currency,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  });


/**
 * Internal tools (admin token): accounts, keys, money operations and cursor-paginated lists,
 * each through the feature's own service.
 */
@Authorized(Role.ADMIN)
@UseMiddleware(Audited)
@Resolver()
export class AdminResolver {
  @Mutation(() => DeveloperView)
  async createDeveloper(@Arg('name', () => String) name: string, @Ctx() ctx: Context): Promise<DeveloperView> {
    return ctx.services.developers.create(ctx.em, name);
  }

  @Mutation(() => IssuedSecretKey, { description: 'Issues a secret key for the running environment (sk_test_ / sk_live_).' })
  async issueSecretKey(@Arg('developerId', () => ID) developerId: string, @Ctx() ctx: Context): Promise<IssuedSecretKey> {
    return issueSecretKey(ctx.em, ctx.services.config, developerId);
  }

  @Mutation(() => RevokedSecretKey, { description: 'Revokes a key; every instance refuses it within 5 seconds.' })
  async revokeSecretKey(@Arg('keyId', () => ID) keyId: string, @Ctx() ctx: Context): Promise<RevokedSecretKey> {
    const revoked = await revokeSecretKey(ctx.em, keyId);
    ctx.services.keys.forget(keyId);
    return revoked;
  }

  @Mutation(() => CreatedUser)
  async createUser(@Arg('input', () => CreateUserInput) input: CreateUserInput, @Ctx() ctx: Context): Promise<CreatedUser> {
    return ctx.services.accounts.createUser(ctx.em, input);
  }

  @Mutation(() => WalletView)
  async topUpWallet(
    @Arg('walletId', () => String) walletId: string,
    @Arg('amount', () => Float) amount: number,
    @Ctx() ctx: Context,
  ): Promise<WalletView> {
    return walletView(await ctx.services.accounts.topUp(ctx.em, walletId, amount));
  }

  @Mutation(() => WalletView)
  async setWalletStatus(
    @Arg('walletId', () => String) walletId: string,
    @Arg('status', () => WalletStatus) status: WalletStatus,
    @Ctx() ctx: Context,
  ): Promise<WalletView> {
    return walletView(await ctx.services.accounts.setWalletStatus(ctx.em, walletId, status));
  }

  @Mutation(() => TransactionView, {
    description:
      'Refunds `amount` (all that is left when omitted) of a COMPLETED transaction: the wallet is credited back, the developer debited; REFUNDED once all of it is refunded.',
  })
  async refundTransaction(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: Context,
    @Arg('amount', () => Float, { nullable: true }) amount?: number | null,
  ): Promise<TransactionView> {
    return TransactionView.from(await ctx.services.transactions.refund(ctx.em, id, amount));
  }

  @Query(() => LedgerCheckView, { description: 'Proves Σ ledger entries = balance for every wallet and developer balance.' })
  async ledgerCheck(@Ctx() ctx: Context): Promise<LedgerCheckView> {
    return checkLedger(ctx.em);
  }

  @Query(() => UserConnection)
  async users(
    @Ctx() ctx: Context,
    @Arg('filter', () => UserFilter, { nullable: true }) filter?: UserFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<UserView>> {
    return ctx.services.accounts.listUsers(ctx.em, filter ?? {}, first, after);
  }

  @Query(() => DeveloperConnection)
  async developers(
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<DeveloperView>> {
    return ctx.services.developers.list(ctx.em, first, after);
  }

  @Query(() => WalletConnection)
  async wallets(
    @Ctx() ctx: Context,
    @Arg('status', () => WalletStatus, { nullable: true }) status?: WalletStatus,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<WalletView>> {
    return mapPage(await ctx.services.accounts.listWallets(ctx.em, { status }, first, after), walletView);
  }

  @Query(() => PaymentRequestConnection)
  async paymentRequests(
    @Ctx() ctx: Context,
    @Arg('filter', () => PaymentRequestFilter, { nullable: true }) filter?: PaymentRequestFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<PaymentRequestView>> {
    const walletIds = await ctx.services.accounts.walletIdsOfOwner(ctx.em, filter ?? {});
    return mapPage(await ctx.services.payments.list(ctx.em, filter ?? {}, walletIds, first, after), PaymentRequestView.from);
  }

  @Query(() => TransactionConnection)
  async transactions(
    @Ctx() ctx: Context,
    @Arg('filter', () => TransactionFilter, { nullable: true }) filter?: TransactionFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<TransactionView>> {
    return mapPage(await ctx.services.transactions.list(ctx.em, filter ?? {}, first, after), TransactionView.from);
  }
}
