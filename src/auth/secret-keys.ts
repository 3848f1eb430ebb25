import type { EntityManager } from '@mikro-orm/postgresql';
import { createSecretKey, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify, decodeProtectedHeader } from 'jose';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError, notFound } from '../errors.js';
import { SecretKey } from './secret-key.entity.js';
import { sha256Hex } from './hash.js';
import { CredentialCache } from './credential-cache.js';
import { isUuid } from '../uuid.js';
import type { Queryable } from '../db/sql.js';

/** Result of issuing a key: the full key is shown here once and never stored. */
export interface IssuedKey {
  keyId: string;
  secretKey: string;
}

const environmentOf = (config: Config): 'test' | 'live' => (config.appEnv === 'production' ? 'live' : 'test');

/** Issues a secret key for a developer: prefix + HS256 JWT; stores only its id and SHA-256. */
export async function issueSecretKey(db: Queryable, config: Config, developerId: string): Promise<IssuedKey> {
  if (!isUuid(developerId)) throw notFound('Developer not found');
  const [developer] = await db.query('select 1 from developers where id = $1', [developerId]);
  if (!developer) throw notFound('Developer not found');
  const keyId = randomUUID();
  const env = environmentOf(config);
  const jwt = await new SignJWT({ dev: developerId, env })
    .setProtectedHeader({ alg: 'HS256', kid: keyId, typ: 'JWT' })
    .setIssuedAt()
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(config.keySigningSecret));
  const secretKey = `${config.keyPrefix}${jwt}`;
  await db.query(
    'insert into secret_keys (id, developer_id, key_hash, environment, created_at, revoked_at) values ($1, $2, $3, $4, now(), null)',
    [keyId, developerId, sha256Hex(secretKey), env],
  );
  return { keyId, secretKey };
}

/** Revokes a key (the first revocation time stays); every instance stops accepting it within the key cache TTL (≤ 5 s). */
export async function revokeSecretKey(db: Queryable, keyId: string): Promise<{ keyId: string; revokedAt: Date }> {
  if (!isUuid(keyId)) throw notFound('Secret key not found');
  const [row] = await db.query<{ revoked_at: Date }>(
    `update secret_keys set revoked_at = coalesce(revoked_at, date_trunc('milliseconds', now())) where id = $1 returning revoked_at`,
    [keyId],
  );
  if (!row) throw notFound('Secret key not found');
  return { keyId, revokedAt: new Date(row.revoked_at) };
}

/** The verdict on a presented key: the developer behind it, or why it was refused. */
type KeyVerdict = { developerId: string; keyId: string; revoked: boolean } | { reason: KeyRejection };

/** Why a key was refused; logged, never told to the caller. */
export type KeyRejection =
  | 'wrong_prefix'
  | 'malformed'
  | 'bad_signature'
  | 'unknown_key'
  | 'hash_mismatch'
  | 'revoked'
  | 'wrong_environment';

/**
 * Verifies secret keys. The verdict on a key (signature, environment, the stored SHA-256, the
 * developer, revoked or not) is remembered by the SHA-256 of the full key for `keyCacheTtlMs`
 * (≤ 4 s, a CredentialCache): a repeat costs one hash and a look-up — no JWT verification, no
 * database round trip — and a revocation is seen by every instance within that time (the row is
 * read again after it). Only a byte-for-byte identical key hits the cache, so a forged or altered
 * key always takes the full path. The HMAC key is imported once.
 */
export class SecretKeyVerifier {
  private readonly verdicts: CredentialCache<KeyVerdict>;
  private readonly secret: KeyObject;

  constructor(
    private readonly config: Config,
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
  ) {
    this.secret = createSecretKey(Buffer.from(config.keySigningSecret, 'utf8'));
    this.verdicts = new CredentialCache<KeyVerdict>({
      ttlMs: config.keyCacheTtlMs,
      load: (secretKey, hash) => this.check(secretKey, hash),
      keep: (verdict) => !('reason' in verdict),
    });
  }

  /** Returns the developer behind a key, or throws 401 `Invalid secret key`. */
  async verify(secretKey: string, log: Logger = this.log): Promise<{ developerId: string; keyId: string }> {
    const verdict = await this.verdicts.verdict(secretKey);
    if ('reason' in verdict || verdict.revoked) {
      log.info({ reason: 'reason' in verdict ? verdict.reason : 'revoked' }, 'secret key rejected');
      throw new AppError('UNAUTHENTICATED', 'Invalid secret key');
    }
    return { developerId: verdict.developerId, keyId: verdict.keyId };
  }

  /** Forgets a cached key (after a revocation on this instance). */
  forget(keyId: string): void {
    this.verdicts.forget((verdict) => 'keyId' in verdict && verdict.keyId === keyId);
  }

  private async check(secretKey: string, hash: string): Promise<KeyVerdict> {
    if (!secretKey.startsWith(this.config.keyPrefix)) {
      return { reason: /^sk_(test|live)_/.test(secretKey) ? 'wrong_environment' : 'wrong_prefix' };
    }
    const jwt = secretKey.slice(this.config.keyPrefix.length);
    let keyId: string;
    let developerId: string;
    try {
      const header = decodeProtectedHeader(jwt);
      if (header.alg !== 'HS256' || !isUuid(header.kid)) return { reason: 'malformed' };
      const { payload } = await jwtVerify(jwt, this.secret, { algorithms: ['HS256'] });
      if (typeof payload.dev !== 'string') return { reason: 'malformed' };
      if (payload.env !== (this.config.appEnv === 'production' ? 'live' : 'test')) return { reason: 'wrong_environment' };
      keyId = header.kid;
      developerId = payload.dev;
    } catch (err) {
      const code = (err as { code?: string }).code;
      return { reason: code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' ? 'bad_signature' : 'malformed' };
    }
    const row = await this.forkEm().findOne(SecretKey, { id: keyId }, { disableIdentityMap: true });
    if (!row) return { reason: 'unknown_key' };
    if (!timingSafeEqual(Buffer.from(hash, 'hex'), Buffer.from(row.keyHash, 'hex')) || row.developerId !== developerId) {
      return { reason: 'hash_mismatch' };
    }
    return { developerId, keyId, revoked: row.revokedAt !== null };
  }
}
