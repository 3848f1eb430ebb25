import type { EntityManager } from '@mikro-orm/postgresql';
import type { Queryable } from '../db/sql.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { generatePin, hashPin, requirePin, verifyPin } from './pin.js';
import {
  NO_PASSKEYS,
  type ApprovalSubject,
  type ApprovalVerification,
  type ApprovalVerificationFields,
  type PasskeyAssertionVerifier,
  type VerificationMethod,
  type VerificationOutcome,
} from './verification.js';

/** The answer to an approval of a wallet that has no PIN (made outside the gateway's doors). */
export const NO_PIN_MESSAGE = 'Set a transaction PIN before approving';

/** Stores a PIN's hash, replacing any earlier one and lifting any lock (one statement). */
const SET_PIN_SQL = `insert into wallet_pins (wallet_id, pin_hash, failures, locked_until, updated_at)
  values ($1, $2, 0, null, now())
  on conflict (wallet_id) do update set pin_hash = excluded.pin_hash, failures = 0, locked_until = null, updated_at = now()`;

/**
 * The wallet's credential row, locked for the length of one verification: concurrent
 * verifications of one wallet, on any instance, take turns, so each sees the count the previous
 * one left (see `verify`).
 */
const CLAIM_SQL = `select pin_hash, (locked_until is not null and locked_until > now()) as locked,
       ceil(extract(epoch from (locked_until - now())))::int as "lockSeconds"
  from wallet_pins where wallet_id = ? for update`;

/** A correct verification: the count starts again. */
const SUCCESS_SQL = `update wallet_pins set failures = 0, locked_until = null, updated_at = now() where wallet_id = ?`;

/**
 * A failed verification: one more failure in a row (the first of a fresh count when an earlier
 * lock has lapsed); the max-th locks the wallet's approvals for the lock's length.
 */
const FAILURE_SQL = `update wallet_pins p set
       failures = n.failures,
       locked_until = case when n.failures >= ? then now() + make_interval(mins => ?) else null end,
       updated_at = now()
  from (select case when locked_until is not null and locked_until <= now() then 1 else failures + 1 end as failures
          from wallet_pins where wallet_id = ?) n
 where p.wallet_id = ?
 returning p.failures`;

/** What one claimed verification found. */
type Verdict = { kind: 'ok' } | { kind: 'none' } | { kind: 'locked'; seconds: number } | { kind: 'failed'; left: number };

/**
 * Consent to a payment: the wallet's transaction PIN (its hash, src/consent/pin.ts), the
 * verification every approval needs (a PIN or a passkey assertion, src/consent/verification.ts)
 * and the lock that bounds guessing.
 *
 * Guessing is counted in the database, so it holds across every process and instance: a
 * verification locks the wallet's `wallet_pins` row (`select … for update`) for its length, checks
 * the lock, compares, and records the outcome before it commits. Concurrent verifications of one
 * wallet therefore take turns and each sees the count the previous one left: 20 parallel wrong PINs
 * get `PIN_MAX_ATTEMPTS` answers VERIFICATION_FAILED and the rest VERIFICATION_LOCKED, whatever the
 * instances, and parallel correct approvals (a payer's two taps) all verify, where a counter that
 * reserved attempts up front would lock them out. The row lock is held for one hash comparison
 * (tens of ms) and never while money moves: the approval's own transaction runs after the
 * verification has committed.
 */
export class ConsentService {
  constructor(
    private readonly config: Config,
    private readonly passkeys: PasskeyAssertionVerifier = NO_PASSKEYS,
    /** Told each verification's method and outcome (metrics: approval_verifications_total). */
    private readonly observe: (method: VerificationMethod, outcome: VerificationOutcome) => void = () => undefined,
  ) {}

  /** Exactly one of `pin` (4-6 digits) or `passkey`; else BAD_USER_INPUT, nothing counted. */
  parseVerification(fields: ApprovalVerificationFields | null | undefined): ApprovalVerification {
    const pin = fields?.pin ?? null;
    const passkey = fields?.passkey ?? null;
    if ((pin === null) === (passkey === null)) throw badInput('verification must hold exactly one of pin or passkey');
    if (pin !== null) return { method: 'pin', pin: requirePin(pin) };
    if (passkey === null || typeof passkey !== 'object' || Array.isArray(passkey)) {
      throw badInput('verification.passkey must be a WebAuthn assertion object');
    }
    return { method: 'passkey', assertion: passkey };
  }

  /** The hash to store for a PIN (already validated), at the configured cost. */
  hashPin(pin: string): Promise<string> {
    return hashPin(pin, this.config.pinHashCost);
  }

  /**
   * Sets (or replaces) a wallet's PIN, lifting any lock and clearing the count; a random 6-digit
   * PIN when none is given. Returns the PIN, to be shown once. NOT_FOUND for an unknown wallet.
   */
  async setPin(db: Queryable, walletId: string, pin?: string | null): Promise<string> {
    const chosen = pin === undefined || pin === null ? generatePin() : requirePin(pin);
    const [wallet] = await db.query('select id from wallets where id = $1', [walletId]);
    if (!wallet) throw notFound('Wallet not found');
    const pinHash = await this.hashPin(chosen);
    await db.query(SET_PIN_SQL, [walletId, pinHash]);
    return chosen;
  }

  /**
   * Verifies an approval (or a PIN change) for `userId`'s wallet `walletId`, counted and
   * lockable: returns the method on success; else VERIFICATION_FAILED (wrong PIN, an assertion
   * that does not verify, no PIN set) or VERIFICATION_LOCKED (too many failures in a row, with
   * Retry-After). A failure is recorded before the answer, whatever happens next. `subject` is
   * what a passkey assertion must have been made for (null: PIN only).
   */
  async verify(
    em: EntityManager,
    owner: { userId: string; walletId: string },
    subject: ApprovalSubject | null,
    verification: ApprovalVerification,
  ): Promise<VerificationMethod> {
    const { method } = verification;
    // The verdict commits with the count it wrote; the errors are thrown after the commit.
    const verdict = await em.transactional(async (tem): Promise<Verdict> => {
      const [row] = await tem.execute<Array<{ pin_hash: string; locked: boolean; lockSeconds: number | null }>>(CLAIM_SQL, [owner.walletId]);
      if (!row) return { kind: 'none' };
      if (row.locked) return { kind: 'locked', seconds: Math.max(1, row.lockSeconds ?? 1) };
      const ok =
        verification.method === 'pin'
          ? await verifyPin(verification.pin, row.pin_hash)
          : subject !== null && (await this.passkeys.verifyApproval(tem, owner.userId, subject, verification.assertion));
      if (ok) {
        await tem.execute(SUCCESS_SQL, [owner.walletId]);
        return { kind: 'ok' };
      }
      const max = this.config.pinMaxAttempts;
      const [after] = await tem.execute<Array<{ failures: number }>>(FAILURE_SQL, [max, this.config.pinLockMinutes, owner.walletId, owner.walletId]);
      return { kind: 'failed', left: Math.max(0, max - (after?.failures ?? max)) };
    });
    switch (verdict.kind) {
      case 'ok':
        this.observe(method, 'ok');
        return method;
      case 'none':
        this.observe(method, 'failed');
        throw new AppError('VERIFICATION_FAILED', NO_PIN_MESSAGE);
      case 'locked':
        this.observe(method, 'locked');
        throw new AppError('VERIFICATION_LOCKED', 'Approvals are locked after too many failed verifications; try again later', {
          'Retry-After': String(verdict.seconds),
        });
      case 'failed': {
        this.observe(method, 'failed');
        const what = method === 'pin' ? 'Wrong PIN' : 'The passkey did not verify';
        throw new AppError(
          'VERIFICATION_FAILED',
          verdict.left > 0
            ? `${what}; ${verdict.left} attempt${verdict.left === 1 ? '' : 's'} left before approvals are locked`
            : `${what}; approvals are now locked for ${this.config.pinLockMinutes} minutes`,
        );
      }
    }
  }

  /** An operator lifts a wallet's lock and clears its count. NOT_FOUND when the wallet has no PIN. */
  async unlock(db: Queryable, walletId: string): Promise<boolean> {
    const rows = await db.query(
      'update wallet_pins set failures = 0, locked_until = null, updated_at = now() where wallet_id = $1 returning wallet_id',
      [walletId],
    );
    if (rows.length === 0) throw notFound('Wallet not found or it has no transaction PIN');
    return true;
  }

  /**
   * The wallet's owner changes the PIN: the current one is checked by the same counted, lockable
   * verification as an approval; the new one must be 4-6 digits (checked first: a malformed new
   * PIN costs no attempt).
   */
  async changePin(em: EntityManager, userId: string, currentPin: string, newPin: string): Promise<boolean> {
    const current = requirePin(currentPin, 'currentPin');
    const next = requirePin(newPin, 'newPin');
    const walletId = await this.confirmOwner(em, userId, current);
    await em.execute(SET_PIN_SQL.replaceAll(/\$\d/g, '?'), [walletId, await this.hashPin(next)]);
    return true;
  }

  /**
   * The one check before any change to how a wallet approves (a new PIN, a passkey added or
   * removed, SPEC §16): the owner's current PIN, verified like an approval's (counted toward the
   * lock; VERIFICATION_FAILED / VERIFICATION_LOCKED). `pin` must already be 4-6 digits. Returns
   * the wallet's id; NOT_FOUND when the user has no wallet.
   */
  async confirmOwner(em: EntityManager, userId: string, pin: string): Promise<string> {
    const [wallet] = await em.execute<Array<{ id: string }>>('select id from wallets where user_id = ?', [userId]);
    if (!wallet) throw notFound('Wallet not found');
    await this.verify(em, { userId, walletId: wallet.id }, null, { method: 'pin', pin });
    return wallet.id;
  }
}
