import { Arg, Ctx, Query, Resolver } from 'type-graphql';
import { asDeveloper, type Context } from '../context.js';
import { WalletIdResponse } from './account.types.js';
import { stricter } from '../rate-limit.js';

@Resolver()
export class AccountResolver {
  @Query(() => WalletIdResponse, {
    description:
      'Developer (secret key): resolve a username or phone number to a walletId. Identifiers starting with 09, 9, 08 or 8 are phone numbers. REST: GET /api/v1/account/{identifier}.',
  })
  async walletId(@Arg('identifier', () => String) identifier: string, @Ctx() ctx: Context): Promise<WalletIdResponse> {
    const { keyId } = asDeveloper(ctx);
    // Look-ups reveal whether a phone number is a customer: they have their own, stricter limit.
    ctx.rateLimit = stricter(ctx.rateLimit, await ctx.services.limits.lookup(keyId));
    const walletId = await ctx.services.accounts.walletIdFor(ctx.em, identifier);
    return Object.assign(new WalletIdResponse(), { walletId });
  }
}
