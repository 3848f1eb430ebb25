import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { poll } from './expect.js';

/** A real graphql-ws client for a test gateway; closed by `dispose()`. */
export function wsClient(
  baseUrl: string,
  token: string | undefined,
  extra: { onClose?: (code: number, reason: string) => void; onConnected?: () => void } = {},
): Client {
  return createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: token === undefined ? {} : { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    on: {
      connected: () => extra.onConnected?.(),
      closed: (event) => {
        const e = event as { code: number; reason: string };
        extra.onClose?.(e.code, e.reason);
      },
    },
    onNonLazyError: () => undefined,
  });
}

/** A running subscription: results arrive in `values`; `next()` waits for the next one. */
export interface Sub<T> {
  values: T[];
  errors: unknown[];
  next(timeoutMs?: number): Promise<T>;
  /** Resolves once the server has acknowledged the subscription (after a round trip). */
  dispose(): void;
}

export function subscribe<T = any>(client: Client, query: string): Sub<T> {
  const values: T[] = [];
  const errors: unknown[] = [];
  const waiters: Array<(v: T) => void> = [];
  let consumed = 0;
  const dispose = client.subscribe<T>(
    { query },
    {
      next: (r) => {
        if (r.errors) errors.push(...r.errors);
        if (r.data) {
          values.push(r.data as T);
          const w = waiters.shift();
          if (w) {
            consumed++;
            w(r.data as T);
          }
        }
      },
      error: (e) => errors.push(e),
      complete: () => undefined,
    },
  );
  return {
    values,
    errors,
    dispose,
    next(timeoutMs = 10_000) {
      if (consumed < values.length) return Promise.resolve(values[consumed++]!);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no subscription event within ${timeoutMs} ms`)), timeoutMs);
        waiters.push((v) => {
          clearTimeout(timer);
          resolve(v);
        });
      });
    },
  };
}

/**
 * Waits until the server has registered `n` open subscriptions (so a following event cannot be
 * missed); with `exactly`, until it holds exactly `n` (e.g. after the server dropped some).
 */
export async function untilSubscribed(hub: { stats: { subscriptions: number } }, n: number, timeoutMs = 2000, mode: 'atLeast' | 'exactly' = 'atLeast'): Promise<void> {
  const what = `${mode === 'exactly' ? 'exactly' : 'at least'} ${n} subscriptions registered`;
  await poll(what, () => hub.stats.subscriptions, (count) => (mode === 'exactly' ? count === n : count >= n), timeoutMs, 10);
}
