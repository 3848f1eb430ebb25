import type { EntityManager } from '@mikro-orm/postgresql';
import type { Queryable, SimpleStatement } from '../db/sql.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { PinHasher, generatePin, requireNewPin, requirePin } from './pin.js';
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

/** The answer while a wallet is locked until an operator unlocks it (PIN_MAX_LOCKS). */
export const UNLOCK_MESSAGE = 'Approvals are locked after too many failed verifications; ask the wallet operator to unlock them';

/** VERIFICATION_LOCKED for a lock of `seconds` more (Retry-After), or null: until an operator unlocks. */
function lockedError(seconds: number | null): AppError {
  return seconds === null
    ? new AppError('VERIFICATION_LOCKED', UNLOCK_MESSAGE)
    : new AppError('VERIFICATION_LOCKED', 'Approvals are locked after too many failed verifications; try again later', {
        'Retry-After': String(seconds),
      });
}

/** Stores a PIN's hash, replacing any earlier one and lifting any lock (one statement). */
const SET_PIN_SQL = `insert into wallet_pins (wallet_id, pin_hash, failures, locks, locked_until, updated_at)
  values ($1, $2, 0, 0, null, now())
  on conflict (wallet_id) do update set pin_hash = excluded.pin_hash, failures = 0, locks = 0, locked_until = null, updated_at = now()`;

/** The wallet's credential as it stands: read on its own (no transaction, no row lock) before a comparison. */
const READ_SQL = `select pin_hash, failures, locks, (locked_until is not null and locked_until > now()) as locked,
       locked_until = 'infinity' as "forGood",
       case when locked_until = 'infinity' then null else ceil(extract(epoch from (locked_until - now())))::int end as "lockSeconds"
  from wallet_pins where wallet_id = ?`;

/** Not locked now (a lapsed lock is not a lock). */
const UNLOCKED = `not (locked_until is not null and locked_until > now())`;

/** Whether the wallet is still unlocked when a success with nothing to clear is taken (`param`: the wallet id's placeholder). */
const stillUnlockedSql = (param: string): string => `select wallet_id from wallet_pins where wallet_id = ${param} and ${UNLOCKED}`;

/** How `verify` takes a success. */
export interface VerifyOptions {
  /**
   * The caller runs `stillUnlocked(walletId)` first in the transaction that acts on the success,
   * and answers `lockedError` when it finds no row (the approval: the check rides on its BEGIN).
   * Otherwise `verify` checks on its own.
   */
  readonly unlockedCheckedByCaller?: boolean;
}

/**
 * A correct verification, recorded only if the wallet is not locked by then: the count and the
 * locks start again. A PIN stored in an older form is rewritten in the current one (the first
 * value; null keeps it), only if the hash is still the one compared (a PIN changed meanwhile stays).
 */
const SUCCESS_SQL = `update wallet_pins set failures = 0, locks = 0, locked_until = null,
       pin_hash = case when ?::text is not null and pin_hash = ? then ? else pin_hash end, updated_at = now()
  where wallet_id = ? and ${UNLOCKED}
  returning wallet_id`;

/**
 * A failed verification, recorded only if the wallet is not locked by then: one more failure in a
 * row (the first of a fresh count after a lapsed lock); the PIN_MAX_ATTEMPTS-th locks for
 * PIN_LOCK_MINUTES, and the PIN_MAX_LOCKS-th lock with no success since is for good ('infinity':
 * until an operator unlocks). One statement on the row's latest version: concurrent failures on
 * any instance wait for each other's row lock for its length only, and PostgreSQL re-checks the
 * WHERE on the version it then sees, so exactly PIN_MAX_ATTEMPTS are counted and the rest find it
 * locked (no row: the caller answers VERIFICATION_LOCKED). Every SET expression reads the row as
 * it was before this statement.
 */
const FRESH = `(case when locked_until is not null then 1 else failures + 1 end)`;
const FAILURE_SQL = `update wallet_pins set
       failures = ${FRESH},
       locks = locks + (case when ${FRESH} >= ? then 1 else 0 end),
       locked_until = case when ${FRESH} < ? then null
                           when locks + 1 >= ? then 'infinity'::timestamptz
                           else now() + make_interval(mins => ?) end,
       updated_at = now()
  where wallet_id = ? and ${UNLOCKED}
  returning failures, locked_until = 'infinity' as "forGood"`;

/** What one verification found. `seconds` null: locked until an operator unlocks. */
type Verdict =
  | { kind: 'ok' }
  | { kind: 'none' }
  | { kind: 'locked'; seconds: number | null }
  | { kind: 'failed'; left: number; forGood: boolean };

interface PinRow {
  pin_hash: string;
  failures: number;
  locks: number;
  locked: boolean;
  forGood: boolean | null;
  lockSeconds: number | null;
}

/**
 * Consent to a payment: the wallet's transaction PIN (its keyed hash, src/consent/pin.ts), the
 * verification every approval needs (a PIN or a passkey assertion, src/consent/verification.ts)
 * and the lock that bounds guessing.
 *
 * Guessing is counted in the database, so it holds across every process and instance, and no
 * connection or row lock is held while a PIN is compared: a verification reads the wallet's
 * `wallet_pins` row (one statement), compares outside any transaction, then records the outcome
 * with one conditional UPDATE that applies only if the wallet is not locked by then (see
 * FAILURE_SQL; a success with nothing to clear records nothing). 40 parallel wrong PINs get exactly PIN_MAX_ATTEMPTS answers VERIFICATION_FAILED
 * and the rest VERIFICATION_LOCKED, whatever the instances; parallel correct approvals (a payer's
 * two taps) all verify. One user's flood of verifications therefore costs the pool one short
 * statement at a time per call, like any read (and USER_RATE_LIMIT_PER_SECOND bounds the calls).
 * The budget ends: PIN_MAX_LOCKS locks with no success between them lock until an operator's
 * `unlockTransactionPin`.
 */
export class ConsentService {
  private readonly pins: PinHasher;

  constructor(
    private readonly config: Config,
    private readonly passkeys: PasskeyAssertionVerifier = NO_PASSKEYS,
    /** Told each verification's method and outcome (metrics: approval_verifications_total). */
    private readonly observe: (method: VerificationMethod, outcome: VerificationOutcome) => void = () => undefined,
  ) {
    this.pins = PinHasher.fromConfig(config);
  }

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

  /**
   * A PIN about to be set and the hash to store: `pin` if well-formed and not easy (SPEC §16;
   * BAD_USER_INPUT naming `field` otherwise), a random 6-digit one when none is given. Every path
   * that sets a PIN comes through here (the user's change, an operator's create and reset, the CLI).
   */
  newPin(pin: string | null | undefined, field = 'pin'): { pin: string; pinHash: string } {
    const chosen = pin === undefined || pin === null ? generatePin() : requireNewPin(pin, field);
    return { pin: chosen, pinHash: this.pins.hash(chosen) };
  }

  /**
   * Sets (or replaces) a wallet's PIN, lifting any lock and clearing the count; a random 6-digit
   * PIN when none is given. Returns the PIN, to be shown once. NOT_FOUND for an unknown wallet.
   */
  async setPin(db: Queryable, walletId: string, pin?: string | null): Promise<string> {
    const chosen = this.newPin(pin);
    const [wallet] = await db.query('select id from wallets where id = $1', [walletId]);
    if (!wallet) throw notFound('Wallet not found');
    await db.query(SET_PIN_SQL, [walletId, chosen.pinHash]);
    return chosen.pin;
  }

  /**
   * Verifies an approval (or a PIN change) for `userId`'s wallet `walletId`, counted and
   * lockable: returns the method on success; else VERIFICATION_FAILED (wrong PIN, an assertion
   * that does not verify, no PIN set) or VERIFICATION_LOCKED (too many failures in a row, with
   * Retry-After and `retryAfter`; none for a lock only an operator lifts). A failure is recorded
   * before the answer, whatever happens next. `subject` is what a passkey assertion must have been
   * made for (null: PIN only). `em` is used outside any transaction (one statement at a time).
   */
  async verify(
    em: EntityManager,
    owner: { userId: string; walletId: string },
    subject: ApprovalSubject | null,
    verification: ApprovalVerification,
    options: VerifyOptions = {},
  ): Promise<VerificationMethod> {
    const { method } = verification;
    const verdict = await this.decide(em, owner, subject, verification, options);
    switch (verdict.kind) {
      case 'ok':
        this.observe(method, 'ok');
        return method;
      case 'none':
        this.observe(method, 'failed');
        throw new AppError('VERIFICATION_FAILED', NO_PIN_MESSAGE);
      case 'locked':
        this.observe(method, 'locked');
        throw lockedError(verdict.seconds);
      case 'failed': {
        this.observe(method, 'failed');
        const what = method === 'pin' ? 'Wrong PIN' : 'The passkey did not verify';
        throw new AppError(
          'VERIFICATION_FAILED',
          verdict.left > 0
            ? `${what}; ${verdict.left} attempt${verdict.left === 1 ? '' : 's'} left before approvals are locked`
            : verdict.forGood
              ? `${what}; approvals are now locked until an operator unlocks them`
              : `${what}; approvals are now locked for ${this.config.pinLockMinutes} minutes`,
        );
      }
    }
  }

  /**
   * The check a caller that took `unlockedCheckedByCaller` runs first in its transaction: one row
   * while the wallet is still unlocked, none once other verifications locked it since the read.
   */
  stillUnlocked(walletId: string): SimpleStatement {
    return { text: stillUnlockedSql('$1'), values: [walletId] };
  }

  /** The answer when `stillUnlocked` found no row: VERIFICATION_LOCKED as the lock stands (read outside any transaction). */
  async lockedError(em: EntityManager, walletId: string, method: VerificationMethod): Promise<AppError> {
    this.observe(method, 'locked');
    const verdict = await this.lockedNow(em, walletId);
    return lockedError(verdict.kind === 'locked' ? verdict.seconds : null);
  }

  /** Read, compare outside any transaction, record conditionally (see the class). */
  private async decide(
    em: EntityManager,
    owner: { userId: string; walletId: string },
    subject: ApprovalSubject | null,
    verification: ApprovalVerification,
    options: VerifyOptions = {},
  ): Promise<Verdict> {
    const [row] = await em.execute<PinRow[]>(READ_SQL, [owner.walletId]);
    if (!row) return { kind: 'none' };
    if (row.locked) return { kind: 'locked', seconds: row.forGood ? null : Math.max(1, row.lockSeconds ?? 1) };
    let ok: boolean;
    let upgrade: string | null = null;
    if (verification.method === 'pin') {
      const check = await this.pins.verify(verification.pin, row.pin_hash);
      ok = check.ok;
      if (check.ok && check.upgrade) upgrade = this.pins.hash(verification.pin);
    } else {
      ok = subject !== null && (await this.passkeys.verifyApproval(em, owner.userId, subject, verification.assertion));
    }
    if (ok) {
      // A success counts only if the wallet is still unlocked when it is taken: guesses read in
      // parallel before a lock are compared, but one that is right cannot act once the wrong ones
      // have locked the wallet (else parallelism would buy guesses past PIN_MAX_ATTEMPTS). With
      // nothing to clear, that is one read (or the caller's, on its transaction's BEGIN); otherwise
      // the count and the locks start again in the same statement.
      const nothingToClear = !upgrade && row.failures === 0 && row.locks === 0;
      if (nothingToClear && options.unlockedCheckedByCaller) return { kind: 'ok' };
      const recorded = nothingToClear
        ? await em.execute(stillUnlockedSql('?'), [owner.walletId])
        : await em.execute(SUCCESS_SQL, [upgrade, row.pin_hash, upgrade, owner.walletId]);
      if (recorded.length === 1) return { kind: 'ok' };
      // Locked by other verifications since the read: this success does not count.
      return this.lockedNow(em, owner.walletId);
    }
    const { pinMaxAttempts: max, pinMaxLocks: maxLocks, pinLockMinutes: minutes } = this.config;
    const [after] = await em.execute<Array<{ failures: number; forGood: boolean }>>(FAILURE_SQL, [max, max, maxLocks, minutes, owner.walletId]);
    // No row: another verification locked the wallet since the read; this one is not counted.
    if (!after) return this.lockedNow(em, owner.walletId);
    return { kind: 'failed', left: Math.max(0, max - after.failures), forGood: after.forGood };
  }

  /** The lock found after a conditional record matched nothing; a lock that lapsed meanwhile answers as if just ended (1 s). */
  private async lockedNow(em: EntityManager, walletId: string): Promise<Verdict> {
    const [row] = await em.execute<PinRow[]>(READ_SQL, [walletId]);
    return { kind: 'locked', seconds: row?.forGood ? null : Math.max(1, row?.lockSeconds ?? 1) };
  }

  /** An operator lifts a wallet's lock and clears its count. NOT_FOUND when the wallet has no PIN. */
  async unlock(db: Queryable, walletId: string): Promise<boolean> {
    const rows = await db.query(
      'update wallet_pins set failures = 0, locks = 0, locked_until = null, updated_at = now() where wallet_id = $1 returning wallet_id',
      [walletId],
    );
    if (rows.length === 0) throw notFound('Wallet not found or it has no transaction PIN');
    return true;
  }

  /**
   * The wallet's owner changes the PIN: the current one is checked by the same counted, lockable
   * verification as an approval; the new one must be 4-6 digits and not easy (checked first: a
   * malformed or easy new PIN costs no attempt).
   */
  async changePin(em: EntityManager, userId: string, currentPin: string, newPin: string): Promise<boolean> {
    const current = requirePin(currentPin, 'currentPin');
    const next = this.newPin(requirePin(newPin, 'newPin'), 'newPin');
    const walletId = await this.confirmOwner(em, userId, current);
    await em.execute(SET_PIN_SQL.replaceAll(/\$\d/g, '?'), [walletId, next.pinHash]);
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
