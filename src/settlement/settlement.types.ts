import { Field, Float, ID, InputType, Int, ObjectType } from 'type-graphql';
import { toAmountNumber } from '../money.js';
import { Connection } from '../graphql/connection.js';
import { PayoutStatus, type Payout } from './payout.entity.js';
import type { BalanceTransactionRow, CurrencyBalance, FeeSchedule } from './settlement.model.js';
import type { ListPage } from './settlement.service.js';

/** A payout as its developer sees it (GET /payouts/{id}, the events' `data`): no developer id. */
@ObjectType('Payout', { description: "A developer's available balance in one currency on its way to its bank." })
export class PayoutView {
  @Field(() => ID)
  id!: string;

  @Field(() => PayoutStatus)
  status!: PayoutStatus;

  @Field(() => Float, { description: 'Σ net of the balance transactions it holds.' })
  amount!: number;

  @Field(() => String)
  currency!: string;

  @Field(() => Int, { description: 'How many balance transactions it holds (the lines of its report).' })
  itemCount!: number;

  @Field(() => Date, { description: "The previous payout's cut-off, or the time of the first balance transaction it holds." })
  periodStart!: Date;

  @Field(() => Date, { description: 'The cut-off: it holds the balance transactions made before it.' })
  periodEnd!: Date;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  paidAt!: Date | null;

  @Field(() => String, { nullable: true, description: "The bank's reference of the transfer, once PAID." })
  bankReference!: string | null;

  @Field(() => String, { nullable: true, description: 'Why it FAILED (its amount returned to available).' })
  failureReason!: string | null;

  /** Whose it is: not a field of the body (internal tools read it as `developer`). */
  developerId!: string;

  static from(p: Payout): PayoutView {
    return Object.assign(new PayoutView(), {
      id: p.id,
      developerId: p.developerId,
      status: p.status,
      amount: toAmountNumber(p.amount),
      currency: p.currency,
      itemCount: p.itemCount,
      periodStart: p.periodStart,
      periodEnd: p.periodEnd,
      createdAt: p.createdAt,
      paidAt: p.paidAt,
      bankReference: p.bankReference,
      failureReason: p.failureReason,
    });
  }
}

/** The fields of the Payout body (GET /payouts/{id}); payout events carry exactly these. */
export const PAYOUT_FIELDS = [
  'id',
  'status',
  'amount',
  'currency',
  'itemCount',
  'periodStart',
  'periodEnd',
  'createdAt',
  'paidAt',
  'bankReference',
  'failureReason',
] as const satisfies ReadonlyArray<keyof PayoutView>;

@ObjectType('PayoutPage', { description: 'A page of payouts, newest first.' })
export class PayoutPage {
  @Field(() => [PayoutView])
  data!: PayoutView[];

  @Field(() => Boolean)
  hasMore!: boolean;

  @Field(() => String, { nullable: true, description: "Pass as `after` for the next page; null on the last one." })
  nextAfter!: string | null;

  static from(page: ListPage<Payout>): PayoutPage {
    return Object.assign(new PayoutPage(), { data: page.data.map(PayoutView.from), hasMore: page.hasMore, nextAfter: page.nextAfter });
  }
}

export const PayoutConnection = Connection(PayoutView, 'PayoutConnection');

@InputType('PayoutFilter')
export class PayoutFilter {
  @Field(() => PayoutStatus, { nullable: true }) status?: PayoutStatus | null;
  @Field(() => ID, { nullable: true }) developerId?: string | null;
}

@ObjectType('BalanceTransaction', { description: "One change of a developer's available balance, with its gross, fee and net." })
export class BalanceTransactionView {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: 'payment, refund, payout, payout_reversal or adjustment.' })
  type!: string;

  @Field(() => Float, { description: 'Signed: the gross of a payment; negative for a refund and a payout.' })
  amount!: number;

  @Field(() => Float, { description: "The wallet company's fee (payments only; refunds do not return it)." })
  fee!: number;

  @Field(() => Float, { description: 'amount - fee: what the available balance changed by. Σ net = available.' })
  net!: number;

  @Field(() => String)
  currency!: string;

  @Field(() => ID, { nullable: true })
  transactionId!: string | null;

  @Field(() => ID, { nullable: true })
  paymentRequestId!: string | null;

  @Field(() => String, {
    nullable: true,
    description: "The payment request's reference (payment, refund), the failed payout's id (payout_reversal) or the operator's note (adjustment).",
  })
  reference!: string | null;

  @Field(() => ID, { nullable: true, description: 'The payout that holds it; for a payout entry, the payout it made. Null until a payout holds it.' })
  payoutId!: string | null;

  @Field(() => Date)
  createdAt!: Date;

  static from(row: BalanceTransactionRow): BalanceTransactionView {
    return Object.assign(new BalanceTransactionView(), {
      ...row,
      amount: toAmountNumber(row.amount),
      fee: toAmountNumber(row.fee),
      net: toAmountNumber(row.net),
      createdAt: new Date(row.createdAt),
    });
  }
}

/** The fields of a balance transaction's body (GET /balance-transactions). */
export const BALANCE_TRANSACTION_FIELDS = [
  'id',
  'type',
  'amount',
  'fee',
  'net',
  'currency',
  'transactionId',
  'paymentRequestId',
  'reference',
  'payoutId',
  'createdAt',
] as const satisfies ReadonlyArray<keyof BalanceTransactionView>;

@ObjectType('BalanceTransactionPage', { description: 'A page of balance transactions, newest first.' })
export class BalanceTransactionPage {
  @Field(() => [BalanceTransactionView])
  data!: BalanceTransactionView[];

  @Field(() => Boolean)
  hasMore!: boolean;

  @Field(() => String, { nullable: true, description: "Pass as `after` for the next page; null on the last one." })
  nextAfter!: string | null;

  static from(page: ListPage<BalanceTransactionRow>): BalanceTransactionPage {
    return Object.assign(new BalanceTransactionPage(), { data: page.data.map(BalanceTransactionView.from), hasMore: page.hasMore, nextAfter: page.nextAfter });
  }
}

@ObjectType('CurrencyBalance', { description: "A developer's money in one currency." })
export class CurrencyBalanceView {
  @Field(() => String)
  currency!: string;

  @Field(() => Float, { description: 'What can be paid out (Σ net of the balance transactions).' })
  available!: number;

  @Field(() => Float, { description: 'What payouts not yet paid hold.' })
  inPayouts!: number;

  static from(b: CurrencyBalance): CurrencyBalanceView {
    return Object.assign(new CurrencyBalanceView(), { currency: b.currency, available: toAmountNumber(b.available), inPayouts: toAmountNumber(b.inPayouts) });
  }
}

@ObjectType('Balance', { description: "The developer's balance, per currency." })
export class BalanceView {
  @Field(() => [CurrencyBalanceView])
  balances!: CurrencyBalanceView[];
}

@ObjectType('FeeSchedule', { description: "A developer's fee: round_half_up(gross × percent / 100, 2) + fixed, at most the gross, taken when money reaches it." })
export class FeeScheduleView {
  @Field(() => Float, { description: 'Percent of the gross, 0 to 10.' })
  percent!: number;

  @Field(() => Float)
  fixed!: number;

  @Field(() => Boolean, { description: 'True when the developer has no schedule of its own (DEFAULT_FEE_PERCENT and DEFAULT_FEE_FIXED).' })
  isDefault!: boolean;

  @Field(() => Date, { nullable: true, description: 'When an operator last set it (null for the defaults).' })
  updatedAt!: Date | null;

  static from(f: FeeSchedule): FeeScheduleView {
    return Object.assign(new FeeScheduleView(), { percent: toAmountNumber(f.percent), fixed: toAmountNumber(f.fixed), isDefault: f.isDefault, updatedAt: f.updatedAt });
  }
}
