import { Arg, Authorized, Ctx, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { AccountService } from './account.service.js';
import { CurrentUser, Role } from '../auth/authorization.js';
import type { UserPrincipal as User } from '../auth/principal.js';
import { differenceOf, toAmountNumber } from '../money.js';
import { MyWallet, WalletIdResponse } from './account.types.js';

@Resolver()
export class AccountResolver {
  constructor(
    private readonly accounts: AccountService,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Query(() => WalletIdResponse, {
    description:
      'Developer (secret key): resolve a username or phone number to a walletId. Identifiers starting with 09, 9, 08 or 8 are phone numbers. REST: GET /api/v1/account/{identifier}.',
  })
  async walletId(@Arg('identifier', () => String) identifier: string, @Ctx() ctx: Context): Promise<WalletIdResponse> {
    // Look-ups reveal whether a phone number is a customer: they have their own, stricter limit.
    await ctx.limits.lookup();
    const walletId = await this.accounts.walletIdFor(ctx.work, identifier);
    return Object.assign(new WalletIdResponse(), { walletId });
  }

  @Authorized(Role.USER)
  @Query(() => MyWallet, { description: "Wallet app (user token): my wallet's id, status, balance and available balance (balance minus holds)." })
  async myWallet(@Ctx() ctx: Context, @CurrentUser() me: User): Promise<MyWallet> {
    const { username, wallet } = await this.accounts.walletOfUser(ctx.work, me.userId);
    return Object.assign(new MyWallet(), {
      walletId: wallet.id,
      username,
      status: wallet.status,
      balance: toAmountNumber(wallet.balance),
      availableBalance: differenceOf(wallet.balance, wallet.held),
      currency: wallet.currency,
    });
  }
}
