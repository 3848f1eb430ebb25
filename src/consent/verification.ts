import type { EntityManager } from '@mikro-orm/postgresql';

/** How the payer confirmed an approval (the consent receipt's `verification` claim). */
export type VerificationMethod = 'pin' | 'passkey';

/** What the payer consents to; the passkey challenge commits to exactly these. */
export interface ApprovalSubject {
  paymentRequestId: string;
  /** Two decimals, e.g. "12.50". */
  amount: string;
  currency: string;
  merchantName: string;
}

/**
 * Checks a WebAuthn assertion made for an approval: that it was made by one of `userId`'s
 * passkeys, over a single-use challenge committing to `subject`, with a valid signature and sign
 * counter. True only then; any other outcome (a malformed assertion included) is false.
 */
export interface PasskeyAssertionVerifier {
  verifyApproval(em: EntityManager, userId: string, subject: ApprovalSubject, assertion: Record<string, unknown>): Promise<boolean>;
}

/**
 * Until the passkeys work (#24, WebAuthn registration and `approvalChallenge`) lands, no
 * assertion verifies: a passkey approval answers VERIFICATION_FAILED (and counts as a failure).
 */
export const NO_PASSKEYS: PasskeyAssertionVerifier = {
  verifyApproval: () => Promise.resolve(false),
};

/** One approval's verification, as `ConsentService.parseVerification` checked it. */
export type ApprovalVerification =
  | { readonly method: 'pin'; readonly pin: string }
  | { readonly method: 'passkey'; readonly assertion: Record<string, unknown> };

/** The `verification` argument as the GraphQL input type delivers it (exactly one of the two). */
export interface ApprovalVerificationFields {
  pin?: string | null | undefined;
  passkey?: Record<string, unknown> | null | undefined;
}

/** Outcomes of one verification, for `approval_verifications_total{method,outcome}`. */
export type VerificationOutcome = 'ok' | 'failed' | 'locked';
