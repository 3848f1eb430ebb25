import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApprovalSubject } from './verification.js';

const NONCE_BYTES = 16;
const DIGEST_BYTES = 32;

/**
 * SHA-256 over the canonical JSON of the subject and the nonce: fixed key order, the amount as
 * its two-decimal string, so the same request data always gives the same bytes.
 */
function commitment(subject: ApprovalSubject, nonce: Buffer): Buffer {
  const canonical = JSON.stringify({
    amount: subject.amount,
    currency: subject.currency,
    merchantName: subject.merchantName,
    nonce: nonce.toString('base64url'),
    paymentRequestId: subject.paymentRequestId,
  });
  return createHash('sha256').update(canonical, 'utf8').digest();
}

/**
 * A fresh approval challenge bound to one payment (dynamic linking, as PSD2's strong customer
 * authentication asks): 16 random bytes followed by SHA-256 of the request's id, amount, currency
 * and merchant name with those bytes. The authenticator signs it, so a signature over it says
 * "this payer approved exactly this".
 */
export function approvalChallengeBytes(subject: ApprovalSubject): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  return Buffer.concat([nonce, commitment(subject, nonce)]);
}

/**
 * True when a challenge (base64url, as the client data carries it) commits to `subject` as it is
 * now: one made for another request, another amount or another merchant name does not.
 */
export function challengeCommitsTo(challenge: string, subject: ApprovalSubject): boolean {
  if (!/^[A-Za-z0-9_-]+$/.test(challenge)) return false;
  const bytes = Buffer.from(challenge, 'base64url');
  if (bytes.length !== NONCE_BYTES + DIGEST_BYTES) return false;
  const expected = commitment(subject, bytes.subarray(0, NONCE_BYTES));
  return timingSafeEqual(bytes.subarray(NONCE_BYTES), expected);
}
