import { randomUUID } from 'node:crypto';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import type { PaymentRequest } from '../payment-requests/payment-request.entity.js';
import type { PaymentRequestService } from '../payment-requests/payment-request.service.js';
import { paymentRequestColumns, paymentRequestFromRow } from '../payment-requests/payment-request.read.js';
import type { Queryable } from '../db/sql.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import type { Detached } from '../db/rows.js';

/** A merchant (developer) a wallet's holder blocked, named as the request it was blocked from named it. */
export interface BlockedMerchantRow {
  id: string;
  merchantName: string;
  blockedAt: Date;
}

/** Longest report reason (characters). */
export const MAX_REPORT_REASON = 500;

/** The request, if it is to this user's wallet, locked for the rest of the transaction. */
interface OwnRequest {
  id: string;
  developer_id: string;
  wallet_id: string;
  merchant_name: string;
}

/**
 * The payer's controls over who may ask them for money (SPEC §15): block a request's developer
 * for their wallet, list and lift blocks, report a request as unwanted. A block or a report of a
 * PENDING request rejects it through the state machine (its event and webhook go out as for any
 * rejection); what the payer chose is never shown to any developer: a blocked developer learns
 * only that it is itself refused (MERCHANT_BLOCKED on its next request-payment to the wallet).
 */
export class PayerControls {
  constructor(private readonly payments: PaymentRequestService) {}

  /**
   * Blocks the developer of this request (to the caller's wallet, else NOT_FOUND) for the
   * caller's wallet and rejects the request if it is PENDING, in one database transaction.
   * Blocking a developer again answers the existing block.
   */
  async block(work: UnitOfWork, userId: string, paymentRequestId: string): Promise<BlockedMerchantRow> {
    requireUuid(paymentRequestId);
    return work.transaction(async (tx) => {
      const pr = await this.ownRequest(tx, userId, paymentRequestId);
      const [row] = await tx.query<{ id: string; merchant_name: string; blocked_at: Date }>(
        `insert into merchant_blocks (id, wallet_id, developer_id, merchant_name, blocked_at)
         values ($1, $2, $3, $4, now())
         on conflict (wallet_id, developer_id) do update set wallet_id = excluded.wallet_id
         returning id, merchant_name, blocked_at`,
        [randomUUID(), pr.wallet_id, pr.developer_id, pr.merchant_name],
      );
      await this.rejectIfPending(tx, userId, pr.id);
      return { id: row!.id, merchantName: row!.merchant_name, blockedAt: new Date(row!.blocked_at) };
    });
  }

  /** The caller's blocks, newest first. */
  async list(db: Queryable, userId: string): Promise<BlockedMerchantRow[]> {
    const rows = await db.query<{ id: string; merchant_name: string; blocked_at: Date }>(
      `select b.id, b.merchant_name, b.blocked_at
         from merchant_blocks b join wallets w on w.id = b.wallet_id
        where w.user_id = $1
        order by b.blocked_at desc, b.id`,
      [userId],
    );
    return rows.map((r) => ({ id: r.id, merchantName: r.merchant_name, blockedAt: new Date(r.blocked_at) }));
  }

  /** Lifts one of the caller's blocks (NOT_FOUND for anyone else's or an unknown id). */
  async unblock(db: Queryable, userId: string, id: string): Promise<boolean> {
    requireUuid(id);
    const rows = await db.query<{ id: string }>(
      `delete from merchant_blocks b using wallets w
        where b.id = $1 and w.id = b.wallet_id and w.user_id = $2
        returning b.id`,
      [id, userId],
    );
    if (rows.length === 0) throw notFound('Blocked merchant not found');
    return true;
  }

  /**
   * Reports a request to the caller's wallet as unwanted: rejected if PENDING, marked reported
   * (the first report's time stays; a later reason replaces an absent one) for operators only.
   */
  async report(work: UnitOfWork, userId: string, id: string, reason: string | null | undefined): Promise<Detached<PaymentRequest>> {
    requireUuid(id);
    const text = reportReason(reason);
    return work.transaction(async (tx) => {
      const pr = await this.ownRequest(tx, userId, id);
      await this.rejectIfPending(tx, userId, pr.id);
      const [row] = await tx.query(
        `update payment_requests pr
            set reported_at = coalesce(reported_at, now()), report_reason = coalesce($1, report_reason)
          where pr.id = $2
          returning ${paymentRequestColumns('pr')}`,
        [text, pr.id],
      );
      return paymentRequestFromRow(row!);
    });
  }

  private async ownRequest(tx: Tx, userId: string, id: string): Promise<OwnRequest> {
    const [pr] = await tx.query<OwnRequest>(
      `select pr.id, pr.developer_id, pr.wallet_id, pr.merchant_name
         from payment_requests pr join wallets w on w.id = pr.wallet_id
        where pr.id = $1 and w.user_id = $2
        for update of pr`,
      [id, userId],
    );
    if (!pr) throw notFound('Payment request not found');
    return pr;
  }

  /**
   * Rejects through the state machine, inside this transaction (its event goes out with the
   * commit, as any rejection's); a request no longer PENDING stays as it is (the claim changed
   * nothing, so the transaction goes on).
   */
  private async rejectIfPending(tx: Tx, userId: string, id: string): Promise<void> {
    try {
      await this.payments.rejectIn(tx, userId, id);
    } catch (err) {
      if (err instanceof AppError && (err.code === 'PAYMENT_REQUEST_NOT_PENDING' || err.code === 'PAYMENT_REQUEST_EXPIRED')) return;
      throw err;
    }
  }
}

/** A report's reason: absent, or 1-500 characters after trimming, no control characters but newlines and tabs. */
function reportReason(reason: string | null | undefined): string | null {
  if (reason === undefined || reason === null) return null;
  if (typeof reason !== 'string') throw badInput('reason must be a string');
  const text = reason.trim();
  if (text.length === 0) return null;
  if ([...text].length > MAX_REPORT_REASON) throw badInput(`reason must be at most ${MAX_REPORT_REASON} characters`);
  // eslint-disable-next-line no-control-regex -- exactly what is refused here
  if (/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(text)) throw badInput('reason must not contain control characters');
  return text;
}
