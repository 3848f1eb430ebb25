import { Arg, Authorized, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import { CurrentDeveloper, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal } from '../auth/principal.js';
import { TransactionView } from './transaction.types.js';

@Resolver()
export class TransactionResolver {
  @Authorized(Role.DEVELOPER)
  @Query(() => TransactionView, {
    description: 'Developer (secret key): one of its transactions. REST: GET /api/v1/wallet/transaction/{transactionId}.',
  })
  async transaction(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: DeveloperPrincipal): Promise<TransactionView> {
    return TransactionView.from(await ctx.services.transactions.getForDeveloper(ctx.em, dev.developerId, id));
  }
}
