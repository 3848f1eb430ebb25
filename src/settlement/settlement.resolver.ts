import DataLoader from 'dataloader';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Arg, Authorized, Ctx, FieldResolver, Float, ID, Int, Mutation, Query, Resolver, Root, UseMiddleware } from 'type-graphql';
import type { Context } from '../context.js';
import type { Config } from '../config.js';
import type { SettlementService } from './settlement.service.js';
import type { PayoutService } from './payout.service.js';
import { CurrentDeveloper, Role } from '../auth/authorization.js';
import type { DeveloperPrincipal as Developer } from '../auth/principal.js';
import { Audited, AuditedOnItsOwn } from '../audit/audit.middleware.js';
import type { Page } from '../db/pagination.js';
import { mapPage } from '../db/pagination.js';
import { DeveloperView } from '../admin/admin.types.js';
import { loadersOf } from '../admin/loaders.js';
import {
  BalanceTransactionPage,
  BalanceTransactionView,
  BalanceView,
  CurrencyBalanceView,
  FeeScheduleView,
  PayoutConnection,
  PayoutFilter,
  PayoutPage,
  PayoutView,
} from './settlement.types.js';
import { PayoutStatus } from './payout.entity.js';

/** The developer's settlement reads (secret key): its balance, balance transactions and payouts. */
@Resolver()
export class SettlementResolver {
  constructor(
    private readonly settlement: SettlementService,
    private readonly payouts: PayoutService,
    private readonly config: Config,
  ) {}

  @Authorized(Role.DEVELOPER)
  @Query(() => BalanceView, { description: 'Developer (secret key): my balance per currency (available, in payouts). REST: GET /api/v1/balance.' })
  async balance(@Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<BalanceView> {
    const balances = await this.settlement.balance(ctx.work, dev.developerId);
    return Object.assign(new BalanceView(), { balances: balances.map(CurrencyBalanceView.from) });
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => BalanceTransactionPage, {
    description:
      'Developer (secret key): every change of my available balance, newest first, filtered. REST: GET /api/v1/balance-transactions?type=&payoutId=&createdFrom=&createdTo=&after=&limit=.',
  })
  async balanceTransactions(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('type', () => String, { nullable: true, description: 'payment, refund, payout, payout_reversal or adjustment.' }) type?: string | null,
    @Arg('payoutId', () => ID, { nullable: true, description: "A payout's items and its own payout entry." }) payoutId?: string | null,
    @Arg('createdFrom', () => String, { nullable: true, description: 'ISO 8601: created at or after.' }) createdFrom?: string | null,
    @Arg('createdTo', () => String, { nullable: true, description: 'ISO 8601: created before.' }) createdTo?: string | null,
    @Arg('after', () => String, { nullable: true, description: "The previous page's nextAfter." }) after?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: '1-100, default 20.' }) limit?: number | null,
  ): Promise<BalanceTransactionPage> {
    return BalanceTransactionPage.from(
      await this.settlement.search(ctx.work, dev.developerId, { type, payoutId, createdFrom, createdTo }, after, limit),
    );
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => PayoutPage, {
    description: 'Developer (secret key): my payouts, newest first, filtered. REST: GET /api/v1/payouts?status=&createdFrom=&createdTo=&after=&limit=.',
  })
  async searchPayouts(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('status', () => String, { nullable: true, description: 'PENDING, PAID or FAILED.' }) status?: string | null,
    @Arg('createdFrom', () => String, { nullable: true, description: 'ISO 8601: made at or after.' }) createdFrom?: string | null,
    @Arg('createdTo', () => String, { nullable: true, description: 'ISO 8601: made before.' }) createdTo?: string | null,
    @Arg('after', () => String, { nullable: true, description: "The previous page's nextAfter." }) after?: string | null,
    @Arg('limit', () => Int, { nullable: true, description: '1-100, default 20.' }) limit?: number | null,
  ): Promise<PayoutPage> {
    return PayoutPage.from(await this.payouts.search(ctx.work, dev.developerId, { status, createdFrom, createdTo }, after, limit));
  }

  @Authorized(Role.DEVELOPER)
  @Mutation(() => PayoutView, {
    description:
      'Development only (sk_test_ keys): a payout of my available balance now, whatever PAYOUT_MINIMUM, then PAID or FAILED when asked; how `wallet-gateway trigger payout.created|payout.paid|payout.failed` makes those events happen. NOT_FOUND in production.',
  })
  async triggerPayout(
    @Ctx() ctx: Context,
    @CurrentDeveloper() dev: Developer,
    @Arg('outcome', () => PayoutStatus, { nullable: true, description: 'PENDING (default), PAID or FAILED.' }) outcome?: PayoutStatus | null,
  ): Promise<PayoutView> {
    return PayoutView.from(await this.payouts.sandboxPayout(ctx.work, this.config.appEnv, dev.developerId, outcome ?? PayoutStatus.PENDING));
  }

  @Authorized(Role.DEVELOPER)
  @Query(() => PayoutView, {
    description: 'Developer (secret key): one of my payouts (its report: REST GET /api/v1/payouts/{payoutId}/report, text/csv). REST: GET /api/v1/payouts/{payoutId}.',
  })
  async payout(@Arg('id', () => ID) id: string, @Ctx() ctx: Context, @CurrentDeveloper() dev: Developer): Promise<PayoutView> {
    return PayoutView.from(await this.payouts.getForDeveloper(ctx.work, dev.developerId, id));
  }
}

/** Internal tools (admin token): fees, payouts and corrections; every mutation audited in its own transaction. */
@Authorized(Role.ADMIN)
@UseMiddleware(Audited)
@Resolver()
export class SettlementAdminResolver {
  constructor(
    private readonly settlement: SettlementService,
    private readonly payoutService: PayoutService,
  ) {}

  @Mutation(() => FeeScheduleView, {
    description: "Sets a developer's fee (percent 0 to 10 and fixed at least 0, each with at most 2 decimals) for payments from now on.",
  })
  async setFeeSchedule(
    @Arg('developerId', () => ID) developerId: string,
    @Arg('percent', () => Float) percent: number,
    @Arg('fixed', () => Float) fixed: number,
    @Ctx() ctx: Context,
  ): Promise<FeeScheduleView> {
    return FeeScheduleView.from(await this.settlement.setFeeSchedule(ctx.work, developerId, percent, fixed));
  }

  @Query(() => PayoutConnection, { description: 'Payouts, newest first, filtered by status and developer.' })
  async payouts(
    @Ctx() ctx: Context,
    @Arg('filter', () => PayoutFilter, { nullable: true }) filter?: PayoutFilter,
    @Arg('first', () => Int, { nullable: true }) first?: number,
    @Arg('after', () => String, { nullable: true }) after?: string,
  ): Promise<Page<PayoutView>> {
    return mapPage(await this.payoutService.list(ctx.work.em, filter ?? {}, first, after), PayoutView.from);
  }

  @Mutation(() => PayoutView, { description: "Marks a PENDING payout PAID with the bank's reference of the transfer (CONFLICT when it is not PENDING)." })
  async markPayoutPaid(@Arg('id', () => ID) id: string, @Arg('bankReference', () => String) bankReference: string, @Ctx() ctx: Context): Promise<PayoutView> {
    return PayoutView.from(await this.payoutService.markPaid(ctx.work, id, bankReference));
  }

  @Mutation(() => PayoutView, {
    description: 'Marks a PENDING payout FAILED: its amount returns to available as a payout_reversal (CONFLICT when it is not PENDING).',
  })
  async markPayoutFailed(@Arg('id', () => ID) id: string, @Arg('reason', () => String) reason: string, @Ctx() ctx: Context): Promise<PayoutView> {
    return PayoutView.from(await this.payoutService.markFailed(ctx.work, id, reason));
  }

  @Mutation(() => BalanceTransactionView, {
    description:
      "Corrects a developer's available balance (an adjustment balance transaction; the other side is the wallet company's account). A debit never takes it below zero.",
  })
  async adjustBalance(
    @Arg('developerId', () => ID) developerId: string,
    @Arg('currency', () => String) currency: string,
    @Arg('amount', () => Float, { description: 'Signed, not 0, at most 2 decimals: positive credits the developer.' }) amount: number,
    @Arg('reason', () => String, { description: "1-500 characters; the developer sees it as the entry's reference." }) reason: string,
    @Ctx() ctx: Context,
  ): Promise<BalanceTransactionView> {
    return BalanceTransactionView.from(await this.settlement.adjust(ctx.work, developerId, currency, amount, reason));
  }
}

/** `runPayouts`: each payout is a transaction of its own (as the schedule makes them), so it is audited after it ran. */
@Authorized(Role.ADMIN)
@UseMiddleware(AuditedOnItsOwn)
@Resolver()
export class PayoutRunResolver {
  constructor(private readonly payouts: PayoutService) {}

  @Mutation(() => Int, { description: 'Makes the payouts due now, with now as the cut-off; the number made.' })
  async runPayouts(): Promise<number> {
    return this.payouts.runNow();
  }
}

/** The fee schedules of the developers one operation reads, one query per batch. */
const feeLoader = (em: EntityManager) =>
  new DataLoader<string, { percent: string; fixed: string; updatedAt: Date } | null>(async (ids) => {
    const rows = await em.execute<Array<{ developerId: string; percent: string; fixed: string; updatedAt: Date }>>(
      `select developer_id as "developerId", percent::text as percent, fixed::text as fixed, updated_at as "updatedAt"
         from fee_schedules where developer_id = any(array[?]::uuid[])`,
      [ids],
    );
    const byId = new Map(rows.map((r) => [r.developerId, r]));
    return ids.map((id) => byId.get(id) ?? null);
  });

/** Internal tools: a developer's fee schedule. */
@Authorized(Role.ADMIN)
@Resolver(() => DeveloperView)
export class DeveloperFeeGraph {
  constructor(private readonly settlement: SettlementService) {}

  @FieldResolver(() => FeeScheduleView, { description: 'The fee schedule in force: its own (setFeeSchedule) or the defaults.' })
  async fee(@Root() developer: DeveloperView, @Ctx() ctx: Context): Promise<FeeScheduleView> {
    const row = await ctx.scoped(feeLoader).load(developer.id);
    return FeeScheduleView.from(this.settlement.feeScheduleOf(row ? { ...row, updatedAt: new Date(row.updatedAt) } : null));
  }
}

/** Internal tools: a payout's developer. */
@Authorized(Role.ADMIN)
@Resolver(() => PayoutView)
export class PayoutGraph {
  @FieldResolver(() => DeveloperView, { description: 'Internal tools: the developer it pays.' })
  async developer(@Root() payout: PayoutView, @Ctx() ctx: Context): Promise<DeveloperView> {
    return (await loadersOf(ctx).developer.load(payout.developerId))!;
  }
}
