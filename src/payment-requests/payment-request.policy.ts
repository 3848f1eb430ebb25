import { AppError, MerchantBlockedError, badInput, notFound } from '../errors.js';
import { sql, type Queryable } from '../db/sql.js';
import { PaymentRequestStatus, overdueSql } from './payment-request.entity.js';

/**
 * Who may act on a payment request: the one place the rule lives. Every path that acts on a
 * request (the approval before its verification is counted, the claim's conditional update, the
 * error of a claim that changed nothing) asks here.
 *
 * - A developer acts (cancels) on its own requests; anyone else's are NOT_FOUND.
 * - A user acts on requests to their wallet, and approves an open link not yet paid: in the
 *   wallet's currency (else BAD_USER_INPUT), from a developer the user did not block (else
 *   MERCHANT_BLOCKED); a link is only ever approved by a stranger, never rejected (FORBIDDEN).
 * - Only a PENDING request that is not overdue can change (PAYMENT_REQUEST_NOT_PENDING,
 *   PAYMENT_REQUEST_EXPIRED).
 */
export type Owner = { developerId: string } | { userId: string };

/** What a user may do to a request. */
export type UserAction = 'approve' | 'reject';

/** A request as the rule sees it, for one caller. */
export interface Standing {
  status: PaymentRequestStatus;
  overdue: boolean;
  currency: string;
  /** Numeric(18,2) as text. */
  amount: string;
  merchantName: string;
  /** The request is to the caller's wallet (always true for its developer). */
  mine: boolean;
  /** The caller's wallet and its currency (null: a developer, or a user without a wallet). */
  walletId: string | null;
  walletCurrency: string | null;
  /** The caller blocked the request's developer. */
  blocked: boolean;
}

const STANDING_COLUMNS = `pr.status, ${overdueSql('pr')} as overdue, pr.currency, pr.amount::text as amount, pr.merchant_name as "merchantName"`;

/** A user's standing: their own requests and open links (paid by someone else since, or not yet). Values: user id, request id. */
const USER_STANDING = sql<Standing>(
  'payment_request_standing_of_user',
  `select ${STANDING_COLUMNS}, pr.wallet_id is not distinct from me.id as mine, me.id as "walletId", me.currency as "walletCurrency",
          exists (select 1 from merchant_blocks b where b.wallet_id = me.id and b.developer_id = pr.developer_id) as blocked
     from payment_requests pr left join wallets me on me.user_id = $1
    where pr.id = $2 and ((me.id is not null and pr.wallet_id = me.id) or pr.open_link)`,
);

/** A developer's standing: its own requests. Values: developer id, request id. */
const DEVELOPER_STANDING = sql<Standing>(
  'payment_request_standing_of_developer',
  `select ${STANDING_COLUMNS}, true as mine, null as "walletId", null as "walletCurrency", false as blocked
     from payment_requests pr where pr.id = $2 and pr.developer_id = $1`,
);

/** The caller's standing on request `id`, or undefined when the caller may not even see it. */
export async function standingOf(db: Queryable, owner: Owner, id: string): Promise<Standing | undefined> {
  const [row] =
    'developerId' in owner ? await db.run(DEVELOPER_STANDING, [owner.developerId, id]) : await db.run(USER_STANDING, [owner.userId, id]);
  return row;
}

/** Why the caller may not take the request out of PENDING (a developer: cancel), or null if it may. */
export function refusal(standing: Standing | undefined, action: UserAction | 'cancel'): AppError | null {
  if (!standing) return notFound('Payment request not found');
  if (standing.status !== PaymentRequestStatus.PENDING) {
    return new AppError('PAYMENT_REQUEST_NOT_PENDING', `Payment request is ${standing.status}, not PENDING`);
  }
  if (standing.overdue) return new AppError('PAYMENT_REQUEST_EXPIRED', 'Payment request has expired');
  if (!standing.mine) {
    // An open link, not yet paid.
    if (standing.walletCurrency === null) return notFound('Wallet not found');
    if (standing.walletCurrency !== standing.currency) {
      return badInput(`This payment request is in ${standing.currency}; your wallet holds ${standing.walletCurrency}`);
    }
    // Only approving binds an open request: one person's "no" does not close a shop's link.
    if (action !== 'approve') return new AppError('FORBIDDEN', 'An open payment request can only be approved (or left alone)');
  }
  if (action === 'approve' && standing.blocked) return new MerchantBlockedError();
  return null;
}

/**
 * The same rule as the condition of the claim's conditional update (src/payment-requests/
 * payment-request.service.ts): `pr` the request, `w` the caller's wallet. It holds at the claim
 * whatever changed since the standing was read (a block, another payer binding the link).
 */
export function claimableByUserSql(action: UserAction): string {
  if (action === 'reject') return `pr.wallet_id = w.id`;
  return `(pr.wallet_id = w.id or (pr.wallet_id is null and pr.open_link and w.currency = pr.currency))
          and not exists (select 1 from merchant_blocks b where b.wallet_id = w.id and b.developer_id = pr.developer_id)`;
}
