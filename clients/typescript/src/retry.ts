import { WalletGatewayConnectionError } from './errors.js';

/** One retry the client is about to make (for logs and metrics: `onRetry`). */
export interface RetryInfo {
  method: string;
  url: string;
  /** The status that is being retried: 409 (same Idempotency-Key still running), 429 or 503. */
  status: number;
  /** 1 for the first retry. */
  attempt: number;
  /** How long the client waits before it (`Retry-After` when the gateway sent one). */
  delayMs: number;
  /** The `X-Request-Id` of the answer being retried. */
  requestId: string | null;
}

export interface RetryOptions {
  /** Retries per call (default 3); 0 turns them off. */
  maxRetries: number;
  /** A `Retry-After` longer than this is not waited for: the error is thrown instead (default 60 s). */
  maxDelayMs: number;
  onRetry?: ((info: RetryInfo) => void) | undefined;
  fetch: (request: Request) => Promise<Response>;
}

/**
 * Whether an answer is one a retry of the same request (same Idempotency-Key) can cure: 429 (rate
 * limited: nothing ran), 503 (the gateway or its database was unavailable: nothing committed),
 * and 409 *with* `Retry-After` (the gateway's mark on "a call with this Idempotency-Key is still
 * running"; a 409 about a request's state has none and is final).
 */
export function isRetryable(response: Response): boolean {
  return response.status === 429 || response.status === 503 || (response.status === 409 && response.headers.has('retry-after'));
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), or undefined. */
export function retryAfterMs(response: Response, now = Date.now()): number | undefined {
  const value = response.headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A `fetch` that sends a request again, unchanged (so with the same Idempotency-Key), while the
 * answer is retryable: after `Retry-After`, else after 0.5 s, 1 s, 2 s, ... A connection failure
 * becomes WalletGatewayConnectionError (not retried: whether a POST arrived is unknown, and the
 * caller can retry with the same key).
 */
export function retryingFetch(opts: RetryOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      let response: Response;
      try {
        response = await opts.fetch(attempt <= opts.maxRetries ? request.clone() : request);
      } catch (err) {
        throw new WalletGatewayConnectionError(new URL(request.url).origin, err);
      }
      if (attempt > opts.maxRetries || !isRetryable(response)) return response;
      const delayMs = retryAfterMs(response) ?? 500 * 2 ** (attempt - 1);
      if (delayMs > opts.maxDelayMs) return response;
      // The body of an answer that is not returned is read, so the connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      opts.onRetry?.({
        method: request.method,
        url: request.url,
        status: response.status,
        attempt,
        delayMs,
        requestId: response.headers.get('x-request-id'),
      });
      await sleep(delayMs);
    }
  };
}
