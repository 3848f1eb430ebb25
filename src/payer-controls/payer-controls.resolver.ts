import { Arg, Authorized, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { PayerControls } from './payer-controls.service.js';
import { CurrentUser, Role } from '../auth/authorization.js';
import type { UserPrincipal as User } from '../auth/principal.js';
import { PaymentRequestView } from '../payment-requests/payment-request.types.js';
import { BlockedMerchantView } from './payer-controls.types.js';

/** The wallet app's controls over who may ask the user for money (user token). */
@Resolver()
export class PayerControlsResolver {
  constructor(
    private readonly payerControls: PayerControls,
  ) {}

  @Authorized(Role.USER)
  @Mutation(() => BlockedMerchantView, {
    description:
      "Wallet app (user token): block this request's merchant (its developer) from asking my wallet again, rejecting the request if it is PENDING. Blocking again answers the same block.",
  })
  async blockMerchant(@Arg('paymentRequestId', () => ID) paymentRequestId: string, @Ctx() ctx: Context, @CurrentUser() user: User): Promise<BlockedMerchantView> {
    return BlockedMerchantView.from(await this.payerControls.block(ctx.work, user.userId, paymentRequestId));
  }

  @Authorized(Role.USER)
  @Query(() => [BlockedMerchantView], { description: 'Wallet app (user token): the merchants I blocked, newest first.' })
  async myBlockedMerchants(@Ctx() ctx: Context, @CurrentUser() user: User): Promise<BlockedMerchantView[]> {
    return (await this.payerControls.list(ctx.work, user.userId)).map((row) => BlockedMerchantView.from(row));
  }

  @Authorized(Role.USER)
  @Mutation(() => Boolean, { description: 'Wallet app (user token): lift one of my blocks (the BlockedMerchant id).' })
  async unblockMerchant(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentUser() user: User): Promise<boolean> {
    return this.payerControls.unblock(ctx.work, user.userId, id);
  }

  @Authorized(Role.USER)
  @Mutation(() => PaymentRequestView, {
    description:
      'Wallet app (user token): report a request to my wallet as unwanted: rejected if PENDING, and marked for the operators (never shown to the merchant). reason: at most 500 characters.',
  })
  async reportPaymentRequest(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: Context,
    @CurrentUser() user: User,
    @Arg('reason', () => String, { nullable: true }) reason?: string | null,
  ): Promise<PaymentRequestView> {
    return PaymentRequestView.from(await this.payerControls.report(ctx.work, user.userId, id, reason));
  }
}
