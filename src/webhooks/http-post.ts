import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isPublicAddress } from './url-policy.js';
import type { Config } from '../config.js';

/** What one POST to a webhook endpoint came to. */
export interface PostOutcome {
  /** The HTTP status, when a response arrived (a 3xx is not followed). */
  status?: number;
  /** Why no response arrived (never a response body, which is not read beyond a bound). */
  error?: string;
  /** The start of the response body, when asked for (`excerptBytes`). */
  excerpt?: string;
  durationMs: number;
}

/** The User-Agent of the gateway's webhook POSTs. */
export const WEBHOOK_USER_AGENT = 'wallet-gateway-webhooks/1';

/**
 * The rules every webhook POST of this environment follows (deliveries and test sends alike):
 * the configured timeout, and in production only public addresses, checked at connect time.
 */
export function webhookPostOptions(config: Pick<Config, 'webhookTimeoutMs' | 'appEnv'>): { timeoutMs: number; publicOnly: boolean } {
  return { timeoutMs: config.webhookTimeoutMs, publicOnly: config.appEnv === 'production' };
}

/** Refused before connecting: the host resolved to an address webhooks may not reach. */
class BlockedAddressError extends Error {
  constructor() {
    super('address not allowed');
  }
}

/**
 * A DNS lookup that refuses non-public addresses, used as the socket's `lookup`: the address
 * checked is the address connected to (no window for DNS rebinding between check and connect).
 */
const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, '', 4);
    if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
      return callback(new BlockedAddressError(), '', 4);
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
};

const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * POSTs a JSON body and waits for the response status, within `timeoutMs` for the whole
 * exchange. Redirects are never followed. With `publicOnly`, an address literal that is not
 * public is refused, and names connect only to public addresses.
 */
export function postWebhook(
  url: URL,
  body: string,
  headers: Record<string, string>,
  opts: { timeoutMs: number; publicOnly: boolean; excerptBytes?: number },
): Promise<PostOutcome> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: Omit<PostOutcome, 'durationMs'>): void => {
      if (settled) return;
      settled = true;
      resolve({ ...outcome, durationMs: elapsed() });
    };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (opts.publicOnly && isIP(host) && !isPublicAddress(host)) {
      finish({ error: 'address not allowed' });
      return;
    }
    const signal = AbortSignal.timeout(opts.timeoutMs);
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        signal,
        ...(opts.publicOnly ? { lookup: publicOnlyLookup } : {}),
        agent: false,
      },
      (res) => {
        let received = 0;
        const kept: Buffer[] = [];
        const want = opts.excerptBytes ?? 0;
        res.on('data', (chunk: Buffer) => {
          if (received < want) kept.push(chunk.subarray(0, want - received));
          received += chunk.length;
          if (received > MAX_RESPONSE_BYTES) res.destroy();
        });
        const done = (): void =>
          finish({ status: res.statusCode ?? 0, ...(want > 0 ? { excerpt: Buffer.concat(kept).toString('utf8') } : {}) });
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('error', (err: Error & { code?: string }) => {
      if (signal.aborted) finish({ error: `timeout after ${opts.timeoutMs} ms` });
      else if (err instanceof BlockedAddressError || err.message === 'address not allowed') finish({ error: 'address not allowed' });
      else finish({ error: err.code ?? 'request failed' });
    });
    req.end(body);
  });
}
