import type { http } from './app.js';

/** What the `http()` helper returns. */
export type HttpResult = Awaited<ReturnType<typeof http>>;

/** A canonical UUID (any version), as the gateway hands out ids. */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An ISO 8601 date-time as JSON carries a Date (`2026-01-02T03:04:05.678Z`). */
export const ISO_DATE_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The REST Error contract: the HTTP status is `status`, the body is a JSON object with exactly
 * `statusCode` (an integer equal to the HTTP status) and `message` (a non-empty string), and the
 * response carries an `X-Request-Id`. `message` narrows the text when given.
 */
export function expectError(res: HttpResult, status: number, message?: string | RegExp): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { statusCode: status, message: expect.any(String) },
  });
  expect(Object.keys(res.body as object).sort()).toEqual(['message', 'statusCode']);
  expect(Number.isInteger(res.body.statusCode)).toBe(true);
  expect((res.body.message as string).length).toBeGreaterThan(0);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('x-request-id')).toBeTruthy();
  if (typeof message === 'string') expect(res.body.message).toBe(message);
  else if (message) expect(res.body.message).toMatch(message);
}

/** A success answer: the status, a JSON body and an `X-Request-Id`. */
export function expectOk(res: HttpResult, status = 200): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: expect.anything() });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

/** Every object key and every scalar value (as text) found anywhere in a JSON value. */
export function walkJson(value: unknown): { keys: string[]; values: string[] } {
  const keys: string[] = [];
  const values: string[] = [];
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        keys.push(k);
        visit(child);
      }
    } else if (v !== null && v !== undefined) values.push(String(v));
  };
  visit(value);
  return { keys, values };
}

/** What a synchronous call refused with (code, HTTP status and message of the AppError); fails when it returned. */
export function refusalOf(fn: () => unknown): { code: unknown; statusCode: unknown; message: string } {
  let value: unknown;
  try {
    value = fn();
  } catch (err) {
    const e = err as { code?: unknown; statusCode?: unknown; message: string };
    return { code: e.code, statusCode: e.statusCode, message: e.message };
  }
  throw new Error(`expected a refusal, got ${JSON.stringify(value)}`);
}

/**
 * Resolves as `promise` does, or fails saying `what` did not happen within `ms`: a deadline on
 * waiting for something that must happen (set well above the normal case), not a measurement.
 */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits `ms`: only to let time pass on purpose (an expiry, a TTL), never to order events. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * The one poll of the tests: reads `read()` every `everyMs` until `done(value)` holds and returns
 * that value; fails saying `what` and the last value read when `ms` pass first. A deadline on
 * waiting for something that must happen (set well above the normal case), not a measurement.
 */
export async function poll<T>(what: string, read: () => T | Promise<T>, done: (value: T) => boolean, ms: number, everyMs = 20): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms (last: ${JSON.stringify(value)})`);
    await sleep(everyMs);
  }
}

/** Polls `check` every `everyMs` until it returns true; fails saying `what` when `ms` pass first. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string, everyMs = 20): Promise<void> {
  await poll(what, check, (ok) => ok, ms, everyMs);
}
