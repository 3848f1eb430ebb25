import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SignJWT, calculateJwkThumbprint, exportJWK } from 'jose';
import type { Config } from '../config.js';
import { pemBlocks } from '../config.js';

import type { VerificationMethod } from './verification.js';

/** The JWS `typ` of a consent receipt. */
export const CONSENT_RECEIPT_TYP = 'consent+jwt';

/** What a consent receipt says, and nothing else: no user, wallet or developer identifier. */
export interface ConsentClaims {
  paymentRequestId: string;
  transactionId: string;
  /** Exactly as the database keeps it: a decimal string with two decimals ("12.50"). */
  amount: string;
  currency: string;
  merchantName: string;
  verification: VerificationMethod;
  /** Seconds since the epoch: when the approval committed its state (the database's clock). */
  iat: number;
}

/** One published key (RFC 8037 OKP, with its RFC 7638 thumbprint as `kid`). */
export interface ConsentJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

/** The body of GET /.well-known/jwks.json. */
export interface ConsentJwks {
  keys: ConsentJwk[];
}

/** The development key's file under DATA_DIR (0600). */
export const DEV_KEY_FILE = 'consent-signing-key.pem';

/**
 * The signing key's PKCS#8 PEM: CONSENT_SIGNING_KEY when set (production always sets it, see
 * config.ts); else, in development, the key kept under DATA_DIR, made on first use. The file is
 * written whole under a temporary name and linked into place, so of processes starting together
 * (cluster workers) exactly one creates it and all read the same key. An in-memory DATA_DIR gets a
 * key for this process only.
 */
export function resolveSigningKeyPem(config: Pick<Config, 'consentSigningKey' | 'appEnv' | 'dataDir'>): string {
  if (config.consentSigningKey) return config.consentSigningKey;
  if (config.appEnv === 'production') throw new Error('CONSENT_SIGNING_KEY is required in production');
  const fresh = (): string => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  if (config.dataDir.startsWith('memory://')) return fresh();
  const dir = path.resolve(config.dataDir);
  const file = path.join(dir, DEV_KEY_FILE);
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.${DEV_KEY_FILE}.${randomUUID()}`);
  writeFileSync(temporary, fresh(), { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temporary, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(temporary);
  }
  return readFileSync(file, 'utf8');
}

/** A public key as published: OKP JWK with its thumbprint as kid. */
async function publish(publicKey: KeyObject): Promise<ConsentJwk> {
  const jwk = await exportJWK(publicKey);
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || !jwk.x) throw new Error('consent keys must be Ed25519');
  const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: jwk.x }, 'sha256');
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid, alg: 'EdDSA', use: 'sig' };
}

/** The signing key with what is published for it. */
interface Loaded {
  privateKey: KeyObject;
  kid: string;
  jwks: ConsentJwks;
}

/**
 * Signs consent receipts with the configured Ed25519 key and publishes the verification keys:
 * the current one first, then CONSENT_PREVIOUS_PUBLIC_KEYS (receipts signed before a rotation
 * keep verifying while those stay published). Every instance with the same configuration signs
 * with the same key and publishes the same set. The private key never leaves this object.
 */
export class ConsentSigner {
  private loaded: Promise<Loaded> | undefined;

  constructor(
    private readonly privatePem: string,
    private readonly previousPublicPem: string | undefined,
  ) {}

  /** From the configuration (see resolveSigningKeyPem for development). */
  static fromConfig(config: Pick<Config, 'consentSigningKey' | 'consentPreviousPublicKeys' | 'appEnv' | 'dataDir'>): ConsentSigner {
    return new ConsentSigner(resolveSigningKeyPem(config), config.consentPreviousPublicKeys);
  }

  private load(): Promise<Loaded> {
    this.loaded ??= (async () => {
      const privateKey = createPrivateKey(this.privatePem);
      if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('CONSENT_SIGNING_KEY must be an Ed25519 key');
      const current = await publish(createPublicKey(privateKey));
      const keys = [current];
      for (const block of pemBlocks(this.previousPublicPem ?? '', 'PUBLIC KEY')) {
        const previous = await publish(createPublicKey(block));
        if (!keys.some((k) => k.kid === previous.kid)) keys.push(previous);
      }
      return { privateKey, kid: current.kid, jwks: { keys } };
    })();
    return this.loaded;
  }

  /** The kid receipts are signed under now. */
  async kid(): Promise<string> {
    return (await this.load()).kid;
  }

  /** GET /.well-known/jwks.json: the current key and the previous ones still published. */
  async jwks(): Promise<ConsentJwks> {
    return (await this.load()).jwks;
  }

  /** A compact JWS over exactly these claims: header `{ alg: 'EdDSA', kid, typ: 'consent+jwt' }`. */
  async sign(claims: ConsentClaims): Promise<string> {
    if (!/^\d+\.\d{2}$/.test(claims.amount)) throw new Error('a receipt amount is a decimal string with two decimals');
    const { privateKey, kid } = await this.load();
    const { iat, ...rest } = claims;
    const payload = {
      paymentRequestId: rest.paymentRequestId,
      transactionId: rest.transactionId,
      amount: rest.amount,
      currency: rest.currency,
      merchantName: rest.merchantName,
      verification: rest.verification,
    };
    return new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', kid, typ: CONSENT_RECEIPT_TYP }).setIssuedAt(iat).sign(privateKey);
  }
}
