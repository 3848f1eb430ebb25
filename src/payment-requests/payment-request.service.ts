import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { parseAmount } from '../money.js';
import { publishInTransaction } from '../events/events.js';
import { Wallet, WalletStatus } from '../accounts/wallet.entity.js';
import { recordPayment } from '../ledger/ledger.js';
import { PaymentRequest, PaymentRequestStatus } from './payment-request.entity.js';
import { isUuid } from '../uuid.js';

/** Input of request-payment, as the GraphQL input type delivers it. */
export interface RequestPaymentFields {
  walletId: string;
  amount: number;
  description: string;
  merchantName: string;
}

/**
 * The status a client sees: a PENDING request whose `expiresAt` has passed reads as EXPIRED
 * even before the sweeper wrote it.
 */
export function effectiveStatus(pr: Pick<PaymentRequest, 'status' | 'expiresAt'>, now = new Date()): PaymentRequestStatus {
  return pr.status === PaymentRequestStatus.PENDING && pr.expiresAt.getTime() <= now.getTime()
    ? PaymentRequestStatus.EXPIRED
    : pr.status;
}

/** When the request last changed as a client sees it (an unswept expiry changed it at `expiresAt`). */
export function effectiveUpdatedAt(pr: Pick<PaymentRequest, 'status' | 'expiresAt' | 'updatedAt'>, now = new Date()): Date {
  return effectiveStatus(pr, now) === PaymentRequestStatus.EXPIRED && pr.status === PaymentRequestStatus.PENDING
    ? pr.expiresAt
    : pr.updatedAt;
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

/** Rows locked for a transition, with what the decision needs. */
interface LockedRequest {
  id: string;
  status: PaymentRequestStatus;
  expired: boolean;
  walletId: string;
  developerId: string;
  userId: string;
  amount: string;
  currency: string;
  description: string;
}

type Owner = { developerId: string } | { userId: string };

/** What became of a payment request, for metrics. */
export type PaymentOutcome = 'created' | 'approved' | 'rejected' | 'cancelled' | 'expired' | 'insufficient_funds';

/** The payment request state machine (SPEC §6). Every transition is one database transaction. */
export class PaymentRequestService {
  constructor(
    private readonly config: Config,
    private readonly observe: (outcome: PaymentOutcome, count?: number) => void = () => undefined,
  ) {}

  /** Creates a PENDING request against an ACTIVE wallet and notifies the wallet's owner on commit. */
  async create(em: EntityManager, developerId: string, input: RequestPaymentFields, idempotencyKey: string | null = null): Promise<PaymentRequest> {
    if (idempotencyKey !== null && (idempotencyKey.length < 1 || idempotencyKey.length > 255)) {
      throw badInput('idempotencyKey must be 1-255 characters');
    }
    const walletId = requireText(input.walletId, 'walletId', 64);
    const amount = parseAmount(input.amount, this.config.maxAmount);
    const description = requireText(input.description, 'description', 255);
    const merchantName = requireText(input.merchantName, 'merchantName', 100);
    const created = await em.transactional(async (tem) => {
      const wallet = await tem.findOne(Wallet, { id: walletId });
      if (!wallet) throw notFound('Wallet not found');
      if (wallet.status !== WalletStatus.ACTIVE) throw new AppError('WALLET_NOT_ACTIVE', 'Wallet is not active');
      const now = new Date();
      const pr = tem.create(PaymentRequest, {
        id: randomUUID(),
        developerId,
        walletId: wallet.id,
        amount,
        currency: wallet.currency,
        description,
        merchantName,
        status: PaymentRequestStatus.PENDING,
        createdAt: now,
        expiresAt: new Date(now.getTime() + this.config.paymentRequestTtlSeconds * 1000),
        updatedAt: now,
        transactionId: null,
        idempotencyKey,
      });
      try {
        await tem.flush();
      } catch (err) {
        if (err instanceof UniqueConstraintViolationException) {
          throw new AppError('CONFLICT', 'A payment request with this idempotency key already exists');
        }
        throw err;
      }
      await publishInTransaction(tem, { type: 'paymentRequested', paymentRequestId: pr.id, userId: wallet.userId });
      return pr;
    });
    this.observe('created');
    return created;
  }

  /** A request of this developer's, or NOT_FOUND (also for anyone else's id). */
  async getForDeveloper(em: EntityManager, developerId: string, id: string): Promise<PaymentRequest> {
    if (!isUuid(id)) throw badInput('requestId must be a UUID');
    const pr = await em.findOne(PaymentRequest, { id, developerId });
    if (!pr) throw notFound('Payment request not found');
    return pr;
  }

  /** Requests still awaiting this user's decision (catch-up after a reconnect), oldest first. */
  async listPendingForUser(em: EntityManager, userId: string): Promise<PaymentRequest[]> {
    const wallet = await em.findOne(Wallet, { userId });
    if (!wallet) return [];
    return em.find(
      PaymentRequest,
      { walletId: wallet.id, status: PaymentRequestStatus.PENDING, expiresAt: { $gt: new Date() } },
      { orderBy: { createdAt: 'asc' }, limit: 100 },
    );
  }

  /** The developer cancels a PENDING request. */
  async cancel(em: EntityManager, developerId: string, id: string): Promise<PaymentRequest> {
    const pr = await this.decide(em, { developerId }, id, PaymentRequestStatus.CANCELLED);
    this.observe('cancelled');
    return pr;
  }

  /** The wallet's owner rejects a PENDING request. */
  async reject(em: EntityManager, userId: string, id: string): Promise<PaymentRequest> {
    const pr = await this.decide(em, { userId }, id, PaymentRequestStatus.REJECTED);
    this.observe('rejected');
    return pr;
  }

  /**
   * The wallet's owner approves: in one database transaction the request becomes APPROVED, the
   * wallet is debited (only if ACTIVE and the balance covers it), the developer is credited,
   * the ledger records both sides and a COMPLETED transaction is created. Any error rolls
   * everything back; INSUFFICIENT_FUNDS leaves the request PENDING.
   */
  async approve(em: EntityManager, userId: string, id: string): Promise<PaymentRequest> {
    if (!isUuid(id)) throw badInput('id must be a UUID');
    try {
      const pr = await this.approveInTransaction(em, userId, id);
      this.observe('approved');
      return pr;
    } catch (err) {
      if (err instanceof AppError && err.code === 'INSUFFICIENT_FUNDS') this.observe('insufficient_funds');
      throw err;
    }
  }

  private approveInTransaction(em: EntityManager, userId: string, id: string): Promise<PaymentRequest> {
    return em.transactional(async (tem) => {
      const locked = await this.lockPending(tem, { userId }, id);
      const transactionId = await recordPayment(tem, {
        paymentRequestId: locked.id,
        walletId: locked.walletId,
        developerId: locked.developerId,
        amount: locked.amount,
        currency: locked.currency,
        description: locked.description,
      });
      return this.finish(tem, locked, PaymentRequestStatus.APPROVED, transactionId);
    });
  }

  /**
   * Marks up to `batch` overdue PENDING requests EXPIRED and notifies their owners. Rows other
   * instances hold are skipped (`SKIP LOCKED`), so each request expires exactly once.
   */
  async expireDue(em: EntityManager, batch = 500): Promise<number> {
    const expired = await em.transactional(async (tem) => {
      const rows: Array<{ id: string; userId: string }> = await tem.execute(
        `with due as (
           select id from payment_requests
            where status = 'PENDING' and expires_at <= now()
            order by expires_at
            limit ? for update skip locked)
         update payment_requests pr
            set status = 'EXPIRED', updated_at = now()
           from due, wallets w
          where pr.id = due.id and w.id = pr.wallet_id
         returning pr.id as "id", w.user_id as "userId"`,
        [batch],
      );
      for (const row of rows) {
        await publishInTransaction(tem, { type: 'paymentRequestUpdated', paymentRequestId: row.id, userId: row.userId });
      }
      return rows.length;
    });
    if (expired > 0) this.observe('expired', expired);
    return expired;
  }

  private async decide(em: EntityManager, owner: Owner, id: string, to: PaymentRequestStatus): Promise<PaymentRequest> {
    if (!isUuid(id)) throw badInput('id must be a UUID');
    return em.transactional(async (tem) => {
      const locked = await this.lockPending(tem, owner, id);
      return this.finish(tem, locked, to, null);
    });
  }

  /** Locks the request row (`FOR UPDATE`) and checks it may still change. */
  private async lockPending(tem: EntityManager, owner: Owner, id: string): Promise<LockedRequest> {
    const [ownerColumn, ownerId] =
      'developerId' in owner ? ['pr.developer_id', owner.developerId] : ['w.user_id', owner.userId];
    const rows: LockedRequest[] = await tem.execute(
      `select pr.id, pr.status, pr.expires_at <= now() as "expired", pr.wallet_id as "walletId",
              pr.developer_id as "developerId", w.user_id as "userId", pr.amount, pr.currency, pr.description
         from payment_requests pr join wallets w on w.id = pr.wallet_id
        where pr.id = ? and ${ownerColumn} = ?
        for update of pr`,
      [id, ownerId],
    );
    const locked = rows[0];
    if (!locked) throw notFound('Payment request not found');
    if (locked.status !== PaymentRequestStatus.PENDING) {
      throw new AppError('PAYMENT_REQUEST_NOT_PENDING', `Payment request is ${locked.status}, not PENDING`);
    }
    if (locked.expired) throw new AppError('PAYMENT_REQUEST_EXPIRED', 'Payment request has expired');
    return locked;
  }

  /** Writes the new status with a conditional update and queues `paymentRequestUpdated`. */
  private async finish(
    tem: EntityManager,
    locked: LockedRequest,
    to: PaymentRequestStatus,
    transactionId: string | null,
  ): Promise<PaymentRequest> {
    const updated = await tem.nativeUpdate(
      PaymentRequest,
      { id: locked.id, status: PaymentRequestStatus.PENDING },
      { status: to, transactionId, updatedAt: new Date() },
    );
    if (updated !== 1) {
      throw new AppError('PAYMENT_REQUEST_NOT_PENDING', 'Payment request is no longer PENDING');
    }
    await publishInTransaction(tem, { type: 'paymentRequestUpdated', paymentRequestId: locked.id, userId: locked.userId });
    const pr = await tem.findOneOrFail(PaymentRequest, { id: locked.id }, { refresh: true });
    return pr;
  }
}
