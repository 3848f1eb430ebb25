import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { AppError, MerchantBlockedError, TooManyPendingError, badInput, notFound } from '../errors.js';
import { parseAmount } from '../money.js';
import type { EventType } from '../events/events.js';
import { appendEvents, appendSql, appended, draftEvents, type NewEvent } from '../events/append.js';
import { parseMerchantFields, requireText } from './merchant-fields.js';
import type { Transaction } from '../transactions/transaction.entity.js';
import { movePayment, placeHold, type MerchantSide } from '../ledger/ledger.js';
import type { TransactionService } from '../transactions/transaction.service.js';
import { transactionBody } from '../transactions/transaction.body.js';
import { raw, type FilterQuery } from '@mikro-orm/core';
import { CaptureMode, PaymentRequest, PaymentRequestStatus, effectiveStatusSql, newPaymentCode, overdueSql } from './payment-request.entity.js';
import { paginate, rangeConditions, type Page, type RangeFilter } from '../db/pagination.js';
import { requireUuid } from '../uuid.js';
import { parseIsoTime } from '../iso-time.js';
import type { Detached } from '../db/rows.js';
import { sql, type Queryable } from '../db/sql.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import { effectiveStatus, paymentUrlOf } from './payment-request.rules.js';
import { paymentRequestBody } from './payment-request.body.js';
import { paymentRequestColumns, paymentRequestFromRow } from './payment-request.read.js';
import { blockedSql, claimableByUserSql, refusal, standingOf, type Owner } from './payment-request.policy.js';
import type { ConsentService } from '../consent/consent.service.js';
import type { ApprovalSubject, ApprovalVerificationFields, VerificationMethod } from '../consent/verification.js';
import type { ConsentSigner } from '../consent/consent-keys.js';

/** Input of a payment link (POST /wallet/payment-links): request-payment's fields without the wallet. */
export interface PaymentLinkFields {
  amount: number;
  description: string;
  merchantName: string;
  reference?: string | null | undefined;
  metadata?: Record<string, unknown> | null | undefined;
  /** The request's lifetime: an integer from 60 to 86,400; default PAYMENT_REQUEST_TTL_SECONDS. */
  expiresInSeconds?: number | null | undefined;
  /** AUTOMATIC (default): the approval moves the money; MANUAL: it holds it until captured. */
  capture?: string | null | undefined;
}

/** Input of request-payment, as the GraphQL input type delivers it. */
export interface RequestPaymentFields extends PaymentLinkFields {
  walletId: string;
}

/** What anyone holding a link may see of its request (the /pay page): never who paid. */
export type PublicPaymentRequest = Pick<PaymentRequest, 'merchantName' | 'amount' | 'currency' | 'description' | 'code' | 'status' | 'expiresAt'> & {
  paymentUrl: string;
};

/** Bounds of `expiresInSeconds` (SPEC §15). */
export const MIN_EXPIRES_IN_SECONDS = 60;
export const MAX_EXPIRES_IN_SECONDS = 86_400;

const CAPTURE_MODES = Object.values(CaptureMode) as string[];

/** A request's lifetime as asked for: an integer number of seconds in [60, 86400], or undefined (the default). */
function parseExpiresIn(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < MIN_EXPIRES_IN_SECONDS || value > MAX_EXPIRES_IN_SECONDS) {
    throw badInput(`expiresInSeconds must be an integer from ${MIN_EXPIRES_IN_SECONDS} to ${MAX_EXPIRES_IN_SECONDS}`);
  }
  return value;
}

/** AUTOMATIC (also when absent) or MANUAL. */
function parseCapture(value: unknown): CaptureMode {
  if (value === undefined || value === null) return CaptureMode.AUTOMATIC;
  if (typeof value !== 'string' || !CAPTURE_MODES.includes(value)) throw badInput(`capture must be one of ${CAPTURE_MODES.join(', ')}`);
  return value as CaptureMode;
}

/** A link's code as sent: base64url characters, at most 64 (else it names nothing: NOT_FOUND). */
function requireCode(code: unknown): string {
  if (typeof code !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(code)) throw notFound('Payment request not found');
  return code;
}

const READ_COLUMNS = paymentRequestColumns('pr');

/** The developer's status read (prepared once per connection; explicit columns). */
export const STATUS_READ = sql<Record<string, unknown>>(
  'payment_request_status',
  `select ${READ_COLUMNS} from payment_requests pr where pr.id = $1 and pr.developer_id = $2`,
);

const BY_CODE_FOR_USER = sql<Record<string, unknown> & { merchant_blocked: boolean }>(
  'payment_request_by_code_for_user',
  `select ${READ_COLUMNS}, ${blockedSql('me.id', 'pr.developer_id')} as merchant_blocked
     from payment_requests pr left join wallets me on me.user_id = $2
    where pr.code = $1 and (pr.wallet_id is null or pr.wallet_id = me.id)`,
);

const BY_CODE = sql<Record<string, unknown>>('payment_request_by_code', `select ${READ_COLUMNS} from payment_requests pr where pr.code = $1`);

const PENDING_FOR_USER = sql<Record<string, unknown>>(
  'payment_requests_pending_for_user',
  `select ${READ_COLUMNS} from payment_requests pr join wallets w on w.id = pr.wallet_id
    where w.user_id = $1 and pr.status = 'PENDING' and not ${overdueSql('pr')}
    order by pr.created_at asc limit 100`,
);

const RECENT_FOR_USER = sql<Record<string, unknown>>(
  'payment_requests_recent_for_user',
  `select ${READ_COLUMNS} from payment_requests pr join wallets w on w.id = pr.wallet_id
    where w.user_id = $1 and (pr.status <> 'PENDING' or ${overdueSql('pr')})
    order by pr.updated_at desc limit $2`,
);

/** Largest and default page of a developer's list of payment requests. */
export const MAX_SEARCH_LIMIT = 100;
export const DEFAULT_SEARCH_LIMIT = 20;

/** What a developer may filter its payment requests by (GET /wallet/payment-requests); every field optional. */
export interface PaymentRequestSearch {
  /** The status as clients see it (a PENDING request past expiresAt is EXPIRED). */
  status?: string | null | undefined;
  reference?: string | null | undefined;
  /** ISO 8601: created at or after. */
  createdFrom?: string | null | undefined;
  /** ISO 8601: created before. */
  createdTo?: string | null | undefined;
}

/** One page of a developer's payment requests, newest first. */
export interface PaymentRequestSearchPage {
  data: PaymentRequest[];
  hasMore: boolean;
  /** Pass as `after` for the next page; null on the last one. */
  nextAfter: string | null;
}

const STATUSES = Object.values(PaymentRequestStatus) as string[];

/**
 * The create's first statement: the transaction's timestamp, the wallet (no row: no such wallet)
 * and whether its holder blocked this developer ($3).
 */
const CREATE_START = sql<{ at: string; expiresAt: string; currency: string | null; status: string | null; userId: string | null; blocked: boolean }>(
  'payment_request_create_start',
  `select now() as at, now() + make_interval(secs => $2) as "expiresAt", w.currency, w.status, w.user_id as "userId",
       ${blockedSql('w.id', '$3::uuid')} as blocked
  from (select) one left join wallets w on w.id = $1`,
);

/**
 * The create's second: the request, its first event and the event's webhook deliveries; the values
 * are computed by the create. With MAX_PENDING_PER_PAYER ($13; 0: no limit) on and a wallet to
 * ask, the (developer, wallet) pair's `payer_pending` row is locked first (made when missing;
 * ON CONFLICT DO UPDATE locks the row even where its WHERE refuses) and the request is written
 * only while fewer than $13 of the pair's requests are PENDING (`created` 0 otherwise). Creates of
 * one pair take turns from here to their commit; the row's count is kept by the table's triggers
 * (migration Migration20261126120000_payer_pending), so this costs the same however many
 * requests the pair has.
 */
const CREATE = sql<{ deliveries: number; created: number; id: string | null; sequence: number | null }>(
  'payment_request_create',
  `with slot as (
       insert into payer_pending as s (developer_id, wallet_id, pending)
       select $2::uuid, $3::text, 0 where $3::text is not null and $13::int > 0
       on conflict (developer_id, wallet_id) do update set pending = s.pending where s.pending < $13::int
       returning 1),
     pr as (
       insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name,
                                     status, created_at, expires_at, updated_at, idempotency_key, reference, metadata,
                                     open_link, capture, code, payment_url)
       select $1::uuid, $2::uuid, $3::text, $4::numeric, $5::text, $6::text, $7::text, 'PENDING', now(), now() + make_interval(secs => $8::int),
              now(), $9::text, $10::text, $11::jsonb, $14::boolean, $15::text, $16::text, $17::text
        where $3::text is null or $13::int = 0 or exists (select 1 from slot)
       returning id, developer_id),
     ${appendSql('$12', 'pr')}
select (select count(*) from queued)::int as deliveries, (select count(*) from pr)::int as created, ev.id, ev.sequence
  from (select) one left join ev on true`,
);

/**
 * A pair at its cap, counted exactly (only then): its PENDING requests not yet overdue, and the
 * seconds until the oldest of them expires. An overdue one still counts in `payer_pending` until
 * the sweeper marks it EXPIRED; it does not count here.
 */
const LIVE_PENDING = sql<{ live: number; retryAfter: number | null }>(
  'payment_request_live_pending',
  `select count(*)::int as live,
       greatest(1, ceil(extract(epoch from (min(expires_at) - now()))))::int as "retryAfter"
  from payment_requests where wallet_id = $1 and developer_id = $2 and status = 'PENDING' and expires_at > now()`,
);

/** How an approval was verified, as the approval's transaction sees it (the consent receipt signs it). */
export interface ApprovalContext {
  method: VerificationMethod;
}

/** Who may decide on a request: its developer (cancel) or its wallet's owner (approve, reject). */
/** A payment request row as a transition returns it, with the wallet owner to notify. */
type DecidedRow = Record<string, unknown> & { user_id: string | null };

/** The event each transition writes (PENDING is no transition's target). */
const EVENT_OF_STATUS: Record<PaymentRequestStatus, EventType> = {
  [PaymentRequestStatus.PENDING]: 'payment_request.created',
  [PaymentRequestStatus.APPROVED]: 'payment_request.approved',
  [PaymentRequestStatus.REJECTED]: 'payment_request.rejected',
  [PaymentRequestStatus.CANCELLED]: 'payment_request.cancelled',
  [PaymentRequestStatus.EXPIRED]: 'payment_request.expired',
};

/** What became of a payment request, for metrics. */
export type PaymentOutcome = 'created' | 'approved' | 'rejected' | 'cancelled' | 'expired' | 'insufficient_funds';

/** The decisions out of PENDING. */
export type PaymentDecision = 'approved' | 'rejected' | 'cancelled' | 'expired';

/** Seconds from a request's creation to its decision, both by the database's clock. */
const decisionSeconds = (createdAt: unknown, updatedAt: unknown): number =>
  Math.max(0, (new Date(updatedAt as Date | string).getTime() - new Date(createdAt as Date | string).getTime()) / 1000);

/**
 * The claim of a transition: a conditional update of the request, if it is PENDING, not overdue
 * and the owner's to change (src/payment-requests/payment-request.policy.ts). A user's claim finds
 * the request through the user's wallet `w`; an approval of an open request not yet bound binds it
 * to `w` (`wallet_id is null` is part of the condition, so of concurrent approvals one binds it and
 * the others find it bound). Values: status, transaction id, request id, owner id.
 */
function claimSql(owner: Owner, to: PaymentRequestStatus): string {
  const pending = `pr.status = 'PENDING' and not ${overdueSql('pr')}`;
  if ('developerId' in owner) {
    return `update payment_requests pr set status = $1, transaction_id = $2, updated_at = now()
             where pr.id = $3 and pr.developer_id = $4 and ${pending}
         returning ${READ_COLUMNS}, (select w.user_id from wallets w where w.id = pr.wallet_id) as user_id`;
  }
  const mine = claimableByUserSql(to === PaymentRequestStatus.APPROVED ? 'approve' : 'reject');
  return `update payment_requests pr set status = $1, transaction_id = $2, wallet_id = w.id, updated_at = now()
            from wallets w
           where pr.id = $3 and w.user_id = $4 and ${mine} and ${pending}
       returning ${READ_COLUMNS}, w.user_id`;
}

/**
 * The payment request state machine (SPEC §6), the one place its rules live. Every transition
 * is one database transaction whose first statement is a conditional update
 * (`WHERE status = 'PENDING' AND NOT overdue`, by the database's clock): of any set of
 * concurrent approve / reject / cancel / expire calls exactly one wins.
 */
/** The approval found the wallet locked on its transaction's BEGIN (rolled back; answered after). */
class LockedSince extends Error {}

export class PaymentRequestService {
  /** Development only: wallets whose requests live shorter than PAYMENT_REQUEST_TTL_SECONDS (see setSandboxLifetime). */
  private readonly sandboxLifetimes = new Map<string, number>();

  constructor(
    private readonly config: Config,
    private readonly transactions: TransactionService,
    /** Verifies every approval (PIN or passkey) before any money moves. */
    private readonly consent: ConsentService,
    /** Signs each approval's consent receipt. */
    private readonly receipts: ConsentSigner,
    /** The merchant's side of an approval's money (its fee, balance and balance transaction: src/settlement). */
    private readonly merchant: MerchantSide,
    private readonly observe: (outcome: PaymentOutcome, count?: number) => void = () => undefined,
    /** Told the time from creation to decision of every decided request (metrics). */
    private readonly decided: (decision: PaymentDecision, seconds: number) => void = () => undefined,
  ) {}

  /**
   * Development only: requests to this wallet live `seconds` instead of the configured lifetime.
   * The sandbox sets it for its `test_expire_soon` wallet, so an expiry can be seen (and
   * triggered) in seconds without shortening any other request's 5 minutes. Refused in production.
   */
  setSandboxLifetime(walletId: string, seconds: number): void {
    if (this.config.appEnv === 'production') throw new Error('payment request lifetimes cannot be changed in production');
    this.sandboxLifetimes.set(walletId, seconds);
  }

  /**
   * Creates a PENDING request against an ACTIVE wallet and notifies the wallet's owner on commit:
   * one transaction of two statements (the wallet with the transaction's timestamp; the request
   * with its event). `idempotencyKey` is the request's own (unique per developer: the same key
   * again is CONFLICT). A door that wraps the operation in a transaction of its own on `work` (the
   * REST door's Idempotency-Key record) gets the request written in that transaction.
   */
  async create(work: UnitOfWork, developerId: string, input: RequestPaymentFields, idempotencyKey: string | null = null): Promise<Detached<PaymentRequest>> {
    return this.createRequest(work, developerId, requireText(input.walletId, 'walletId', 64), input, idempotencyKey);
  }

  /**
   * Creates an open PENDING request (a payment link): no wallet and no one notified; any wallet
   * user who opens its `paymentUrl` may approve it, and the first approval binds it to that
   * wallet (see `decide`). Its currency is DEFAULT_CURRENCY. Otherwise as `create`.
   */
  async createLink(work: UnitOfWork, developerId: string, input: PaymentLinkFields, idempotencyKey: string | null = null): Promise<Detached<PaymentRequest>> {
    return this.createRequest(work, developerId, null, input, idempotencyKey);
  }

  /** The create of both doors: to `walletId`, or open (null). */
  private async createRequest(
    work: UnitOfWork,
    developerId: string,
    walletId: string | null,
    input: PaymentLinkFields,
    idempotencyKey: string | null,
  ): Promise<Detached<PaymentRequest>> {
    if (idempotencyKey !== null && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw badInput('idempotencyKey must be 1-255 characters');
    }
    const amount = parseAmount(input.amount, this.config.maxAmount);
    const description = requireText(input.description, 'description', 255);
    const merchantName = requireText(input.merchantName, 'merchantName', 100);
    const { reference, metadata } = parseMerchantFields(input);
    const expiresIn = parseExpiresIn(input.expiresInSeconds);
    const capture = parseCapture(input.capture);
    const open = walletId === null;
    // The sandbox's short-lived wallet keeps its lifetime unless the merchant asked for one.
    const ttl = expiresIn ?? (walletId === null ? undefined : this.sandboxLifetimes.get(walletId)) ?? this.config.paymentRequestTtlSeconds;
    const code = newPaymentCode();
    const paymentUrl = `${this.config.publicBaseUrl}/pay/${code}`;
    const created = await work.transaction(async (tx) => {
      // 1st statement: the transaction's now() (the request's timestamp) and the wallet.
      // The cap and the block concern a wallet's holder: an open request has none yet.
      const cap = open ? 0 : this.config.maxPendingPerPayer;
      const [start] = await tx.run(CREATE_START, [walletId, ttl, developerId]);
      if (!start) throw new Error('the create found no transaction timestamp');
      if (!open && start.status === null) throw notFound('Wallet not found');
      if (!open && start.status !== 'ACTIVE') throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
      if (start.blocked) throw new MerchantBlockedError();
      // Only read from here on (event, response): the row as the 2nd statement writes it (now() is
      // the same throughout the transaction), mapped as every read maps it.
      const pr = paymentRequestFromRow({
        id: randomUUID(),
        developer_id: developerId,
        wallet_id: walletId,
        amount,
        currency: open ? this.config.defaultCurrency : start.currency,
        description,
        merchant_name: merchantName,
        status: PaymentRequestStatus.PENDING,
        created_at: start.at,
        expires_at: start.expiresAt,
        updated_at: start.at,
        transaction_id: null,
        idempotency_key: idempotencyKey,
        reference,
        metadata,
        consent_receipt: null,
        open_link: open,
        capture,
        code,
        payment_url: paymentUrl,
        overdue: false,
      });
      // An open request has no one to notify until an approval binds it.
      const drafted = draftEvents([this.eventOf('payment_request.created', pr, open ? null : start.userId)], pr.createdAt);
      const values: unknown[] = [
        pr.id,
        developerId,
        walletId,
        amount,
        pr.currency,
        description,
        merchantName,
        ttl,
        idempotencyKey,
        reference,
        metadata === null ? null : JSON.stringify(metadata),
        drafted.json,
        cap,
        open,
        capture,
        code,
        paymentUrl,
      ];
      // 2nd statement: the request, its event and webhook deliveries (unless the pair is at its cap).
      const write = async (values: unknown[]) => {
        try {
          return (await tx.run(CREATE, values))[0];
        } catch (err) {
          if ((err as { code?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'payment_requests_idempotency_uq') {
            throw new AppError('CONFLICT', 'A payment request with this idempotency key already exists');
          }
          throw err;
        }
      };
      let rows = await write(values);
      if (rows?.created !== 1) {
        // At the cap by the count, which still holds overdue requests the sweeper has not marked
        // yet: those free their place already (the pair's row stays locked by the first try).
        const [pending] = await tx.run(LIVE_PENDING, [walletId, developerId]);
        if ((pending?.live ?? 0) >= cap) throw new TooManyPendingError(pending?.retryAfter ?? 1);
        rows = await write(values.with(12, 0));
      }
      appended(tx, drafted, rows?.id ? [{ id: rows.id, sequence: Number(rows.sequence) }] : [], rows?.deliveries ?? 0);
      return pr;
    });
    this.observe('created');
    return created;
  }

  /** The event of a change of `pr`, for `appendEvents`: its body (and its transaction's), told to `userId`'s app. */
  private eventOf(type: EventType, pr: PaymentRequest, userId: string | null, transaction?: Transaction): NewEvent {
    return {
      type,
      subjectId: pr.id,
      developerId: pr.developerId,
      paymentRequestId: pr.id,
      transactionId: transaction?.id ?? null,
      userId,
      data: { paymentRequest: paymentRequestBody(pr), ...(transaction ? { transaction: transactionBody(transaction) } : {}) },
    };
  }

  /** A request of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(db: Queryable, developerId: string, id: string): Promise<Detached<PaymentRequest>> {
    requireUuid(id);
    // The hot status read: one named statement mapped by the read model (with `overdue`, by the
    // database's clock); the ORM's query building cost more CPU than the whole rest of the read (bench/, #10).
    const [row] = await db.run(STATUS_READ, [id, developerId]);
    if (!row) throw notFound('Payment request not found');
    return paymentRequestFromRow(row);
  }

  /**
   * Requests newest first (internal tools), filtered by the status clients see, developer,
   * wallet, the wallet owner (`walletIds`, resolved by the accounts service), the merchant's
   * reference, creation and amount ranges.
   */
  list(
    em: EntityManager,
    filter: RangeFilter & {
      status?: PaymentRequestStatus | undefined;
      developerId?: string | undefined;
      walletId?: string | undefined;
      reference?: string | undefined;
      /** Reported by its payer (operators only). */
      reported?: boolean | null | undefined;
    },
    walletIds: string[] | undefined,
    first?: number,
    after?: string,
  ): Promise<Page<PaymentRequest>> {
    const where = {
      $and: [
        filter.status ? { [raw((alias) => effectiveStatusSql(alias))]: filter.status } : {},
        filter.developerId ? { developerId: requireUuid(filter.developerId, 'developerId') } : {},
        filter.walletId ? { walletId: filter.walletId } : {},
        walletIds ? { walletId: { $in: walletIds } } : {},
        filter.reference !== undefined ? { reference: filter.reference } : {},
        filter.reported === undefined || filter.reported === null ? {} : { [raw((alias) => `(${alias}.reported_at is not null)`)]: filter.reported },
        rangeConditions(filter),
      ],
    } as FilterQuery<PaymentRequest>;
    return paginate(em, PaymentRequest, where, first, after);
  }

  /**
   * A developer's own requests, newest first, filtered by the status clients see, its
   * `reference` and a creation range (`createdFrom` ≤ createdAt < `createdTo`), a page of
   * `limit` (1-100, default 20) after the request `after` (the previous page's `nextAfter`).
   * The cursor compares (created_at, id) in the database, to the microsecond.
   */
  async search(
    db: Queryable,
    developerId: string,
    filter: PaymentRequestSearch,
    after: string | null | undefined,
    limit: number | null | undefined,
  ): Promise<PaymentRequestSearchPage> {
    const n = limit ?? DEFAULT_SEARCH_LIMIT;
    if (!Number.isInteger(n) || n < 1 || n > MAX_SEARCH_LIMIT) throw badInput(`limit must be an integer from 1 to ${MAX_SEARCH_LIMIT}`);
    const status = filter.status ?? null;
    if (status !== null && !STATUSES.includes(status)) throw badInput(`status must be one of ${STATUSES.join(', ')}`);
    const reference = filter.reference === undefined || filter.reference === null ? null : parseMerchantFields({ reference: filter.reference }).reference;
    // Present but empty is a bad time (400), not an absent filter: the contract allows no empty value.
    const from = filter.createdFrom == null ? null : parseIsoTime(filter.createdFrom, 'createdFrom');
    const to = filter.createdTo == null ? null : parseIsoTime(filter.createdTo, 'createdTo');
    // An empty range (createdFrom at or after createdTo) is an empty page, not an error: the
    // contract states each filter alone, and no combination of valid filters is refused.
    const cursor = after === undefined || after === null ? null : requireUuid(after, 'after');
    const where: string[] = [];
    const values: unknown[] = [];
    const and = (condition: string, ...v: unknown[]): void => {
      where.push(condition);
      values.push(...v);
    };
    and('pr.developer_id = $?', developerId);
    if (status !== null) and(`${effectiveStatusSql('pr')} = $?`, status);
    if (reference !== null) and('pr.reference = $?', reference);
    if (from) and('pr.created_at >= $?::timestamptz', from);
    if (to) and('pr.created_at < $?::timestamptz', to);
    if (cursor) and('(pr.created_at, pr.id) < (select c.created_at, c.id from payment_requests c where c.id = $?::uuid and c.developer_id = $?::uuid)', cursor, developerId);
    let parameter = 0;
    const numbered = (text: string): string => text.replace(/\$\?/g, () => `$${++parameter}`);
    const rows = await db.query(
      numbered(`select ${READ_COLUMNS} from payment_requests pr where ${where.join(' and ')} order by pr.created_at desc, pr.id desc limit $?`),
      [...values, n + 1],
    );
    if (cursor && rows.length === 0) {
      const [known] = await db.query('select 1 from payment_requests where id = $1 and developer_id = $2', [cursor, developerId]);
      if (!known) throw notFound('after names no payment request of yours');
    }
    const data = rows.slice(0, n).map((row) => paymentRequestFromRow(row));
    const hasMore = rows.length > n;
    return { data, hasMore, nextAfter: hasMore ? data.at(-1)!.id : null };
  }

  /** A developer's requests carrying its `reference` (required here), newest first (the deprecated GraphQL field's rule). */
  async listByReference(db: Queryable, developerId: string, reference: string | null | undefined, limit: number | null | undefined) {
    if (reference === undefined || reference === null) throw badInput('reference is required');
    return this.search(db, developerId, { reference }, null, limit);
  }

  /**
   * A request by its link's code, for a wallet user (`paymentRequestByCode`): an open request not
   * yet bound to a wallet, to any user; a request to a wallet (an open one once paid), to that
   * wallet's user only; otherwise NOT_FOUND (also for an unknown or malformed code). With it,
   * whether this user blocked its developer (then approving it answers MERCHANT_BLOCKED).
   */
  async getByCodeForUser(db: Queryable, userId: string, code: string): Promise<{ pr: Detached<PaymentRequest>; merchantBlocked: boolean }> {
    const [row] = await db.run(BY_CODE_FOR_USER, [requireCode(code), userId]);
    if (!row) throw notFound('Payment request not found');
    return { pr: paymentRequestFromRow(row), merchantBlocked: row.merchant_blocked === true };
  }

  /**
   * What the public page of a link (`GET /pay/{code}`) may show: the merchant, the amount and
   * the status as clients see it, never who paid. NOT_FOUND for an unknown code.
   */
  async publicByCode(db: Queryable, code: string): Promise<PublicPaymentRequest> {
    const [row] = await db.run(BY_CODE, [requireCode(code)]);
    if (!row) throw notFound('Payment request not found');
    const pr = paymentRequestFromRow(row);
    return {
      merchantName: pr.merchantName,
      amount: pr.amount,
      currency: pr.currency,
      description: pr.description,
      code: pr.code,
      paymentUrl: paymentUrlOf(pr),
      status: effectiveStatus(pr),
      expiresAt: pr.expiresAt,
    };
  }

  /** Requests still awaiting this user's decision (catch-up after a reconnect), oldest first. */
  async listPendingForUser(db: Queryable, userId: string): Promise<Array<Detached<PaymentRequest>>> {
    const rows = await db.run(PENDING_FOR_USER, [userId]);
    return rows.map((row) => paymentRequestFromRow(row));
  }

  /**
   * This user's requests already decided (paid, rejected, expired, cancelled), newest first: the
   * wallet app's "recent" list, so a payment made elsewhere shows after signing in.
   */
  async listRecentForUser(db: Queryable, userId: string, limit: number): Promise<Array<Detached<PaymentRequest>>> {
    const rows = await db.run(RECENT_FOR_USER, [userId, Math.min(Math.max(Math.trunc(limit), 1), 50)]);
    return rows.map((row) => paymentRequestFromRow(row));
  }

  /** The developer cancels a PENDING request. */
  async cancel(work: UnitOfWork, developerId: string, id: string): Promise<Detached<PaymentRequest>> {
    const pr = await work.transaction((tx) => this.decide(tx, { developerId }, id, PaymentRequestStatus.CANCELLED));
    this.observe('cancelled');
    this.decided('cancelled', decisionSeconds(pr.createdAt, pr.updatedAt));
    return pr;
  }

  /** The wallet's owner rejects a PENDING request. */
  async reject(work: UnitOfWork, userId: string, id: string): Promise<Detached<PaymentRequest>> {
    return work.transaction((tx) => this.rejectIn(tx, userId, id));
  }

  /** The wallet's owner rejects a PENDING request, inside the caller's database transaction (a block, a report). */
  async rejectIn(tx: Tx, userId: string, id: string): Promise<Detached<PaymentRequest>> {
    const pr = await this.decide(tx, { userId }, id, PaymentRequestStatus.REJECTED);
    this.observe('rejected');
    this.decided('rejected', decisionSeconds(pr.createdAt, pr.updatedAt));
    return pr;
  }

  /**
   * The wallet's owner approves, verified: `verification` holds exactly one of a PIN or a passkey
   * assertion (BAD_USER_INPUT otherwise, nothing counted). The request must be the caller's
   * (NOT_FOUND, nothing counted) and still PENDING; then the verification runs, counted and
   * lockable (VERIFICATION_FAILED / VERIFICATION_LOCKED, src/consent/consent.service.ts) and
   * committed before anything else. Only then, in one database transaction, the request becomes
   * APPROVED, the wallet is debited (only if ACTIVE and the balance covers it), the developer is
   * credited, the ledger records both sides, a COMPLETED transaction is created and the consent
   * receipt (signed over what was approved and how it was verified) is kept with the request. Any
   * error rolls that transaction back; INSUFFICIENT_FUNDS leaves the request PENDING.
   */
  async approve(work: UnitOfWork, userId: string, id: string, verification: ApprovalVerificationFields): Promise<Detached<PaymentRequest>> {
    const checked = this.consent.parseVerification(verification);
    requireUuid(id);
    const { walletId, subject } = await this.approvalSubject(work, userId, id);
    // The verification's "still unlocked" check rides on the money transaction's BEGIN (no round trip of its own).
    const method = await this.consent.verify(work.em, { userId, walletId }, subject, checked, { unlockedCheckedByCaller: true });
    try {
      const pr = await work.transaction(
        (tx, unlocked) => (unlocked.length === 1 ? this.decide(tx, { userId }, id, PaymentRequestStatus.APPROVED, { method }) : Promise.reject(new LockedSince())),
        { begin: this.consent.stillUnlocked(walletId) },
      );
      this.observe('approved');
      this.decided('approved', decisionSeconds(pr.createdAt, pr.updatedAt));
      return pr;
    } catch (err) {
      // Other verifications locked the wallet between this one's read and its approval: it does not count.
      if (err instanceof LockedSince) throw await this.consent.lockedError(work.em, walletId, method);
      if (err instanceof AppError && err.code === 'INSUFFICIENT_FUNDS') this.observe('insufficient_funds');
      throw err;
    }
  }

  /**
   * What the payer is asked to consent to, read before any verification is counted, and the wallet
   * that pays it: refused as the claim would refuse it (payment-request.policy.ts: not the caller's,
   * not PENDING, overdue, another currency, a blocked merchant). The approval's claim checks it again.
   */
  private async approvalSubject(db: Queryable, userId: string, id: string): Promise<{ walletId: string; subject: ApprovalSubject }> {
    const standing = await standingOf(db, { userId }, id);
    const refused = refusal(standing, 'approve');
    if (refused) throw refused;
    const s = standing!;
    return {
      walletId: s.walletId!,
      subject: { paymentRequestId: id, amount: s.amount /* numeric(18,2) as text: two decimals */, currency: s.currency, merchantName: s.merchantName },
    };
  }

  /**
   * Marks up to `batch` overdue PENDING requests EXPIRED and notifies their owners. Rows other
   * instances hold are skipped (`SKIP LOCKED`), so each request expires exactly once.
   */
  async expireDue(work: UnitOfWork, batch = 500): Promise<number> {
    const expired = await work.transaction(async (tx) => {
      const rows = await tx.query<Record<string, unknown> & { user_id: string | null }>(
        `with due as (
           select id from payment_requests pr
            where ${overdueSql('pr')}
            order by expires_at
            limit $1 for update skip locked)
         update payment_requests pr
            set status = 'EXPIRED', updated_at = now()
           from due
          where pr.id = due.id
         returning ${READ_COLUMNS}, (select w.user_id from wallets w where w.id = pr.wallet_id) as user_id`,
        [batch],
      );
      const requests = rows.map((row) => ({ pr: paymentRequestFromRow(row), userId: row.user_id }));
      // None to notify for an open request (no wallet yet).
      await appendEvents(tx, requests.map(({ pr, userId }) => this.eventOf('payment_request.expired', pr, userId)));
      return requests.map(({ pr }) => decisionSeconds(pr.createdAt, pr.updatedAt));
    });
    if (expired.length > 0) this.observe('expired', expired.length);
    for (const seconds of expired) this.decided('expired', seconds);
    return expired.length;
  }

  /**
   * One transition out of PENDING, in one database transaction: a conditional update claims the
   * request (it waits for, then loses to, any concurrent winner); an approval then moves the
   * money and creates its transaction, and any failure there rolls the claim back. `approval`
   * (APPROVED only) says how the payer's consent was verified.
   */
  private async decide(tx: Tx, owner: Owner, id: string, to: PaymentRequestStatus, approval?: ApprovalContext): Promise<Detached<PaymentRequest>> {
    if ((to === PaymentRequestStatus.APPROVED) !== (approval !== undefined)) throw new Error('an approval, and only an approval, is verified');
    requireUuid(id);
    const ownerId = 'developerId' in owner ? owner.developerId : owner.userId;
    const transactionId = to === PaymentRequestStatus.APPROVED ? randomUUID() : null;
    const [row] = await tx.query<DecidedRow>(claimSql(owner, to), [to, transactionId, id, ownerId]);
    if (!row) throw await this.whyNotPending(tx, owner, id, to);
    let pr = paymentRequestFromRow(row);
    let transaction: Transaction | undefined;
    if (transactionId) {
      // The consent receipt is signed over the request as claimed (kept with it by the transaction's
      // statement: every later read answers the same one); a failure to move the money below rolls it back with everything else.
      const consentReceipt = await this.consentReceipt(pr, transactionId, approval!.method);
      pr = { ...pr, consentReceipt } as Detached<PaymentRequest>;
      const movement = { transactionId, walletId: pr.walletId!, developerId: pr.developerId, amount: pr.amount, currency: pr.currency };
      const record = { ...movement, paymentRequestId: pr.id, description: pr.description, consentReceipt };
      // The transaction row first: the ledger entries reference it. A failed debit or hold rolls both back.
      const manual = pr.capture === CaptureMode.MANUAL;
      transaction = await this.transactions.recordPayment(tx, record, manual ? this.config.holdTtlHours : undefined);
      if (manual) await placeHold(tx, movement);
      else await movePayment(tx, movement, this.merchant);
    }
    // Events of an open request not yet bound have no one to notify (user_id null).
    await appendEvents(tx, [this.eventOf(EVENT_OF_STATUS[to], pr, row.user_id, transaction)]);
    return pr;
  }

  /**
   * The signed receipt of an approval (src/consent): the request as the payer saw it, its
   * transaction, how the payer confirmed it, and the approval's time by the database's clock. The
   * amount is the numeric column's own text ("12.50"), never a float.
   */
  private consentReceipt(pr: PaymentRequest, transactionId: string, verification: VerificationMethod): Promise<string> {
    return this.receipts.sign({
      paymentRequestId: pr.id,
      transactionId,
      amount: pr.amount,
      currency: pr.currency,
      merchantName: pr.merchantName,
      verification,
      iat: Math.floor(pr.updatedAt.getTime() / 1000),
    });
  }

  /** The error for a transition that found nothing to change (the policy's answer, read in the same transaction). */
  private async whyNotPending(tx: Tx, owner: Owner, id: string, to: PaymentRequestStatus): Promise<AppError> {
    const action = 'developerId' in owner ? 'cancel' : to === PaymentRequestStatus.APPROVED ? 'approve' : 'reject';
    return (
      refusal(await standingOf(tx, owner, id), action) ??
      // Nothing refuses it now: it changed between the claim and this read (another call won).
      new AppError('PAYMENT_REQUEST_NOT_PENDING', 'Payment request is no longer PENDING')
    );
  }
}
