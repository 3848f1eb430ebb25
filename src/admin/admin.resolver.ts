import { Arg, Authorized, Ctx, Float, ID, Int, Mutation, Query, Resolver, UseMiddleware } from 'type-graphql';
import { Audited } from '../audit/audit.middleware.js';
import type { Context } from '../context.js';
import type { Config } from '../config.js';
import type { AccountService } from '../accounts/account.service.js';
import type { DeveloperService } from '../developers/developer.service.js';
import type { SecretKeyVerifier } from '../auth/secret-keys.js';
import type { PaymentRequestService } from '../payment-requests/payment-request.service.js';
import type { TransactionService } from '../transactions/transaction.service.js';
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
  constructor(
    private readonly accounts: AccountService,
    private readonly developerAccounts: DeveloperService,
    private readonly keys: SecretKeyVerifier,
    private readonly payments: PaymentRequestService,
    private readonly transactionService: TransactionService,
    private readonly config: Config,
  ) {}

  @Mutation(() => DeveloperView)
  async createDeveloper(@Arg('name', () => String) name: string, @Ctx() ctx: Context): Promise<DeveloperView> {
    return this.developerAccounts.create(ctx.work, name);
  }

  @Mutation(() => IssuedSecretKey, { description: 'Issues a secret key for the running environment (sk_test_ / sk_live_).' })
  async issueSecretKey(@Arg('developerId', () => ID) developerId: string, @Ctx() ctx: Context): Promise<IssuedSecretKey> {
    return issueSecretKey(ctx.work, this.config, developerId);
  }

  @Mutation(() => RevokedSecretKey, { description: 'Revokes a key; every instance refuses it within 5 seconds.' })
  async revokeSecretKey(@Arg('keyId', () => ID) keyId: string, @Ctx() ctx: Context): Promise<RevokedSecretKey> {
    const revoked = await revokeSecretKey(ctx.work, keyId);
    this.keys.forget(keyId);
    return revoked;
  }

  @Mutation(() => CreatedUser)
  async createUser(@Arg('input', () => CreateUserInput) input: CreateUserInput, @Ctx() ctx: Context): Promise<CreatedUser> {
    return this.accounts.createUser(ctx.work, input);
  }

  @Mutation(() => WalletView)
  async topUpWallet(
    @Arg('walletId', () => String) walletId: string,
    @Arg('amount', () => Float) amount: number,
    @Ctx() ctx: Context,
  ): Promise<WalletView> {
    return walletView(await this.accounts.topUp(ctx.work, walletId, amount));
  }

  @Mutation(() => WalletView)
  async setWalletStatus(
    @Arg('walletId', () => String) walletId: string,
    @Arg('status', () => WalletStatus) status: WalletStatus,
    @Ctx() ctx: Context,
  ): Promise<WalletView> {
    return walletView(await this.accounts.setWalletStatus(ctx.work, walletId, status));
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
    return TransactionView.from(await this.transactionService.refund(ctx.work, id, amount));
  }

  @Query(() => LedgerCheckView, { description: 'Proves Σ ledger entries = balance for every wallet and developer balance.' })
  async ledgerCheck(@Ctx() ctx: Context): Promise<LedgerCheckView> {
    return checkLedger(ctx.work.em);
  }

  @Query(() => UserConnection)
  async users(
    @Ctx() ctx: Context,
    @Arg('filter', () => UserFilter, { nullable: true }) filter?: UserFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<UserView>> {
    return this.accounts.listUsers(ctx.work.em, filter ?? {}, first, after);
  }

  @Query(() => DeveloperConnection)
  async developers(
    @Ctx() ctx: Context,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<DeveloperView>> {
    return this.developerAccounts.list(ctx.work.em, first, after);
  }

  @Query(() => WalletConnection)
  async wallets(
    @Ctx() ctx: Context,
    @Arg('status', () => WalletStatus, { nullable: true }) status?: WalletStatus,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<WalletView>> {
    return mapPage(await this.accounts.listWallets(ctx.work.em, { status }, first, after), walletView);
  }

  @Query(() => PaymentRequestConnection)
  async paymentRequests(
    @Ctx() ctx: Context,
    @Arg('filter', () => PaymentRequestFilter, { nullable: true }) filter?: PaymentRequestFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<PaymentRequestView>> {
    const walletIds = await this.accounts.walletIdsOfOwner(ctx.work, filter ?? {});
    return mapPage(await this.payments.list(ctx.work.em, filter ?? {}, walletIds, first, after), PaymentRequestView.from);
  }

  @Query(() => TransactionConnection)
  async transactions(
    @Ctx() ctx: Context,
    @Arg('filter', () => TransactionFilter, { nullable: true }) filter?: TransactionFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<TransactionView>> {
    return mapPage(await this.transactionService.list(ctx.work.em, filter ?? {}, first, after), TransactionView.from);
  }
}
