import { Arg, Authorized, Ctx, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import { Role } from '../auth/authorization.js';
import { WalletIdResponse } from './account.types.js';

@Resolver()
export class AccountResolver {
  @Authorized(Role.DEVELOPER)
  @Query(() => WalletIdResponse, {
    description:
      'Developer (secret key): resolve a username or phone number to a walletId. Identifiers starting with 09, 9, 08 or 8 are phone numbers. REST: GET /api/v1/account/{identifier}.',
  })
  async walletId(@Arg('identifier', () => String) identifier: string, @Ctx() ctx: Context): Promise<WalletIdResponse> {
    // Look-ups reveal whether a phone number is a customer: they have their own, stricter limit.
    await ctx.limits.lookup();
    const walletId = await ctx.services.accounts.walletIdFor(ctx.em, identifier);
    return Object.assign(new WalletIdResponse(), { walletId });
  }
}
