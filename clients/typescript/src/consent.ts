import { createRemoteJWKSet, customFetch, jwtVerify, type JWTVerifyGetKey } from 'jose';

/** What a consent receipt proves the payer approved: exactly these claims, nothing that identifies the payer. */
export interface ConsentReceiptClaims {
  paymentRequestId: string;
  transactionId: string;
  /** The approved amount exactly, a decimal string with two decimals ("12.50"). */
  amount: string;
  currency: string;
  merchantName: string;
  /** How the payer confirmed the approval. */
  verification: 'pin' | 'passkey';
  /** When, in seconds since the epoch. */
  iat: number;
}

/** A consent receipt that does not verify: bad signature, unknown key, wrong header or claims. `cause` says more. */
export class ConsentReceiptError extends Error {
  override name = 'ConsentReceiptError';
}

/** Options of a receipt verifier. */
export interface ConsentVerifierOptions {
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Least time between two fetches of the key set, also on unknown `kid`s (default 30 s). */
  minRefetchMs?: number;
  /** How long a fetched key set is used before it is fetched again (default 5 minutes). */
  maxAgeMs?: number;
}

const CLAIMS = ['paymentRequestId', 'transactionId', 'amount', 'currency', 'merchantName', 'verification', 'iat'] as const;

/** The claims, checked to be exactly the receipt's. */
function claimsOf(payload: Record<string, unknown>): ConsentReceiptClaims {
  const keys = Object.keys(payload).sort();
  if (keys.join() !== [...CLAIMS].sort().join()) throw new ConsentReceiptError(`unexpected claims: ${keys.join(', ')}`);
  const text = (k: string) => typeof payload[k] === 'string' && (payload[k] as string).length > 0;
  if (!['paymentRequestId', 'transactionId', 'currency', 'merchantName'].every(text)) throw new ConsentReceiptError('a claim is not a string');
  if (typeof payload.amount !== 'string' || !/^\d+\.\d{2}$/.test(payload.amount)) throw new ConsentReceiptError('amount is not a decimal string');
  if (payload.verification !== 'pin' && payload.verification !== 'passkey') throw new ConsentReceiptError('verification is neither pin nor passkey');
  if (!Number.isInteger(payload.iat)) throw new ConsentReceiptError('iat is not a time');
  return payload as unknown as ConsentReceiptClaims;
}

/**
 * A verifier of consent receipts against the key set at `jwksUrl` (the gateway's
 * `/.well-known/jwks.json`): the set is fetched on first use and kept (`maxAgeMs`); a receipt
 * whose `kid` is not in it fetches it again, at most once per `minRefetchMs` (jose's remote key
 * set). Only EdDSA and `typ: consent+jwt` are accepted.
 */
export function consentReceiptVerifier(jwksUrl: string | URL, options: ConsentVerifierOptions = {}): (receipt: string) => Promise<ConsentReceiptClaims> {
  const fetchImpl = options.fetch;
  const keys: JWTVerifyGetKey = createRemoteJWKSet(new URL(jwksUrl), {
    cooldownDuration: options.minRefetchMs ?? 30_000,
    cacheMaxAge: options.maxAgeMs ?? 300_000,
    ...(fetchImpl ? { [customFetch]: (url: string, init: RequestInit) => fetchImpl(new Request(url, init)) } : {}),
  });
  return async (receipt: string): Promise<ConsentReceiptClaims> => {
    if (typeof receipt !== 'string' || receipt.length === 0) throw new ConsentReceiptError('a receipt is a compact JWS string');
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(receipt, keys, { algorithms: ['EdDSA'], typ: 'consent+jwt' }));
    } catch (err) {
      throw new ConsentReceiptError(`consent receipt does not verify: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    return claimsOf(payload);
  };
}
