import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { asDeveloper, type Context } from '../context.js';
import { TransactionView } from './transaction.types.js';

@Resolver()
export class TransactionResolver {
  @Query(() => TransactionView, {
    description: 'Developer (secret key): one of its transactions. REST: GET /api/v1/wallet/transaction/{transactionId}.',
  })
  async transaction(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<TransactionView> {
    const { developerId } = asDeveloper(ctx);
    return TransactionView.from(await ctx.services.transactions.getForDeveloper(ctx.em, developerId, id));
  }
}
