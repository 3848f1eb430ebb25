import type { EntityManager } from '@mikro-orm/postgresql';
import { createSecretKey, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify, decodeProtectedHeader } from 'jose';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError, notFound } from '../errors.js';
import { Developer } from '../developers/developer.entity.js';
import { SecretKey } from './secret-key.entity.js';
import { sha256Hex } from './hash.js';
import { isUuid } from '../uuid.js';

/** Result of issuing a key: the full key is shown here once and never stored. */
export interface IssuedKey {
  keyId: string;
  secretKey: string;
}

const environmentOf = (config: Config): 'test' | 'live' => (config.appEnv === 'production' ? 'live' : 'test');

/** Issues a secret key for a developer: prefix + HS256 JWT; stores only its id and SHA-256. */
export async function issueSecretKey(em: EntityManager, config: Config, developerId: string): Promise<IssuedKey> {
  if (!isUuid(developerId)) throw notFound('Developer not found');
  const developer = await em.findOne(Developer, { id: developerId });
  if (!developer) throw notFound('Developer not found');
  const keyId = randomUUID();
  const env = environmentOf(config);
  const jwt = await new SignJWT({ dev: developerId, env })
    .setProtectedHeader({ alg: 'HS256', kid: keyId, typ: 'JWT' })
    .setIssuedAt()
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(config.keySigningSecret));
  const secretKey = `${config.keyPrefix}${jwt}`;
  const row = em.create(SecretKey, {
    id: keyId,
    developerId,
    keyHash: sha256Hex(secretKey),
    environment: env,
    createdAt: new Date(),
    revokedAt: null,
  });
  await em.persistAndFlush(row);
  return { keyId, secretKey };
}

/** Revokes a key; every instance stops accepting it within the key cache TTL (≤ 5 s). */
export async function revokeSecretKey(em: EntityManager, keyId: string): Promise<{ keyId: string; revokedAt: Date }> {
  if (!isUuid(keyId)) throw notFound('Secret key not found');
  const key = await em.findOne(SecretKey, { id: keyId });
  if (!key) throw notFound('Secret key not found');
  key.revokedAt ??= new Date();
  await em.flush();
  return { keyId, revokedAt: key.revokedAt };
}

/** A key as last read from the database. */
interface StoredKey {
  /** When the read began (epoch ms): the entry is as old as that. */
  readAt: number;
  developerId: string;
  keyHash: Buffer;
  revoked: boolean;
}

/** A presented key that passed every check, remembered by the SHA-256 of the full key. */
interface VerifiedKey {
  developerId: string;
  keyId: string;
  revoked: boolean;
  fetchedAt: number;
}

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
 * Verifies secret keys. A key that passed every check (signature, environment, the stored
 * SHA-256, the developer) is remembered by the SHA-256 of the full key for `keyCacheTtlMs`
 * (≤ 4 s): a repeat costs one hash and a map look-up — no JWT verification, no database round
 * trip — and a revocation is seen by every instance within that time (the row is read again
 * after it). Only a byte-for-byte identical key hits the cache, so a forged or altered key
 * always takes the full path. The HMAC key is imported once.
 */
export class SecretKeyVerifier {
  private readonly verified = new Map<string, VerifiedKey>();
  private readonly inflight = new Map<string, Promise<StoredKey | null>>();
  private readonly secret: KeyObject;
  private static readonly MAX_ENTRIES = 10_000;

  constructor(
    private readonly config: Config,
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
  ) {
    this.secret = createSecretKey(Buffer.from(config.keySigningSecret, 'utf8'));
  }

  /** Returns the developer behind a key, or throws 401 `Invalid secret key`. */
  async verify(secretKey: string, log: Logger = this.log): Promise<{ developerId: string; keyId: string }> {
    const hash = sha256Hex(secretKey);
    const hit = this.verified.get(hash);
    const result = hit && Date.now() - hit.fetchedAt < this.config.keyCacheTtlMs ? this.answer(hit) : await this.check(secretKey, hash);
    if ('reason' in result) {
      log.info({ reason: result.reason }, 'secret key rejected');
      throw new AppError('UNAUTHENTICATED', 'Invalid secret key');
    }
    return result;
  }

  /** Forgets a cached key (after a revocation on this instance). */
  forget(keyId: string): void {
    for (const [hash, entry] of this.verified) if (entry.keyId === keyId) this.verified.delete(hash);
  }

  private answer(entry: VerifiedKey): { developerId: string; keyId: string } | { reason: KeyRejection } {
    return entry.revoked ? { reason: 'revoked' } : { developerId: entry.developerId, keyId: entry.keyId };
  }

  private async check(secretKey: string, hash: string): Promise<{ developerId: string; keyId: string } | { reason: KeyRejection }> {
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
    const stored = await this.lookup(keyId);
    if (!stored) return { reason: 'unknown_key' };
    if (!timingSafeEqual(Buffer.from(hash, 'hex'), stored.keyHash) || stored.developerId !== developerId) {
      return { reason: 'hash_mismatch' };
    }
    const entry: VerifiedKey = { developerId, keyId, revoked: stored.revoked, fetchedAt: stored.readAt };
    if (this.verified.size >= SecretKeyVerifier.MAX_ENTRIES) {
      const oldest = this.verified.keys().next().value;
      if (oldest !== undefined) this.verified.delete(oldest);
    }
    this.verified.delete(hash);
    this.verified.set(hash, entry);
    return this.answer(entry);
  }

  /** The stored row of a key; concurrent misses of one key share one read. */
  private lookup(keyId: string): Promise<StoredKey | null> {
    let pending = this.inflight.get(keyId);
    if (!pending) {
      pending = this.fetch(keyId).finally(() => this.inflight.delete(keyId));
      this.inflight.set(keyId, pending);
    }
    return pending;
  }

  private async fetch(keyId: string): Promise<StoredKey | null> {
    const readAt = Date.now();
    const row = await this.forkEm().findOne(SecretKey, { id: keyId }, { disableIdentityMap: true });
    if (!row) return null;
    return { readAt, developerId: row.developerId, keyHash: Buffer.from(row.keyHash, 'hex'), revoked: row.revokedAt !== null };
  }
}
