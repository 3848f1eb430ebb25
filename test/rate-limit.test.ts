// Rate limits per secret key (SPEC §11): 429 with Retry-After and RateLimit-* headers, counted in
// PostgreSQL so every instance shares them, and the stricter account look-up limit.
import { factories, gql, startSecondInstance, startTestApp, type TestApp } from './helpers/app.js';
import { expectError, expectOk, type HttpResult } from './helpers/expect.js';
import { createPaymentRequest, getStatus, lookupAccount, requestPayment, validBody } from './helpers/rest.js';
import { issueSecretKey } from '../src/auth/secret-keys.js';

/** Requests per second per key in the `perSecond` app: small, so a burst crosses it. */
const PER_SECOND = 5;
/** Account look-ups per minute per key in the `lookups` app. */
const LOOKUPS = 3;

let perSecond: TestApp;
let lookups: TestApp;

beforeAll(async () => {
  perSecond = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: String(PER_SECOND), LOOKUP_LIMIT_PER_MINUTE: '1000' } });
  // The look-up app counts plenty of requests per second, so only the look-up limit can answer 429.
  lookups = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '1000', LOOKUP_LIMIT_PER_MINUTE: String(LOOKUPS) } });
});
afterAll(async () => {
  await Promise.all([perSecond?.close(), lookups?.close()]);
});

/** How long a pinned window lasts (s): far longer than any test here takes. */
const PINNED_S = 60;

/**
 * Opens the key's per-second window now and makes it last PINNED_S seconds, in the shared store
 * (as a first lease would, with nothing handed out yet): a burst then falls into one window
 * however slowly it runs, so the counts below are exact. (The 1 s window itself, its end and the
 * next one are tested on an injected clock: rate-limit-window.test.ts.)
 */
async function pinWindow(app: TestApp, keyId: string): Promise<void> {
  await app.db.orm.em.fork().execute('insert into rate_limits (key, points, expire) values (?, 0, ?)', [`req:${keyId}`, Date.now() + PINNED_S * 1000]);
}

/** A developer with a wallet request already created (by a first key) and a second, unused key. */
async function developerWithRequest(app: TestApp) {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const requestId = await createPaymentRequest(app, dev.secretKey, user.walletId);
  // A fresh key: its counters start at zero, whatever the first key used.
  const fresh = await issueSecretKey(app.db.sql, app.config, dev.developerId);
  await pinWindow(app, fresh.keyId);
  return { dev, user, requestId, freshKey: fresh.secretKey };
}

const intHeader = (res: HttpResult, name: string): number => {
  const raw = res.headers.get(name);
  expect(raw).toMatch(/^\d+$/);
  return Number(raw);
};

describe('requests per second per key', () => {
  test('a concurrent burst over the limit: exactly the limit succeed, the rest are 429 with Retry-After and RateLimit-*', async () => {
    const { requestId, freshKey } = await developerWithRequest(perSecond);
    const burst = await Promise.all(Array.from({ length: PER_SECOND + 3 }, () => getStatus(perSecond, freshKey, requestId)));
    const ok = burst.filter((r) => r.status === 200);
    const limited = burst.filter((r) => r.status === 429);
    expect(ok.length).toBe(PER_SECOND);
    expect(limited.length).toBe(3);
    for (const res of limited) {
      expectError(res, 429);
      // Seconds to the (pinned) window's end.
      expect(intHeader(res, 'retry-after')).toBeGreaterThanOrEqual(1);
      expect(intHeader(res, 'retry-after')).toBeLessThanOrEqual(PINNED_S);
      expect(intHeader(res, 'ratelimit-limit')).toBe(PER_SECOND);
      expect(intHeader(res, 'ratelimit-remaining')).toBe(0);
      expect(intHeader(res, 'ratelimit-reset')).toBe(intHeader(res, 'retry-after'));
    }
  });

  test('successful responses carry RateLimit-Limit, -Remaining (decreasing with each call) and -Reset', async () => {
    const { requestId, freshKey } = await developerWithRequest(perSecond);
    const seen: Array<{ limit: number; remaining: number; reset: number }> = [];
    for (let i = 0; i < 3; i++) {
      const res = await getStatus(perSecond, freshKey, requestId);
      expectOk(res);
      seen.push({
        limit: intHeader(res, 'ratelimit-limit'),
        remaining: intHeader(res, 'ratelimit-remaining'),
        reset: intHeader(res, 'ratelimit-reset'),
      });
    }
    expect(seen.map((s) => s.limit)).toEqual([PER_SECOND, PER_SECOND, PER_SECOND]);
    expect(seen.map((s) => s.remaining)).toEqual([PER_SECOND - 1, PER_SECOND - 2, PER_SECOND - 3]);
    for (const s of seen) {
      expect(s.reset).toBeGreaterThanOrEqual(1);
      expect(s.reset).toBeLessThanOrEqual(PINNED_S);
    }
  });

  test('the POST routes carry RateLimit-* too', async () => {
    const f = factories(perSecond);
    const dev = await f.developer();
    const user = await f.user();
    const res = await requestPayment(perSecond, dev.secretKey, validBody(user.walletId));
    expectOk(res);
    expect(intHeader(res, 'ratelimit-limit')).toBe(PER_SECOND);
    expect(intHeader(res, 'ratelimit-remaining')).toBe(PER_SECOND - 1);
  });

  test('one key over its limit does not affect another developer’s key', async () => {
    const a = await developerWithRequest(perSecond);
    const b = await developerWithRequest(perSecond);
    const burst = await Promise.all(Array.from({ length: PER_SECOND + 3 }, () => getStatus(perSecond, a.freshKey, a.requestId)));
    expect(burst.filter((r) => r.status === 429)).toHaveLength(3);
    const other = await getStatus(perSecond, b.freshKey, b.requestId);
    expectOk(other);
    expect(intHeader(other, 'ratelimit-remaining')).toBe(PER_SECOND - 1);
  });

  test('the count is shared by two instances on the same database', async () => {
    const second = await startSecondInstance(perSecond, { RATE_LIMIT_PER_SECOND: String(PER_SECOND), LOOKUP_LIMIT_PER_MINUTE: '1000' });
    try {
      const { requestId, freshKey } = await developerWithRequest(perSecond);
      // Alternate the instances: with a count per instance each would let PER_SECOND through.
      const apps = [perSecond, second];
      const burst = await Promise.all(Array.from({ length: 2 * PER_SECOND + 2 }, (_, i) => getStatus(apps[i % 2]!, freshKey, requestId)));
      const ok = burst.filter((r) => r.status === 200);
      // The limit has lease size 1: no early refusal, so exactly the limit across both.
      expect(ok.length).toBe(PER_SECOND);
      expect(burst.filter((r) => r.status === 429)).toHaveLength(burst.length - ok.length);
    } finally {
      await second.close();
    }
  });

  test('the limit also counts GraphQL calls with the same key', async () => {
    const { requestId, freshKey } = await developerWithRequest(perSecond);
    const query = 'query($id: ID!) { paymentRequest(id: $id) { id status } }';
    const burst = await Promise.all(Array.from({ length: PER_SECOND + 3 }, () => gql(perSecond.baseUrl, query, { id: requestId }, freshKey)));
    const ok = burst.filter((r) => r.status === 200 && r.body?.data?.paymentRequest?.id === requestId);
    expect(ok.length).toBe(PER_SECOND);
    const limited = burst.filter((r) => r.body?.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
    expect(limited).toHaveLength(burst.length - ok.length);
    for (const r of limited) {
      expect(r.status).toBe(429);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(r.headers.get('ratelimit-limit')).toBe(String(PER_SECOND));
      expect(r.headers.get('ratelimit-remaining')).toBe('0');
    }
    // The REST door sees the same count: this key is still over its limit.
    expectError(await getStatus(perSecond, freshKey, requestId), 429);
  });
});

describe('account look-ups per minute per key', () => {
  test('the look-up after the limit is 429 with Retry-After and RateLimit-Limit of the look-up limit', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    const user = await f.user();
    for (let i = 0; i < LOOKUPS; i++) {
      const res = await lookupAccount(lookups, dev.secretKey, user.username);
      expectOk(res);
      expect(res.body).toEqual({ walletId: user.walletId });
      expect(intHeader(res, 'ratelimit-limit')).toBe(LOOKUPS);
      expect(intHeader(res, 'ratelimit-remaining')).toBe(LOOKUPS - 1 - i);
    }
    const over = await lookupAccount(lookups, dev.secretKey, user.phone);
    expectError(over, 429);
    const retryAfter = intHeader(over, 'retry-after');
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(intHeader(over, 'ratelimit-limit')).toBe(LOOKUPS);
    expect(intHeader(over, 'ratelimit-remaining')).toBe(0);
  });

  test('look-ups that find nobody count too (enumeration)', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    for (let i = 0; i < LOOKUPS; i++) expectError(await lookupAccount(lookups, dev.secretKey, `09${String(10_000_000 + i)}`), 404);
    expectError(await lookupAccount(lookups, dev.secretKey, '0919999999'), 429);
  });

  test('a key over its look-up limit can still request payments and read their status', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    for (let i = 0; i <= LOOKUPS; i++) await lookupAccount(lookups, dev.secretKey, user.username);
    expectError(await lookupAccount(lookups, dev.secretKey, user.username), 429);
    const created = await requestPayment(lookups, dev.secretKey, validBody(user.walletId));
    expectOk(created);
    const status = await getStatus(lookups, dev.secretKey, created.body.paymentRequestId);
    expectOk(status);
    expect(status.body.status).toBe('PENDING');
  });

  test('other requests do not use up the look-up allowance', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await createPaymentRequest(lookups, dev.secretKey, user.walletId);
    for (let i = 0; i < 2 * LOOKUPS; i++) expectOk(await getStatus(lookups, dev.secretKey, id));
    for (let i = 0; i < LOOKUPS; i++) expectOk(await lookupAccount(lookups, dev.secretKey, user.username));
  });

  test('the look-up limit is per key: another developer can still look up', async () => {
    const f = factories(lookups);
    const a = await f.developer();
    const b = await f.developer();
    const user = await f.user();
    for (let i = 0; i <= LOOKUPS; i++) await lookupAccount(lookups, a.secretKey, user.username);
    expectError(await lookupAccount(lookups, a.secretKey, user.username), 429);
    const res = await lookupAccount(lookups, b.secretKey, user.username);
    expectOk(res);
    expect(res.body).toEqual({ walletId: user.walletId });
  });

  test('GraphQL walletId shares the look-up count with GET /account: no way around it through /graphql', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    const user = await f.user();
    const query = 'query($identifier: String!) { walletId(identifier: $identifier) { walletId } }';
    // Two through REST, the third through GraphQL: the allowance is used up.
    expectOk(await lookupAccount(lookups, dev.secretKey, user.username));
    expectOk(await lookupAccount(lookups, dev.secretKey, user.username));
    const third = await gql(lookups.baseUrl, query, { identifier: user.username }, dev.secretKey);
    expect(third.body).toEqual({ data: { walletId: { walletId: user.walletId } } });
    // Over the limit on both doors.
    const viaGraphql = await gql(lookups.baseUrl, query, { identifier: user.phone }, dev.secretKey);
    expect(viaGraphql.body.data).toBeNull();
    expect(viaGraphql.body.errors).toHaveLength(1);
    expect(viaGraphql.body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', statusCode: 429 });
    expect(JSON.stringify(viaGraphql.body)).not.toContain(user.walletId);
    expectError(await lookupAccount(lookups, dev.secretKey, user.username), 429);
  });

  test('GraphQL look-ups alone hit the limit too', async () => {
    const f = factories(lookups);
    const dev = await f.developer();
    const user = await f.user();
    const query = 'query($identifier: String!) { walletId(identifier: $identifier) { walletId } }';
    for (let i = 0; i < LOOKUPS; i++) {
      const res = await gql(lookups.baseUrl, query, { identifier: user.username }, dev.secretKey);
      expect(res.body).toEqual({ data: { walletId: { walletId: user.walletId } } });
    }
    const over = await gql(lookups.baseUrl, query, { identifier: user.username }, dev.secretKey);
    expect(over.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(JSON.stringify(over.body)).not.toContain(user.walletId);
  });
});
