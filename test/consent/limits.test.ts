/**
 * Waiting has a length (SPEC §16, issue 30): wallet users are rate limited like keys
 * (USER_RATE_LIMIT_PER_SECOND operations per user across instances and doors), the pay page and
 * `paymentRequestByCode` share one budget per client address (PAY_PAGE_LIMIT_PER_MINUTE; 429 on
 * the page), and every GraphQL error that asks the caller to wait carries `extensions.retryAfter`
 * in whole seconds (RATE_LIMITED, TOO_MANY_PENDING_REQUESTS; VERIFICATION_LOCKED in pin.test.ts).
 */
import { factories, gql, http, startSecondInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { wsClient } from '../helpers/ws.js';

const MY_WALLET = '{ myWallet { walletId } }';
const codeOf = (res: { body: any }): string | undefined => res.body.errors?.[0]?.extensions?.code;

describe('per-user and per-address limits', () => {
  let app: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    const env = { USER_RATE_LIMIT_PER_SECOND: '5', PAY_PAGE_LIMIT_PER_MINUTE: '4', MAX_PENDING_PER_PAYER: '1' };
    app = await startTestApp({ env });
    second = await startSecondInstance(app, env);
  });
  afterAll(async () => {
    await second?.close();
    await app?.close();
  });

  test('40 parallel operations of one user over two instances: at most the limit per second pass, the rest RATE_LIMITED with retryAfter; another user is not affected', async () => {
    const f = factories(app);
    const busy = await f.user();
    const other = await f.user();
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => gql((i % 2 ? second : app).baseUrl, MY_WALLET, {}, busy.token)));
    const passed = answers.filter((r) => r.body.data?.myWallet?.walletId === busy.walletId);
    const limited = answers.filter((r) => codeOf(r) === 'RATE_LIMITED');
    expect(passed.length + limited.length).toBe(40);
    // A burst may straddle two one-second windows: never more than two windows' worth.
    expect(passed.length).toBeGreaterThanOrEqual(1);
    expect(passed.length).toBeLessThanOrEqual(10);
    for (const r of limited) {
      expect(r.status).toBe(429);
      expect(Number.isInteger(r.body.errors[0].extensions.retryAfter)).toBe(true);
      expect(r.body.errors[0].extensions.retryAfter).toBeGreaterThanOrEqual(1);
      expect(r.headers.get('retry-after')).toBe(String(r.body.errors[0].extensions.retryAfter));
    }
    expect((await gql(app.baseUrl, MY_WALLET, {}, other.token)).body.data.myWallet.walletId).toBe(other.walletId);
  });

  test('over graphql-ws the same budget: an operation past it answers RATE_LIMITED with retryAfter, and the socket stays open', async () => {
    const user = await factories(app).user();
    let closed = false;
    const client = wsClient(app.baseUrl, user.token, { onClose: () => (closed = true) });
    try {
      const once = () =>
        new Promise<any>((resolve) => {
          let result: any;
          client.subscribe({ query: MY_WALLET }, { next: (v) => (result = v), error: (e) => resolve({ errors: e }), complete: () => resolve(result) });
        });
      const answers = await Promise.all(Array.from({ length: 20 }, once));
      const limited = answers.filter((a) => (Array.isArray(a.errors) ? a.errors[0] : a.errors?.[0])?.extensions?.code === 'RATE_LIMITED');
      expect(limited.length).toBeGreaterThan(0);
      const error = Array.isArray(limited[0].errors) ? limited[0].errors[0] : limited[0].errors[0];
      expect(Number.isInteger(error.extensions.retryAfter)).toBe(true);
      expect(closed).toBe(false);
    } finally {
      await client.dispose();
    }
  });

  test('GET /pay/{code} and paymentRequestByCode share PAY_PAGE_LIMIT_PER_MINUTE per address: then 429 on the page, RATE_LIMITED with retryAfter on GraphQL', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const users = [await f.user(), await f.user(), await f.user()];
    const link = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: dev.secretKey, body: { amount: 5, description: 'Table 2', merchantName: 'Cafe' } });
    const code = /\/pay\/([A-Za-z0-9_-]+)$/.exec(link.body.paymentUrl)![1]!;
    const byCode = (token: string) => gql(app.baseUrl, 'query($c: String!) { paymentRequestByCode(code: $c) { id } }', { c: code }, token);
    // 4 in the minute, counted together whatever the user: 2 pages, 2 reads by two users.
    expect((await fetch(`${app.baseUrl}/pay/${code}`, { redirect: 'manual' })).status).toBe(302);
    expect((await fetch(`${app.baseUrl}/pay/${code}`, { redirect: 'manual' })).status).toBe(302);
    expect((await byCode(users[0]!.token)).body.data.paymentRequestByCode.id).toBe(link.body.paymentRequestId);
    expect((await byCode(users[1]!.token)).body.data.paymentRequestByCode.id).toBe(link.body.paymentRequestId);
    const page = await fetch(`${app.baseUrl}/pay/${code}`, { redirect: 'manual' });
    expect(page.status).toBe(429);
    expect(Number(page.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const read = await byCode(users[2]!.token);
    expect(codeOf(read)).toBe('RATE_LIMITED');
    expect(read.body.errors[0].extensions.retryAfter).toBeGreaterThanOrEqual(1);
    // Other operations of those users are not on this budget.
    expect((await gql(app.baseUrl, MY_WALLET, {}, users[2]!.token)).body.data.myWallet.walletId).toBe(users[2]!.walletId);
  });

  test('TOO_MANY_PENDING_REQUESTS over GraphQL carries retryAfter', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user();
    const create = () =>
      gql(
        app.baseUrl,
        'mutation($i: RequestPaymentInput!) { requestPayment(input: $i) { paymentRequestId } }',
        { i: { walletId: user.walletId, amount: 1, description: 'Order', merchantName: 'Shop' } },
        dev.secretKey,
      );
    expect((await create()).body.data.requestPayment.paymentRequestId).toBeDefined();
    const refused = await create();
    expect(codeOf(refused)).toBe('TOO_MANY_PENDING_REQUESTS');
    expect(Number.isInteger(refused.body.errors[0].extensions.retryAfter)).toBe(true);
    expect(refused.body.errors[0].extensions.retryAfter).toBeGreaterThanOrEqual(1);
  });
});
