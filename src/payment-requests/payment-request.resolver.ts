import { Arg, Authorized, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { Context } from '../context.js';
import type { PaymentRequestService } from './payment-request.service.js';
import { CurrentDeveloper, CurrentUser, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal as Developer, UserPrincipal as User } from '../auth/principal.js';
import { ApprovalVerificationInput } from '../consent/consent.types.js';
import { PaymentLinkInput, PaymentRequestPage, PaymentRequestResponse, PaymentRequestView, RequestPaymentInput } from './payment-request.types.js';

/** Payment requests: the developer's operations and the wallet app's decisions. */
@Resolver()
export class PaymentRequestResolver {
  constructor(
    private readonly payments: PaymentRequestService,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Mutation(() => PaymentRequestResponse, {
    description: 'Developer (secret key): ask a wallet for money. REST: POST /api/v1/wallet/request-payment.',
  })
  async requestPayment(
    @Arg('input', () => RequestPaymentInput) input: RequestPaymentInput,
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('idempotencyKey', () => String, { nullable: true, description: 'At most one request per developer and key (REST: the Idempotency-Key header).' })
    idempotencyKey?: string | null,
  ): Promise<PaymentRequestResponse> {
    return PaymentRequestResponse.created(await this.payments.create(ctx.work, dev.developerId, input, idempotencyKey ?? null));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => PaymentRequestResponse, {
    description:
      'Developer (secret key): an open payment request (a link / QR code) any wallet user may pay; the first approval binds it. REST: POST /api/v1/wallet/payment-links.',
  })
  async createPaymentLink(
    @Arg('input', () => PaymentLinkInput) input: PaymentLinkInput,
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('idempotencyKey', () => String, { nullable: true, description: 'At most one request per developer and key (REST: the Idempotency-Key header).' })
    idempotencyKey?: string | null,
  ): Promise<PaymentRequestResponse> {
    return PaymentRequestResponse.created(await this.payments.createLink(ctx.work, dev.developerId, input, idempotencyKey ?? null));
  }

  @Authorized(Role.USER)
  @Query(() => PaymentRequestView, {
    description:
      "Wallet app (user token): the request of a link's code (GET /pay/{code}): an open request not yet paid, to any user; a request to a wallet (or an open one once paid), to that wallet's user only; else NOT_FOUND. Counted with GET /pay/{code} per client address (PAY_PAGE_LIMIT_PER_MINUTE; RATE_LIMITED with retryAfter).",
  })
  async paymentRequestByCode(@Arg('code', () => String) code: string, @Ctx() ctx: Context, @CurrentUser() user: User): Promise<PaymentRequestView> {
    await ctx.limits.payPage(); // one budget with GET /pay/{code} per client address (PAY_PAGE_LIMIT_PER_MINUTE)
    return PaymentRequestView.from(await this.payments.getByCodeForUser(ctx.work, user.userId, code));
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => PaymentRequestView, {
    description: 'Developer (secret key): one of its payment requests. REST: GET /api/v1/wallet/payment-request/{requestId}.',
  })
  async paymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<PaymentRequestView> {
    return PaymentRequestView.from(await this.payments.getForDeveloper(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => PaymentRequestPage, {
    description:
      'Developer (secret key): my payment requests, newest first, filtered. REST: GET /api/v1/wallet/payment-requests?status=&reference=&createdFrom=&createdTo=&after=&limit=.',
  })
  async searchPaymentRequests(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('status', () => String, { nullable: true, description: 'PENDING, APPROVED, REJECTED, EXPIRED or CANCELLED, as clients see it.' })
    status?: string | null,
    @Arg('reference', () => String, { nullable: true, description: 'The reference given at creation.' }) reference?: string | null,
    @Arg('createdFrom', () => String, { nullable: true, description: 'ISO 8601: created at or after.' }) createdFrom?: string | null,
    @Arg('createdTo', () => String, { nullable: true, description: 'ISO 8601: created before.' }) createdTo?: string | null,
    @Arg('after', () => String, { nullable: true, description: "The previous page's nextAfter." }) after?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: '1-100, default 20.' }) limit?: number | null,
  ): Promise<PaymentRequestPage> {
    return PaymentRequestPage.from(
      await this.payments.search(ctx.work, dev.developerId, { status, reference, createdFrom, createdTo }, after, limit),
    );
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => PaymentRequestPage, {
    description: 'Developer (secret key): my requests with this reference, newest first.',
    deprecationReason: 'Use searchPaymentRequests(reference:), which pages with after/nextAfter.',
  })
  async paymentRequestsByReference(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('reference', () => String, { nullable: true, description: 'Required: the reference given at creation.' }) reference?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: '1-100, default 20.' }) limit?: number | null,
  ): Promise<PaymentRequestPage> {
    return PaymentRequestPage.from(await this.payments.listByReference(ctx.work, dev.developerId, reference, limit));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => PaymentRequestView, {
    description: 'Developer (secret key): cancel a PENDING request. REST: POST /api/v1/wallet/payment-request/{requestId}/cancel.',
  })
  async cancelPaymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<PaymentRequestView> {
    return PaymentRequestView.from(await this.payments.cancel(ctx.work, dev.developerId, id));
  }

  @Authorized(Role.USER)
  @Query(() => [PaymentRequestView], { description: 'Wallet app (user token): requests awaiting my decision, for catch-up after a reconnect.' })
  async myPendingPaymentRequests(@Ctx() ctx: Context, @CurrentUser() user: User): Promise<PaymentRequestView[]> {
    return (await this.payments.listPendingForUser(ctx.work, user.userId)).map((pr) => PaymentRequestView.from(pr));
  }

  @Authorized(Role.USER)
  @Query(() => [PaymentRequestView], {
    description: 'Wallet app (user token): my requests already decided (paid, rejected, expired, cancelled), most recently decided first.',
  })
  async myRecentPaymentRequests(
    @Ctx() ctx: Context,
    @CurrentUser() user: User,
    @Arg('limit', () => Int, { nullable: true, description: '1-50, default 10.' }) limit?: number | null,
  ): Promise<PaymentRequestView[]> {
    return (await this.payments.listRecentForUser(ctx.work, user.userId, limit ?? 10)).map((pr) => PaymentRequestView.from(pr));
  }

  @Authorized(Role.USER)
  @Mutation(() => PaymentRequestView, {
    description:
      'Wallet app (user token): approve, confirmed with the transaction PIN or a passkey; moves the money exactly once. VERIFICATION_FAILED (nothing changes), VERIFICATION_LOCKED after PIN_MAX_ATTEMPTS failures in a row.',
  })
  async approvePaymentRequest(
    @Arg('id', () => ID) id: string,
    @Arg('verification', () => ApprovalVerificationInput) verification: ApprovalVerificationInput,
    @Ctx() ctx: Context,
    @CurrentUser() user: User,
  ): Promise<PaymentRequestView> {
    return PaymentRequestView.from(await this.payments.approve(ctx.work, user.userId, id, verification));
  }

  @Authorized(Role.USER)
  @Mutation(() => PaymentRequestView, { description: 'Wallet app (user token): reject.' })
  async rejectPaymentRequest(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentUser() user: User): Promise<PaymentRequestView> {
    return PaymentRequestView.from(await this.payments.reject(ctx.work, user.userId, id));
  }
}
