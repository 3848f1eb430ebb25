import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { PaymentRequest, overdueSql } from '../payment-requests/payment-request.entity.js';
import type { PaymentRequestService } from '../payment-requests/payment-request.service.js';

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
  async block(em: EntityManager, userId: string, paymentRequestId: string): Promise<BlockedMerchantRow> {
    requireUuid(paymentRequestId);
    return em.transactional(async (tem) => {
      const pr = await this.ownRequest(tem, userId, paymentRequestId);
      const [row] = await tem.execute<Array<{ id: string; merchant_name: string; blocked_at: Date }>>(
        `insert into merchant_blocks (id, wallet_id, developer_id, merchant_name, blocked_at)
         values (?, ?, ?, ?, now())
         on conflict (wallet_id, developer_id) do update set wallet_id = excluded.wallet_id
         returning id, merchant_name, blocked_at`,
        [randomUUID(), pr.wallet_id, pr.developer_id, pr.merchant_name],
      );
      await this.rejectIfPending(tem, userId, pr.id);
      return { id: row!.id, merchantName: row!.merchant_name, blockedAt: new Date(row!.blocked_at) };
    });
  }

  /** The caller's blocks, newest first. */
  async list(em: EntityManager, userId: string): Promise<BlockedMerchantRow[]> {
    const rows = await em.execute<Array<{ id: string; merchant_name: string; blocked_at: Date }>>(
      `select b.id, b.merchant_name, b.blocked_at
         from merchant_blocks b join wallets w on w.id = b.wallet_id
        where w.user_id = ?
        order by b.blocked_at desc, b.id`,
      [userId],
    );
    return rows.map((r) => ({ id: r.id, merchantName: r.merchant_name, blockedAt: new Date(r.blocked_at) }));
  }

  /** Lifts one of the caller's blocks (NOT_FOUND for anyone else's or an unknown id). */
  async unblock(em: EntityManager, userId: string, id: string): Promise<boolean> {
    requireUuid(id);
    const rows = await em.execute<Array<{ id: string }>>(
      `delete from merchant_blocks b using wallets w
        where b.id = ? and w.id = b.wallet_id and w.user_id = ?
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
  async report(em: EntityManager, userId: string, id: string, reason: string | null | undefined): Promise<PaymentRequest> {
    requireUuid(id);
    const text = reportReason(reason);
    return em.transactional(async (tem) => {
      const pr = await this.ownRequest(tem, userId, id);
      await this.rejectIfPending(tem, userId, pr.id);
      const [row] = await tem.execute<Array<Record<string, unknown>>>(
        `update payment_requests
            set reported_at = coalesce(reported_at, now()), report_reason = coalesce(?, report_reason)
          where id = ?
          returning id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at,
                    updated_at, transaction_id, reference, metadata, idempotency_key, consent_receipt,
                    ${overdueSql('payment_requests')} as overdue`,
        [text, pr.id],
      );
      return tem.map(PaymentRequest, row!);
    });
  }

  private async ownRequest(tem: EntityManager, userId: string, id: string): Promise<OwnRequest> {
    const [pr] = await tem.execute<OwnRequest[]>(
      `select pr.id, pr.developer_id, pr.wallet_id, pr.merchant_name
         from payment_requests pr join wallets w on w.id = pr.wallet_id
        where pr.id = ? and w.user_id = ?
        for update of pr`,
      [id, userId],
    );
    if (!pr) throw notFound('Payment request not found');
    return pr;
  }

  /** Rejects through the state machine (a savepoint of this transaction); a request no longer PENDING stays as it is. */
  private async rejectIfPending(tem: EntityManager, userId: string, id: string): Promise<void> {
    try {
      await this.payments.reject(tem, userId, id);
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
