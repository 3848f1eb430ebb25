import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
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

/**
 * The signing key's PKCS#8 PEM: CONSENT_SIGNING_KEY as the process start resolved it (set, or in
 * development the key kept under DATA_DIR: src/startup-keys.ts).
 */
export function resolveSigningKeyPem(config: Pick<Config, 'consentSigningKey'>): string {
  if (!config.consentSigningKey) throw new Error('CONSENT_SIGNING_KEY is not resolved: the process start resolves it (src/startup-keys.ts)');
  return config.consentSigningKey;
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

  /** From the configuration as the process start resolved it (src/startup-keys.ts). */
  static fromConfig(config: Pick<Config, 'consentSigningKey' | 'consentPreviousPublicKeys'>): ConsentSigner {
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
