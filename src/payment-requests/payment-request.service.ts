import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { AppError, MerchantBlockedError, TooManyPendingError, badInput, notFound } from '../errors.js';
import { parseAmount } from '../money.js';
import type { EventType } from '../events/events.js';
import { firstEvent, firstEventSql, recordWritten, writeEvent, writeEvents } from '../events/outbox.js';
import { parseMerchantFields } from './merchant-fields.js';
import { Transaction } from '../transactions/transaction.entity.js';
import { movePayment, placeHold, type MerchantSide } from '../ledger/ledger.js';
import type { TransactionService } from '../transactions/transaction.service.js';
import { raw, type FilterQuery } from '@mikro-orm/core';
import { CaptureMode, PaymentRequest, PaymentRequestStatus, effectiveStatusSql, newPaymentCode, overdueSql } from './payment-request.entity.js';
import { paginate, rangeConditions, type Page, type RangeFilter } from '../db/pagination.js';
import { requireUuid } from '../uuid.js';
import { parseIsoTime } from '../iso-time.js';
import { detachedEntity, preparedRead, runInTransaction, type Detached } from '../db/prepared.js';
import { effectiveStatus, paymentUrlOf } from './payment-request.rules.js';
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

/** Trimmed text of 1..max characters (Unicode code points, as PostgreSQL counts them), no control characters. */
function requireText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string') throw badInput(`${field} must be a string`);
  const text = value.trim();
  if (text.length === 0) throw badInput(`${field} must not be empty`);
  if ([...text].length > max) throw badInput(`${field} must be at most ${max} characters`);
  // eslint-disable-next-line no-control-regex -- exactly what is refused here
  if (/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(text)) throw badInput(`${field} must not contain control characters`);
  return text;
}

/** The columns a developer's read maps into a (detached) PaymentRequest, with `overdue` by the database's clock. */
const READ_COLUMNS = `pr.id, pr.developer_id, pr.wallet_id, pr.amount, pr.currency, pr.description, pr.merchant_name, pr.status,
       pr.created_at, pr.expires_at, pr.updated_at, pr.transaction_id, pr.reference, pr.metadata, pr.idempotency_key,
       pr.consent_receipt, pr.open_link, pr.capture, pr.code, pr.payment_url,
       ${overdueSql('pr')} as overdue`;

/** The developer's status read (prepared once per connection; explicit columns, see preparedRead). */
export const STATUS_READ = `select ${READ_COLUMNS}
  from payment_requests pr where pr.id = $1 and pr.developer_id = $2`;

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
const CREATE_START_SQL = `select now() as at, now() + make_interval(secs => $2) as "expiresAt", w.currency, w.status, w.user_id as "userId",
       exists (select 1 from merchant_blocks b where b.wallet_id = w.id and b.developer_id = $3::uuid) as blocked
  from (select) one left join wallets w on w.id = $1`;

/**
 * The create's second: the request, its first event and the event's webhook deliveries; the values
 * are computed by the create. With MAX_PENDING_PER_PAYER ($15; 0: no limit) on and a wallet to
 * ask, the (developer, wallet) pair's `payer_pending` row is locked first (made when missing;
 * ON CONFLICT DO UPDATE locks the row even where its WHERE refuses) and the request is written
 * only while fewer than $15 of the pair's requests are PENDING (`created` 0 otherwise). Creates of
 * one pair take turns from here to their commit; the row's count is kept by the table's triggers
 * (migration Migration20261126120000_payer_pending), so this costs the same however many
 * requests the pair has.
 */
const CREATE_SQL = `with slot as (
       insert into payer_pending as s (developer_id, wallet_id, pending)
       select $2::uuid, $3::text, 0 where $3::text is not null and $15::int > 0
       on conflict (developer_id, wallet_id) do update set pending = s.pending where s.pending < $15::int
       returning 1),
     pr as (
       insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name,
                                     status, created_at, expires_at, updated_at, idempotency_key, reference, metadata,
                                     open_link, capture, code, payment_url)
       select $1::uuid, $2::uuid, $3::text, $4::numeric, $5::text, $6::text, $7::text, 'PENDING', now(), now() + make_interval(secs => $8::int),
              now(), $9::text, $10::text, $11::jsonb, $16::boolean, $17::text, $18::text, $19::text
        where $3::text is null or $15::int = 0 or exists (select 1 from slot)
       returning id, developer_id),
     ${firstEventSql({ pr: 'pr', id: '$12', payload: '$13', createdAt: '$14' })}
select (select count(*) from queued)::int as deliveries, (select count(*) from pr)::int as created`;

/**
 * A pair at its cap, counted exactly (only then): its PENDING requests not yet overdue, and the
 * seconds until the oldest of them expires. An overdue one still counts in `payer_pending` until
 * the sweeper marks it EXPIRED; it does not count here.
 */
const LIVE_PENDING_SQL = `select count(*)::int as live,
       greatest(1, ceil(extract(epoch from (min(expires_at) - now()))))::int as "retryAfter"
  from payment_requests where wallet_id = $1 and developer_id = $2 and status = 'PENDING' and expires_at > now()`;

/** How an approval was verified, as the approval's transaction sees it (the consent receipt signs it). */
export interface ApprovalContext {
  method: VerificationMethod;
}

/** Who may decide on a request: its developer (cancel) or its wallet's owner (approve, reject). */
type Owner = { developerId: string } | { userId: string };

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
 * and the owner's. A user's claim finds the request through the user's wallet `w`: a request to
 * that wallet or, for an approval, an open request not yet bound (the claim binds it to `w`:
 * `wallet_id is null` is part of the condition, so of concurrent approvals one binds it and the
 * others find it bound). Values: status, transaction id, request id, owner id.
 */
function claimSql(owner: Owner, to: PaymentRequestStatus): string {
  const pending = `pr.status = 'PENDING' and not ${overdueSql('pr')}`;
  if ('developerId' in owner) {
    return `update payment_requests pr set status = ?, transaction_id = ?, updated_at = now()
             where pr.id = ? and pr.developer_id = ? and ${pending}
         returning pr.*, (select w.user_id from wallets w where w.id = pr.wallet_id) as user_id`;
  }
  const mine =
    to === PaymentRequestStatus.APPROVED
      ? `(pr.wallet_id = w.id or (pr.wallet_id is null and pr.open_link and w.currency = pr.currency))`
      : `pr.wallet_id = w.id`;
  return `update payment_requests pr set status = ?, transaction_id = ?, wallet_id = w.id, updated_at = now()
            from wallets w
           where pr.id = ? and w.user_id = ? and ${mine} and ${pending}
       returning pr.*, w.user_id`;
}

/**
 * The payment request state machine (SPEC §6), the one place its rules live. Every transition
 * is one database transaction whose first statement is a conditional update
 * (`WHERE status = 'PENDING' AND NOT overdue`, by the database's clock): of any set of
 * concurrent approve / reject / cancel / expire calls exactly one wins.
 */
export class PaymentRequestService {
  /** Development only: wallets whose requests live shorter than PAYMENT_REQUEST_TTL_SECONDS (see setSandboxLifetime). */
  private readonly sandboxLifetimes = new Map<string, number>();

  constructor(
    private readonly config: Config,
    private readonly transactions: TransactionService,
    private readonly observe: (outcome: PaymentOutcome, count?: number) => void = () => undefined,
    /** Told the time from creation to decision of every decided request (metrics). */
    private readonly decided: (decision: PaymentDecision, seconds: number) => void = () => undefined,
    /** Verifies every approval (PIN or passkey) before any money moves. */
    private readonly consent?: ConsentService,
    /** Signs each approval's consent receipt. */
    private readonly receipts?: ConsentSigner,
    /** The merchant's side of an approval's money (its fee, balance and balance transaction: src/settlement). */
    private readonly merchant?: MerchantSide,
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
   * again is CONFLICT). A door that wraps the create in its own transaction (src/db/prepared.ts,
   * the REST door's Idempotency-Key record) gets the request written in that transaction.
   */
  async create(
    em: EntityManager,
    developerId: string,
    input: RequestPaymentFields,
    idempotencyKey: string | null = null,
  ): Promise<Detached<PaymentRequest>> {
    return this.createRequest(em, developerId, requireText(input.walletId, 'walletId', 64), input, idempotencyKey);
  }

  /**
   * Creates an open PENDING request (a payment link): no wallet and no one notified; any wallet
   * user who opens its `paymentUrl` may approve it, and the first approval binds it to that
   * wallet (see `decide`). Its currency is DEFAULT_CURRENCY. Otherwise as `create`.
   */
  async createLink(
    em: EntityManager,
    developerId: string,
    input: PaymentLinkFields,
    idempotencyKey: string | null = null,
  ): Promise<Detached<PaymentRequest>> {
    return this.createRequest(em, developerId, null, input, idempotencyKey);
  }

  /** The create of both doors: to `walletId`, or open (null). */
  private async createRequest(
    em: EntityManager,
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
    const created = await runInTransaction(em, async (q, trx) => {
      // 1st statement: the transaction's now() (the request's timestamp) and the wallet.
      type Start = { at: string; expiresAt: string; currency: string | null; status: string | null; userId: string | null; blocked: boolean };
      // The cap and the block concern a wallet's holder: an open request has none yet.
      const cap = open ? 0 : this.config.maxPendingPerPayer;
      const [start] = await q<Start>('payment_request_create_start', CREATE_START_SQL, [walletId, ttl, developerId]);
      if (!start) throw new Error('the create found no transaction timestamp');
      if (!open && start.status === null) throw notFound('Wallet not found');
      if (!open && start.status !== 'ACTIVE') throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
      if (start.blocked) throw new MerchantBlockedError();
      if (open) start.currency = this.config.defaultCurrency;
      // Only read from here on (event, response): a detached entity with the row as the 2nd
      // statement writes it (now() is the same throughout the transaction), mapped as the
      // status read maps it.
      const pr = detachedEntity(em, PaymentRequest, {
        id: randomUUID(),
        developer_id: developerId,
        wallet_id: walletId,
        amount,
        currency: start.currency,
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
      const event = firstEvent(pr, open ? undefined : start.userId!, pr.createdAt);
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
        event.id,
        JSON.stringify(event.payload),
        event.payload.createdAt,
        cap,
        open,
        capture,
        code,
        paymentUrl,
      ];
      // 2nd statement: the request, its event and webhook deliveries (unless the pair is at its cap).
      const write = async (values: unknown[]): Promise<{ deliveries: number; created: number } | undefined> => {
        try {
          return (await q<{ deliveries: number; created: number }>('payment_request_create', CREATE_SQL, values))[0];
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
        const [pending] = await q<{ live: number; retryAfter: number | null }>('payment_request_live_pending', LIVE_PENDING_SQL, [walletId, developerId]);
        if ((pending?.live ?? 0) >= cap) throw new TooManyPendingError(pending?.retryAfter ?? 1);
        rows = await write(values.with(14, 0));
      }
      recordWritten(trx, [event], (rows?.deliveries ?? 0) > 0);
      return pr;
    });
    this.observe('created');
    return created;
  }

  /** A request of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(em: EntityManager, developerId: string, id: string): Promise<Detached<PaymentRequest>> {
    requireUuid(id);
    // The hot status read: one hand-written statement mapped to a detached entity (with `overdue`, by the
    // database's clock, as the entity's formula reads it); the ORM's query building cost more CPU
    // than the whole rest of the read (bench/, #10).
    const [row] = await preparedRead<Record<string, unknown>>(em, 'payment_request_status', STATUS_READ, [id, developerId]);
    if (!row) throw notFound('Payment request not found');
    return detachedEntity(em, PaymentRequest, row);
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
    em: EntityManager,
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
    const and = (sql: string, ...v: unknown[]): void => {
      where.push(sql);
      values.push(...v);
    };
    and('pr.developer_id = ?', developerId);
    if (status !== null) and(`${effectiveStatusSql('pr')} = ?`, status);
    if (reference !== null) and('pr.reference = ?', reference);
    if (from) and('pr.created_at >= ?::timestamptz', from);
    if (to) and('pr.created_at < ?::timestamptz', to);
    if (cursor) and('(pr.created_at, pr.id) < (select c.created_at, c.id from payment_requests c where c.id = ? and c.developer_id = ?)', cursor, developerId);
    const rows = await em.execute<Array<Record<string, unknown>>>(
      `select ${READ_COLUMNS} from payment_requests pr where ${where.join(' and ')} order by pr.created_at desc, pr.id desc limit ?`,
      [...values, n + 1],
    );
    if (cursor && rows.length === 0) {
      const [known] = await em.execute('select 1 from payment_requests where id = ? and developer_id = ?', [cursor, developerId]);
      if (!known) throw notFound('after names no payment request of yours');
    }
    const data = rows.slice(0, n).map((row) => detachedEntity(em, PaymentRequest, row));
    const hasMore = rows.length > n;
    return { data, hasMore, nextAfter: hasMore ? data.at(-1)!.id : null };
  }

  /** A developer's requests carrying its `reference` (required here), newest first (the deprecated GraphQL field's rule). */
  async listByReference(em: EntityManager, developerId: string, reference: string | null | undefined, limit: number | null | undefined) {
    if (reference === undefined || reference === null) throw badInput('reference is required');
    return this.search(em, developerId, { reference }, null, limit);
  }

  /**
   * A request by its link's code, for a wallet user (`paymentRequestByCode`): an open request not
   * yet bound to a wallet, to any user; a request to a wallet (an open one once paid), to that
   * wallet's user only; otherwise NOT_FOUND (also for an unknown or malformed code).
   */
  async getByCodeForUser(em: EntityManager, userId: string, code: string): Promise<Detached<PaymentRequest>> {
    const [row] = await preparedRead<Record<string, unknown>>(
      em,
      'payment_request_by_code_for_user',
      `select ${READ_COLUMNS} from payment_requests pr
        where pr.code = $1 and (pr.wallet_id is null or pr.wallet_id = (select w.id from wallets w where w.user_id = $2))`,
      [requireCode(code), userId],
    );
    if (!row) throw notFound('Payment request not found');
    return detachedEntity(em, PaymentRequest, row);
  }

  /**
   * What the public page of a link (`GET /pay/{code}`) may show: the merchant, the amount and
   * the status as clients see it, never who paid. NOT_FOUND for an unknown code.
   */
  async publicByCode(em: EntityManager, code: string): Promise<PublicPaymentRequest> {
    const [row] = await preparedRead<Record<string, unknown>>(em, 'payment_request_by_code', `select ${READ_COLUMNS} from payment_requests pr where pr.code = $1`, [
      requireCode(code),
    ]);
    if (!row) throw notFound('Payment request not found');
    const pr = detachedEntity(em, PaymentRequest, row);
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
  async listPendingForUser(em: EntityManager, userId: string): Promise<PaymentRequest[]> {
    const rows = await em.execute(
      `select pr.* from payment_requests pr join wallets w on w.id = pr.wallet_id
        where w.user_id = ? and pr.status = 'PENDING' and not ${overdueSql('pr')}
        order by pr.created_at asc limit 100`,
      [userId],
    );
    return rows.map((row) => em.map(PaymentRequest, row));
  }

  /**
   * This user's requests already decided (paid, rejected, expired, cancelled), newest first: the
   * wallet app's "recent" list, so a payment made elsewhere shows after signing in.
   */
  async listRecentForUser(em: EntityManager, userId: string, limit: number): Promise<PaymentRequest[]> {
    const rows = await em.execute(
      `select pr.* from payment_requests pr join wallets w on w.id = pr.wallet_id
        where w.user_id = ? and (pr.status <> 'PENDING' or ${overdueSql('pr')})
        order by pr.updated_at desc limit ?`,
      [userId, Math.min(Math.max(Math.trunc(limit), 1), 50)],
    );
    return rows.map((row) => em.map(PaymentRequest, row));
  }

  /** The developer cancels a PENDING request. */
  async cancel(em: EntityManager, developerId: string, id: string): Promise<PaymentRequest> {
    const pr = await this.decide(em, { developerId }, id, PaymentRequestStatus.CANCELLED);
    this.observe('cancelled');
    this.decided('cancelled', decisionSeconds(pr.createdAt, pr.updatedAt));
    return pr;
  }

  /** The wallet's owner rejects a PENDING request. */
  async reject(em: EntityManager, userId: string, id: string): Promise<PaymentRequest> {
    const pr = await this.decide(em, { userId }, id, PaymentRequestStatus.REJECTED);
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
  async approve(em: EntityManager, userId: string, id: string, verification: ApprovalVerificationFields): Promise<PaymentRequest> {
    if (!this.consent) throw new Error('PaymentRequestService: approvals need the consent service');
    const checked = this.consent.parseVerification(verification);
    requireUuid(id);
    const { walletId, subject } = await this.approvalSubject(em, userId, id);
    const method = await this.consent.verify(em, { userId, walletId }, subject, checked);
    try {
      const pr = await this.decide(em, { userId }, id, PaymentRequestStatus.APPROVED, { method });
      this.observe('approved');
      this.decided('approved', decisionSeconds(pr.createdAt, pr.updatedAt));
      return pr;
    } catch (err) {
      if (err instanceof AppError && err.code === 'INSUFFICIENT_FUNDS') this.observe('insufficient_funds');
      throw err;
    }
  }

  /**
   * What the payer is asked to consent to, read before any verification: the caller's own request,
   * or an open one (the approval binds it to the caller's wallet) (else NOT_FOUND), still PENDING and not overdue (else the error the approval would meet),
   * and the wallet that pays it. The approval's transaction checks all of it again.
   */
  private async approvalSubject(em: EntityManager, userId: string, id: string): Promise<{ walletId: string; subject: ApprovalSubject }> {
    const [row] = await em.execute<
      Array<{ walletId: string; amount: string; currency: string; merchantName: string; status: PaymentRequestStatus; overdue: boolean }>
    >(
      // The caller's own request, or an open one (a link): its payer is whoever approves it first.
      `select w.id as "walletId", pr.amount::text as amount, pr.currency, pr.merchant_name as "merchantName", pr.status,
              ${overdueSql('pr')} as overdue
         from payment_requests pr join wallets w on w.user_id = ?
        where pr.id = ? and (pr.wallet_id = w.id or pr.open_link)`,
      [userId, id],
    );
    if (!row) throw notFound('Payment request not found');
    if (row.status !== PaymentRequestStatus.PENDING) {
      throw new AppError('PAYMENT_REQUEST_NOT_PENDING', `Payment request is ${row.status}, not PENDING`);
    }
    if (row.overdue) throw new AppError('PAYMENT_REQUEST_EXPIRED', 'Payment request has expired');
    return {
      walletId: row.walletId,
      subject: { paymentRequestId: id, amount: row.amount /* numeric(18,2) as text: two decimals */, currency: row.currency, merchantName: row.merchantName },
    };
  }

  /**
   * Marks up to `batch` overdue PENDING requests EXPIRED and notifies their owners. Rows other
   * instances hold are skipped (`SKIP LOCKED`), so each request expires exactly once.
   */
  async expireDue(em: EntityManager, batch = 500): Promise<number> {
    const expired = await em.transactional(async (tem) => {
      const rows: Array<Record<string, unknown>> = await tem.execute(
        `with due as (
           select id from payment_requests pr
            where ${overdueSql('pr')}
            order by expires_at
            limit ? for update skip locked)
         update payment_requests pr
            set status = 'EXPIRED', updated_at = now()
           from due
          where pr.id = due.id
         returning pr.*, (select w.user_id from wallets w where w.id = pr.wallet_id) as user_id`,
        [batch],
      );
      await writeEvents(
        tem,
        rows.map((row) => ({
          type: 'payment_request.expired',
          paymentRequest: tem.map(PaymentRequest, row),
          userId: (row.user_id as string | null) ?? undefined, // none for an open request
        })),
      );
      return rows.map((row) => decisionSeconds(row.created_at, row.updated_at));
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
  private async decide(
    em: EntityManager,
    owner: Owner,
    id: string,
    to: PaymentRequestStatus,
    approval?: ApprovalContext,
  ): Promise<PaymentRequest> {
    if ((to === PaymentRequestStatus.APPROVED) !== (approval !== undefined)) throw new Error('an approval, and only an approval, is verified');
    requireUuid(id);
    const ownerId = 'developerId' in owner ? owner.developerId : owner.userId;
    const transactionId = to === PaymentRequestStatus.APPROVED ? randomUUID() : null;
    return em.transactional(async (tem) => {
      const rows = await tem.execute<DecidedRow[]>(claimSql(owner, to), [to, transactionId, id, ownerId]);
      const row = rows[0];
      if (!row) throw await this.whyNotPending(tem, owner, id);
      if (transactionId) {
        // The consent receipt, kept with the request (every later read answers the same one); a
        // failure to debit below rolls it back with everything else.
        row.consent_receipt = await this.consentReceipt(row, transactionId, approval!.method);
        await tem.execute('update payment_requests set consent_receipt = ? where id = ?', [row.consent_receipt, row.id]);
      }
      const pr = tem.map(PaymentRequest, row);
      if (transactionId) {
        const movement = { transactionId, walletId: pr.walletId!, developerId: pr.developerId, amount: pr.amount, currency: pr.currency };
        const record = { ...movement, paymentRequestId: pr.id, description: pr.description };
        // The transaction row first: the ledger entries reference it. A failed debit or hold rolls both back.
        if (pr.capture === CaptureMode.MANUAL) {
          await this.transactions.createHeld(tem, record, this.config.holdTtlHours);
          await placeHold(tem, movement);
        } else {
          if (!this.merchant) throw new Error('PaymentRequestService: approvals need the merchant side (src/settlement)');
          await this.transactions.createForPayment(tem, record);
          await movePayment(tem, movement, this.merchant);
        }
      }
      const transaction = transactionId ? await tem.findOneOrFail(Transaction, { id: transactionId }) : undefined;
      // Events of an open request not yet bound have no one to notify (user_id null).
      await writeEvent(tem, { type: EVENT_OF_STATUS[to], paymentRequest: pr, transaction, userId: row.user_id ?? undefined });
      return pr;
    });
  }

  /**
   * The signed receipt of an approval (src/consent): the request as the payer saw it, its
   * transaction, how the payer confirmed it, and the approval's time by the database's clock. The
   * amount is the numeric column's own text ("12.50"), never a float.
   */
  private consentReceipt(row: Record<string, unknown>, transactionId: string, verification: VerificationMethod): Promise<string> {
    if (!this.receipts) throw new Error('PaymentRequestService: approvals need the consent receipt signer');
    return this.receipts.sign({
      paymentRequestId: row.id as string,
      transactionId,
      amount: String(row.amount),
      currency: row.currency as string,
      merchantName: row.merchant_name as string,
      verification,
      iat: Math.floor(new Date(row.updated_at as Date | string).getTime() / 1000),
    });
  }

  /** The error for a transition that found nothing to change: not the owner's, not PENDING, or overdue. */
  private async whyNotPending(tem: EntityManager, owner: Owner, id: string): Promise<AppError> {
    type Found = { status: PaymentRequestStatus; overdue: boolean; mine: boolean; currency: string; walletCurrency: string | null };
    const [found] =
      'developerId' in owner
        ? await tem.execute<Found[]>(
            `select pr.status, ${overdueSql('pr')} as overdue, true as mine, pr.currency, null as "walletCurrency"
               from payment_requests pr where pr.id = ? and pr.developer_id = ?`,
            [id, owner.developerId],
          )
        : // The user's own requests, and open ones (bound to someone else since, or not yet).
          await tem.execute<Found[]>(
            `select pr.status, ${overdueSql('pr')} as overdue, w.id is not null as mine, pr.currency, me.currency as "walletCurrency"
               from payment_requests pr
               left join wallets w on w.id = pr.wallet_id and w.user_id = ?
               left join wallets me on me.user_id = ?
              where pr.id = ? and (w.id is not null or pr.open_link)`,
            [owner.userId, owner.userId, id],
          );
    if (!found) return notFound('Payment request not found');
    if (found.overdue) return new AppError('PAYMENT_REQUEST_EXPIRED', 'Payment request has expired');
    if (found.status === PaymentRequestStatus.PENDING && !found.mine) {
      if (found.walletCurrency === null) return notFound('Wallet not found');
      if (found.walletCurrency !== found.currency) {
        return badInput(`This payment request is in ${found.currency}; your wallet holds ${found.walletCurrency}`);
      }
      // Only approving binds an open request: one person's "no" does not close a shop's link.
      return new AppError('FORBIDDEN', 'An open payment request can only be approved (or left alone)');
    }
    return new AppError('PAYMENT_REQUEST_NOT_PENDING', `Payment request is ${found.status}, not PENDING`);
  }
}
