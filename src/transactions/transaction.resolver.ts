import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { TransactionService } from './transaction.service.js';
import { CurrentDeveloper, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal } from '../auth/principal.js';
import { CaptureTransactionInput, TransactionView } from './transaction.types.js';

@Resolver()
export class TransactionResolver {
  constructor(
    private readonly transactions: TransactionService,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Query(() => TransactionView, {
    description: 'Developer (secret key): one of its transactions. REST: GET /api/v1/wallet/transaction/{transactionId}.',
  })
  async transaction(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: DeveloperPrincipal): Promise<TransactionView> {
    return TransactionView.from(await this.transactions.getForDeveloper(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => TransactionView, {
    description:
      'Developer (secret key): capture a held (PENDING, MANUAL) transaction: all of it, or `amount` (more than 0, at most the held amount, 2 decimals at most); the rest is released. REST: POST /api/v1/wallet/transaction/{transactionId}/capture.',
  })
  async captureTransaction(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: DeveloperPrincipal,
    @Arg('input', () => CaptureTransactionInput, { nullable: true, description: 'Default: capture all that is held.' }) input?: CaptureTransactionInput | null,
  ): Promise<TransactionView> {
    return TransactionView.from(await this.transactions.capture(ctx.work, dev.developerId, id, input?.amount));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => TransactionView, {
    description: 'Developer (secret key): void a held (PENDING) transaction: CANCELLED, the hold released. REST: POST /api/v1/wallet/transaction/{transactionId}/void.',
  })
  async voidTransaction(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: DeveloperPrincipal): Promise<TransactionView> {
    return TransactionView.from(await this.transactions.void(ctx.work, dev.developerId, id));
  }
}
