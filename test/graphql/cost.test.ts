// #18 finding 3: the cost model counts what an operation may return (a list multiplies by its
// `first` / `limit`), with a limit per credential type: internal tools navigate the graph, a
// secret key or user token reads a page at a time.
import { parse } from 'graphql';
import { useTestApp, gql, type TestApp, type factories } from '../helpers/app.js';
import { subscribe, wsClient } from '../helpers/ws.js';
import { requestPayment } from '../helpers/payments.js';
import { getSchema } from '../../src/schema.js';
import { DEFAULT_PAGE_SIZE, operationCost, UNPAGED_LIST_SIZE } from '../../src/graphql/cost.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { RATE_LIMIT_PER_SECOND: '1000' } }, (x) => ({ app, f } = x));

/** The example: 5 wallets, each with its last 20 ledger entries and 20 payment requests (scalar fields only). */
const NAVIGATION = `{ wallets(first: 5) { nodes { walletId balance status
  ledgerEntries(first: 20) { nodes { kind amount createdAt } }
  paymentRequests(first: 20) { nodes { id amount status createdAt } } } } }`;
const WIDE = 'query($n: Int) { wallets(first: $n) { nodes { paymentRequests(first: 200) { nodes { id } } } } }';

describe('operationCost', () => {
  const cost = async (query: string, variables: Record<string, unknown> = {}) => operationCost(await getSchema(), parse(query), variables, undefined);

  test("the issue's navigation costs what it may return: 1 + 5 × (1 + 3 + (1 + 20 × 4) + (1 + 20 × 5)) = 931", async () => {
    expect(await cost(NAVIGATION)).toBe(1 + 5 * (1 + 3 + (1 + 20 * 4) + (1 + 20 * 5)));
  });

  test('a list multiplies by its first (from a variable too), the default page when omitted, and a fixed size without paging', async () => {
    expect(await cost(WIDE, { n: 10 })).toBe(1 + 10 * (1 + (1 + 200 * 2)));
    expect(await cost(WIDE, { n: 100 })).toBe(1 + 100 * (1 + (1 + 200 * 2)));
    expect(await cost('{ wallets { nodes { walletId } } }')).toBe(1 + DEFAULT_PAGE_SIZE * 2);
    expect(await cost('{ myPendingPaymentRequests { id amount } }')).toBe(UNPAGED_LIST_SIZE * 3);
    expect(await cost('{ __schema { types { name fields { name } } } }')).toBe(1);
  });
});

describe('per credential type', () => {
  test('an operator lists 5 wallets with 20 ledger entries and 20 payment requests each (was refused at 8,082 > 5,000)', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const res = await gql(app.baseUrl, NAVIGATION, {}, app.config.adminToken);
    expect(res.body.errors).toBeUndefined();
    expect(res.status).toBe(200);
    expect(res.body.data.wallets.nodes.length).toBeGreaterThan(0);
  });

  test('an operator page of 100 wallets × 200 requests each is refused before it runs, with the numbers', async () => {
    const res = await gql(app.baseUrl, WIDE, { n: 100 }, app.config.adminToken);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].message).toMatch(/^Query cost 40,201 exceeds the limit of 25,000 for an operator or admin token\. .*first or limit.*\(50 when omitted, 10 for a list without one\)/);
    expect(res.body.errors[0].extensions).toEqual({ code: 'COST_LIMIT_EXCEEDED', statusCode: 400, cost: 40_201, limit: 25_000 });
    const fits = await gql(app.baseUrl, WIDE, { n: 10 }, app.config.adminToken);
    expect(fits.status).toBe(200);
  });

  test('a secret key or a user token has the lower limit (2,000); within it their own reads are answered', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    for (const token of [dev.secretKey, user.token]) {
      const res = await gql(app.baseUrl, WIDE, { n: 10 }, token);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].message).toMatch(/^Query cost 4,021 exceeds the limit of 2,000 for a secret key, a user token or no credential\./);
      expect(res.body.errors[0].extensions.code).toBe('COST_LIMIT_EXCEEDED');
    }
    const anonymous = await gql(app.baseUrl, WIDE, { n: 10 });
    expect(anonymous.body.errors[0].extensions.code).toBe('COST_LIMIT_EXCEEDED');
    const events = await gql(app.baseUrl, '{ events(limit: 100) { data { id type createdAt data } hasMore nextAfter } }', {}, dev.secretKey);
    expect(events.status).toBe(200);
    expect(events.body.errors).toBeUndefined();
    const pending = await gql(app.baseUrl, '{ myPendingPaymentRequests { id amount currency description merchantName status createdAt expiresAt } }', {}, user.token);
    expect(pending.body.errors).toBeUndefined();
  });

  test('over graphql-ws the user token limit holds too, and the socket stays usable', async () => {
    const user = await f.user();
    const client = wsClient(app.baseUrl, user.token);
    try {
      const costly = subscribe(client, `{ wallets(first: 10) { nodes { paymentRequests(first: 200) { nodes { id } } } } }`);
      const errors = await new Promise<unknown[]>((resolve) => {
        const started = Date.now();
        const poll = (): void => {
          if (costly.errors.length > 0 || Date.now() - started > 5000) resolve(costly.errors.flat());
          else setTimeout(poll, 10);
        };
        poll();
      });
      expect(errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/^Query cost 4,021 exceeds the limit of 2,000/), extensions: expect.objectContaining({ code: 'COST_LIMIT_EXCEEDED' }) })]);
      const fine = subscribe<{ myWallet: { balance: number } }>(client, '{ myWallet { balance } }');
      expect((await fine.next()).myWallet.balance).toEqual(expect.any(Number));
    } finally {
      await client.dispose();
    }
  });
});
