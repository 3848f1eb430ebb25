import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { requireUuid } from '../uuid.js';
import { refusal, standingOf } from '../payment-requests/payment-request.policy.js';
import { approvalChallengeBytes, challengeCommitsTo } from './approval-challenge.js';
import type { ApprovalSubject, PasskeyAssertionVerifier } from './verification.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import { appendWalletEvent } from '../events/append.js';

/** How long a registration or approval challenge can be answered. */
export const CHALLENGE_TTL_SECONDS = 300;
/** Passkeys one user may hold (bounds `allowCredentials`). */
export const MAX_PASSKEYS_PER_USER = 10;
const NAME_MAX = 64;
/** Live (unused, unexpired) challenges one user may hold at once; asking for more drops the oldest. */
const MAX_LIVE_CHALLENGES = 20;
/** EdDSA, ES256, RS256: what platform authenticators and security keys make today. */
const SUPPORTED_ALGORITHMS = [-8, -7, -257];
/** The relying party's name the authenticator shows. */
const RP_NAME = 'Wallet';

/** A user's passkey as the wallet app lists it (never the key itself). */
export interface PasskeyRecord {
  id: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface PasskeyRow {
  id: string;
  name: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
}

/** A row as the wallet app sees it (raw SQL hands timestamps over as text). */
const record = (r: PasskeyRow): PasskeyRecord => ({
  id: r.id,
  name: r.name,
  createdAt: new Date(r.created_at),
  lastUsedAt: r.last_used_at === null ? null : new Date(r.last_used_at),
});

/**
 * Tells the user's devices that a passkey was added or removed (the app's `passkeyChanged`
 * subscription, through the outbox: every instance's subscribers), in the change's transaction.
 */
async function notify(tx: Tx, userId: string, change: 'added' | 'removed', passkey: PasskeyRecord): Promise<void> {
  await appendWalletEvent(tx, {
    type: change === 'added' ? 'passkey.added' : 'passkey.removed',
    subjectId: passkey.id,
    userId,
    data: {
      passkey: {
        id: passkey.id,
        name: passkey.name,
        createdAt: passkey.createdAt.toISOString(),
        lastUsedAt: passkey.lastUsedAt?.toISOString() ?? null,
      },
    },
  });
}

interface StoredCredential {
  id: string;
  credential_id: string;
  public_key: Buffer;
  counter: string;
  transports: string[];
}

/** The base64url `challenge` inside a response's clientDataJSON, or undefined. */
function challengeOf(response: unknown): string | undefined {
  const clientDataJSON = (response as { response?: { clientDataJSON?: unknown } } | null)?.response?.clientDataJSON;
  if (typeof clientDataJSON !== 'string' || !/^[A-Za-z0-9_-]+={0,2}$/.test(clientDataJSON) || clientDataJSON.length > 4096) return undefined;
  try {
    const challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    return typeof challenge === 'string' && challenge.length <= 512 ? challenge : undefined;
  } catch {
    return undefined;
  }
}

/** The credential id a response names (base64url), or undefined. */
function credentialIdOf(response: Record<string, unknown>): string | undefined {
  const id = response.id;
  return typeof id === 'string' && /^[A-Za-z0-9_-]{16,1364}$/.test(id) && response.rawId === id && response.type === 'public-key' ? id : undefined;
}

/** Names a passkey: trimmed, 1 to 64 characters, no control characters; absent or blank: "Passkey". */
function passkeyName(name: string | null | undefined): string {
  const trimmed = (name ?? '').trim();
  if (trimmed === '') return 'Passkey';
  if ([...trimmed].length > NAME_MAX) throw badInput(`name must be at most ${NAME_MAX} characters`);
  // eslint-disable-next-line no-control-regex -- exactly what is refused here
  if (/[\u0000-\u001F\u007F]/.test(trimmed)) throw badInput('name must not contain control characters');
  return trimmed;
}

const REGISTRATION_FAILED = 'The passkey could not be verified; ask for new registration options and try again';

/**
 * Passkeys (WebAuthn, with @simplewebauthn/server): registration, listing and removal, and the
 * strong path of an approval. An approval challenge commits to the payment request's id, amount,
 * currency and merchant name (src/consent/approval-challenge.ts); every challenge is single use
 * and short-lived, consumed by a conditional update, so a replay or a parallel second use fails.
 * Verification recomputes the commitment from the request as it is now, checks the credential is
 * the caller's own, checks the signature with user verification required, and stores a sign
 * counter that must go up (a counter that does not, once non-zero, means a cloned authenticator).
 */
export class PasskeyService implements PasskeyAssertionVerifier {
  constructor(private readonly config: Config) {}

  /** The user's credentials (for excludeCredentials / allowCredentials). */
  private credentialsOf(em: EntityManager, userId: string): Promise<Array<{ credential_id: string; transports: string[] }>> {
    return em.execute('select credential_id, transports from passkeys where user_id = ? order by created_at', [userId]);
  }

  /**
   * Stores a fresh single-use challenge, dropping this user's spent and lapsed ones and all but
   * the newest few live ones (a user asking again and again keeps a bounded number of rows).
   */
  private async storeChallenge(em: EntityManager, challenge: string, userId: string, paymentRequestId: string | null): Promise<void> {
    await em.execute(
      `delete from webauthn_challenges c
        where c.user_id = ? and (c.used_at is not null or c.expires_at <= now()
          or c.challenge in (select challenge from webauthn_challenges where user_id = ? order by created_at desc, challenge offset ?))`,
      [userId, userId, MAX_LIVE_CHALLENGES - 1],
    );
    await em.execute(
      `insert into webauthn_challenges (challenge, user_id, purpose, payment_request_id, expires_at)
       values (?, ?, ?, ?, now() + make_interval(secs => ?))`,
      [challenge, userId, paymentRequestId ? 'approval' : 'registration', paymentRequestId, CHALLENGE_TTL_SECONDS],
    );
  }

  /**
   * Takes a challenge for good: true once, for an unused, unexpired challenge of this user and
   * purpose (and request); any later or concurrent call for the same challenge gets false.
   */
  private async consumeChallenge(em: EntityManager, challenge: string, userId: string, paymentRequestId: string | null): Promise<boolean> {
    const rows = await em.execute<Array<{ challenge: string }>>(
      `update webauthn_challenges set used_at = now()
        where challenge = ? and user_id = ? and purpose = ? and payment_request_id is not distinct from ?
          and used_at is null and expires_at > now()
        returning challenge`,
      [challenge, userId, paymentRequestId ? 'approval' : 'registration', paymentRequestId],
    );
    return rows.length === 1;
  }

  /** Options for `navigator.credentials.create` (a new single-use challenge). */
  async registrationOptions(em: EntityManager, userId: string): Promise<Record<string, unknown>> {
    const [user] = await em.execute<Array<{ username: string }>>('select username from users where id = ?', [userId]);
    if (!user) throw notFound('User not found');
    const existing = await this.credentialsOf(em, userId);
    if (existing.length >= MAX_PASSKEYS_PER_USER) {
      throw new AppError('CONFLICT', `At most ${MAX_PASSKEYS_PER_USER} passkeys per user; remove one first`);
    }
    const options = await generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: this.config.webauthnRpId,
      userName: user.username,
      userID: new Uint8Array(Buffer.from(userId.replaceAll('-', ''), 'hex')),
      attestationType: 'none',
      excludeCredentials: existing.map((c) => ({ id: c.credential_id, transports: c.transports })),
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
      supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
      timeout: CHALLENGE_TTL_SECONDS * 1000,
    });
    await this.storeChallenge(em, options.challenge, userId, null);
    return options as unknown as Record<string, unknown>;
  }

  /**
   * Registers the credential a `navigator.credentials.create` answered with (attestation
   * `none`): its challenge must be this user's unused registration challenge, its origin and
   * relying party ours, and user verification done. BAD_USER_INPUT otherwise, with no detail.
   */
  async register(work: UnitOfWork, userId: string, response: Record<string, unknown>, name?: string | null): Promise<PasskeyRecord> {
    const label = passkeyName(name);
    const challenge = challengeOf(response);
    if (!challenge || !credentialIdOf(response)) throw badInput(REGISTRATION_FAILED);
    if (!(await this.consumeChallenge(work.em, challenge, userId, null))) throw badInput(REGISTRATION_FAILED);
    let verified;
    try {
      verified = await verifyRegistrationResponse({
        response: response as unknown as RegistrationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: this.config.webauthnOrigin,
        expectedRPID: this.config.webauthnRpId,
        requireUserVerification: true,
        supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
      });
    } catch {
      throw badInput(REGISTRATION_FAILED);
    }
    if (!verified.verified) throw badInput(REGISTRATION_FAILED);
    const { credential } = verified.registrationInfo;
    const transports = Array.isArray(credential.transports) ? credential.transports.filter((t) => typeof t === 'string').slice(0, 8) : [];
    return work.transaction(async (tx) => {
      const [row] = await tx.query<PasskeyRow>(
        `insert into passkeys (id, user_id, credential_id, public_key, counter, transports, name)
         select $1, $2, $3, $4, $5, $6::jsonb, $7
          where (select count(*) from passkeys where user_id = $2) < $8
         on conflict (credential_id) do nothing
         returning id, name, created_at, last_used_at`,
        [randomUUID(), userId, credential.id, Buffer.from(credential.publicKey), credential.counter, JSON.stringify(transports), label, MAX_PASSKEYS_PER_USER],
      );
      if (!row) throw new AppError('CONFLICT', 'This passkey is already registered, or you have the most passkeys allowed');
      const added = record(row);
      await notify(tx, userId, 'added', added);
      return added;
    });
  }

  /** The user's passkeys, oldest first. */
  async list(em: EntityManager, userId: string): Promise<PasskeyRecord[]> {
    const rows = await em.execute<PasskeyRow[]>(
      'select id, name, created_at, last_used_at from passkeys where user_id = ? order by created_at, id',
      [userId],
    );
    return rows.map(record);
  }

  /** Removes one of the user's passkeys (and tells the user's devices); NOT_FOUND for anyone else's. */
  async remove(work: UnitOfWork, userId: string, id: string): Promise<boolean> {
    requireUuid(id);
    return work.transaction(async (tx) => {
      const [row] = await tx.query<PasskeyRow>('delete from passkeys where id = $1 and user_id = $2 returning id, name, created_at, last_used_at', [id, userId]);
      if (!row) throw notFound('Passkey not found');
      await notify(tx, userId, 'removed', record(row));
      return true;
    });
  }

  /**
   * Request options for `navigator.credentials.get` that approve one PENDING request of the
   * caller, or an open one (a payment link, which the approval binds to the caller's wallet):
   * `allowCredentials` lists the caller's passkeys (empty when none), user verification
   * is required, and the single-use challenge commits to the request's id, amount, currency and
   * merchant name. Only for a request the caller may approve by the one policy
   * (src/payment-requests/payment-request.policy.ts), else the same refusal as the approval's.
   */
  async approvalChallenge(work: UnitOfWork, userId: string, id: string): Promise<Record<string, unknown>> {
    requireUuid(id);
    // Who may approve it: the one policy (a blocked merchant, a link in another currency, …), as the approval asks it.
    const standing = await standingOf(work, { userId }, id);
    const refused = refusal(standing, 'approve');
    if (refused) throw refused;
    const em = work.em;
    const subject: ApprovalSubject = { paymentRequestId: id, amount: standing!.amount, currency: standing!.currency, merchantName: standing!.merchantName };
    const credentials = await this.credentialsOf(em, userId);
    const options = await generateAuthenticationOptions({
      rpID: this.config.webauthnRpId,
      allowCredentials: credentials.map((c) => ({ id: c.credential_id, transports: c.transports })),
      userVerification: 'required',
      challenge: new Uint8Array(approvalChallengeBytes(subject)),
      timeout: CHALLENGE_TTL_SECONDS * 1000,
    });
    await this.storeChallenge(em, options.challenge, userId, id);
    return options as unknown as Record<string, unknown>;
  }

  /**
   * The consent seam's passkey check: true only for an assertion by one of `userId`'s passkeys
   * over an unused, unexpired approval challenge of this user for this request that commits to
   * the request as it is now (`subject`), with a valid signature, user verification and a sign
   * counter that went up. The challenge is consumed; any failure is false, never an error.
   */
  async verifyApproval(em: EntityManager, userId: string, subject: ApprovalSubject, assertion: Record<string, unknown>): Promise<boolean> {
    try {
      const challenge = challengeOf(assertion);
      const credentialId = credentialIdOf(assertion);
      if (!challenge || !credentialId || !challengeCommitsTo(challenge, subject)) return false;
      const [stored] = await em.execute<StoredCredential[]>(
        'select id, credential_id, public_key, counter::text as counter, transports from passkeys where credential_id = ? and user_id = ?',
        [credentialId, userId],
      );
      if (!stored) return false;
      if (!(await this.consumeChallenge(em, challenge, userId, subject.paymentRequestId))) return false;
      const result = await verifyAuthenticationResponse({
        response: assertion as unknown as AuthenticationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: this.config.webauthnOrigin,
        expectedRPID: this.config.webauthnRpId,
        credential: { id: stored.credential_id, publicKey: new Uint8Array(stored.public_key), counter: Number(stored.counter), transports: stored.transports },
        requireUserVerification: true,
      });
      if (!result.verified) return false;
      const counter = result.authenticationInfo.newCounter;
      // The counter must go up (0 stays 0 for authenticators that keep none); a concurrent use
      // of the same credential that stored a higher one first makes this one fail.
      const updated = await em.execute(
        `update passkeys set counter = ?, last_used_at = now()
          where id = ? and (counter < ? or (counter = 0 and ? = 0))
          returning id`,
        [counter, stored.id, counter, counter],
      );
      return updated.length === 1;
    } catch {
      return false;
    }
  }
}
