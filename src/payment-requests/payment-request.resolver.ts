import { Arg, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { asDeveloper, asUser, type Context } from '../context.js';
import { PaymentRequestResponse, PaymentRequestView, RequestPaymentInput } from './payment-request.types.js';

/** Payment requests: the developer's operations and the wallet app's decisions. */
@Resolver()
export class PaymentRequestResolver {
  @Mutation(() => PaymentRequestResponse, {
    description: 'Developer (secret key): ask a wallet for money. REST: POST /api/v1/wallet/request-payment.',
  })
  async requestPayment(
    @Arg('input', () => RequestPaymentInput) input: RequestPaymentInput,
    @Ctx() ctx: Context,
    @Arg('idempotencyKey', () => String, { nullable: true, description: 'At most one request per developer and key (REST: the Idempotency-Key header).' })
    idempotencyKey?: string | null,
  ): Promise<PaymentRequestResponse> {
    const { developerId } = asDeveloper(ctx);
    const pr = await ctx.services.payments.create(ctx.em, developerId, input, idempotencyKey ?? null);
    return Object.assign(new PaymentRequestResponse(), {
      success: true,
      message: 'Payment request created; waiting for the user to approve it',
      paymentRequestId: pr.id,
      status: pr.status,
      expiresAt: pr.expiresAt,
    });
  }

  @Query(() => PaymentRequestView, {
    description: 'Developer (secret key): one of its payment requests. REST: GET /api/v1/wallet/payment-request/{requestId}.',
  })
  async paymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<PaymentRequestView> {
    const { developerId } = asDeveloper(ctx);
    return PaymentRequestView.from(await ctx.services.payments.getForDeveloper(ctx.em, developerId, id));
  }

  @Mutation(() => PaymentRequestView, {
    description: 'Developer (secret key): cancel a PENDING request. REST: POST /api/v1/wallet/payment-request/{requestId}/cancel.',
  })
  async cancelPaymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<PaymentRequestView> {
    const { developerId } = asDeveloper(ctx);
    return PaymentRequestView.from(await ctx.services.payments.cancel(ctx.em, developerId, id));
  }

  @Query(() => [PaymentRequestView], { description: 'Wallet app (user token): requests awaiting my decision, for catch-up after a reconnect.' })
  async myPendingPaymentRequests(@Ctx() ctx: Context): Promise<PaymentRequestView[]> {
    const { userId } = asUser(ctx);
    const now = new Date();
    return (await ctx.services.payments.listPendingForUser(ctx.em, userId)).map((pr) => PaymentRequestView.from(pr, now));
  }

  @Mutation(() => PaymentRequestView, { description: 'Wallet app (user token): approve; moves the money exactly once.' })
  async approvePaymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<PaymentRequestView> {
    const { userId } = asUser(ctx);
    return PaymentRequestView.from(await ctx.services.payments.approve(ctx.em, userId, id));
  }

  @Mutation(() => PaymentRequestView, { description: 'Wallet app (user token): reject.' })
  async rejectPaymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context): Promise<PaymentRequestView> {
    const { userId } = asUser(ctx);
    return PaymentRequestView.from(await ctx.services.payments.reject(ctx.em, userId, id));
  }
}
