// GET /api/v1/wallet/payment-requests (issue 20, SPEC §14): a developer's own requests, newest
// first, filtered by the status clients see, reference and creation time, paged with after/limit.
import { randomUUID } from 'node:crypto';
import { useTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { REST_TEST_ENV, UNKNOWN_UUID } from '../helpers/rest.js';

let app: TestApp;
useTestApp({ env: { ...REST_TEST_ENV, SANDBOX_TEST_WALLETS: 'false' } }, (x) => ({ app } = x));

const list = (token: string, query = '') => http(app.baseUrl, `/api/v1/wallet/payment-requests${query}`, { token });

/** Sets a request's creation time in the database (a request made at that moment). */
async function createdAt(id: string, at: string): Promise<void> {
  await app.db.orm.em.fork().execute('update payment_requests set created_at = ?::timestamptz where id = ?', [at, id]);
}

async function merchant() {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  return { dev, user };
}

test('newest first, only the caller\'s own; every page answers {data, hasMore, nextAfter}', async () => {
  const { dev, user } = await merchant();
  const other = await factories(app).developer();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, i + 1));
  await requestPayment(app.baseUrl, other.secretKey, user.walletId, 9);
  const all = await list(dev.secretKey);
  expect(all.status).toBe(200);
  expect(all.body.data.map((p: { id: string }) => p.id)).toEqual([...ids].reverse());
  expect(all.body).toMatchObject({ hasMore: false, nextAfter: null });
  const one = await http(app.baseUrl, `/api/v1/wallet/payment-request/${ids[2]}`, { token: dev.secretKey });
  expect(all.body.data[0]).toEqual(one.body);
  // Another developer's id as a cursor is no cursor of ours.
  const foreign = (await list(other.secretKey)).body.data[0].id;
  expect((await list(dev.secretKey, `?after=${foreign}`)).status).toBe(404);
  expect((await list(dev.secretKey, `?after=${UNKNOWN_UUID}`)).body).toEqual({ statusCode: 404, message: 'after names no payment request of yours' });
});

test('pages with limit and after until hasMore is false, without losing rows created within one millisecond', async () => {
  const { dev, user } = await merchant();
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
  // Two requests in the same millisecond (microseconds apart), as concurrent creates can be.
  await createdAt(ids[1]!, '2026-03-01T10:00:00.123456Z');
  await createdAt(ids[0]!, '2026-03-01T10:00:00.123100Z');
  const seen: string[] = [];
  let after: string | null = null;
  let pages = 0;
  do {
    const page: { body: { data: Array<{ id: string }>; hasMore: boolean; nextAfter: string | null } } = await list(
      dev.secretKey,
      `?limit=2${after ? `&after=${after}` : ''}`,
    );
    seen.push(...page.body.data.map((p) => p.id));
    after = page.body.nextAfter;
    expect(after === null).toBe(!page.body.hasMore);
    if (after) expect(after).toBe(page.body.data.at(-1)!.id);
    pages++;
  } while (after);
  expect(pages).toBe(3);
  expect(seen).toEqual([ids[4], ids[3], ids[2], ids[1], ids[0]]);
});

test('status as clients see it: a PENDING request past expiresAt is EXPIRED, not PENDING', async () => {
  const { dev, user } = await merchant();
  const fresh = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const overdue = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
  const cancelled = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3);
  await http(app.baseUrl, `/api/v1/wallet/payment-request/${cancelled}/cancel`, { method: 'POST', token: dev.secretKey });
  await app.db.orm.em
    .fork()
    .execute(`update payment_requests set created_at = now() - interval '2 seconds', expires_at = now() - interval '1 second' where id = ?`, [overdue]);
  const ids = async (status: string) => (await list(dev.secretKey, `?status=${status}`)).body.data.map((p: { id: string; status: string }) => [p.id, p.status]);
  expect(await ids('PENDING')).toEqual([[fresh, 'PENDING']]);
  expect(await ids('EXPIRED')).toEqual([[overdue, 'EXPIRED']]);
  expect(await ids('CANCELLED')).toEqual([[cancelled, 'CANCELLED']]);
  expect(await ids('APPROVED')).toEqual([]);
});

test('by reference and by creation time (createdFrom inclusive, createdTo exclusive), combined', async () => {
  const { dev, user } = await merchant();
  const jan = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1, { reference: 'order-7' });
  const feb = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2, { reference: 'order-7' });
  const feb2 = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3, { reference: 'order-8' });
  await createdAt(jan, '2026-01-15T12:00:00Z');
  await createdAt(feb, '2026-02-01T00:00:00Z');
  await createdAt(feb2, '2026-02-10T09:30:00.5Z');
  const ids = async (query: string) => (await list(dev.secretKey, query)).body.data.map((p: { id: string }) => p.id);
  expect(await ids('?reference=order-7')).toEqual([feb, jan]);
  expect(await ids('?createdFrom=2026-02-01')).toEqual(expect.arrayContaining([feb2, feb]));
  expect(await ids('?createdFrom=2026-02-01&createdTo=2026-03-01')).toEqual([feb2, feb]);
  expect(await ids('?createdFrom=2026-01-01T00:00:00Z&createdTo=2026-02-01T00:00:00Z')).toEqual([jan]);
  expect(await ids(`?createdFrom=${encodeURIComponent('2026-02-10T12:30:00.5+03:00')}&createdTo=2026-02-11`)).toEqual([feb2]);
  expect(await ids('?reference=order-7&createdFrom=2026-02-01&createdTo=2026-03-01')).toEqual([feb]);
});

test('bad filters answer 400 with a message naming them, and change nothing', async () => {
  const { dev } = await merchant();
  for (const [query, message] of [
    ['?status=DONE', 'status must be one of PENDING, APPROVED, REJECTED, EXPIRED, CANCELLED'],
    ['?status=pending', 'status must be one of PENDING, APPROVED, REJECTED, EXPIRED, CANCELLED'],
    ['?createdFrom=yesterday', 'createdFrom must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    ['?createdFrom=2026-02-31', 'createdFrom must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    ['?createdTo=2026-11-22T25:00:00Z', 'createdTo must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    ['?createdTo=2026-11-22T10:00:00', 'createdTo must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    // Offsets PostgreSQL refuses (schemathesis found these answering 500).
    [`?createdTo=${encodeURIComponent('2026-01-01T00:00:00+16:00')}`, 'createdTo must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    ['?createdFrom=2026-01-01T00:00:00-23:59', 'createdFrom must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    // Present but empty is refused like any other bad value (the fuzzer found `createdTo=` taken as no filter).
    ['?createdFrom=', 'createdFrom must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    [`?createdTo=&after=${randomUUID()}`, 'createdTo must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z'],
    ['?after=nope', 'after must be a UUID'],
    ['?limit=0', 'limit must be an integer from 1 to 100'],
    ['?limit=101', 'limit must be an integer from 1 to 100'],
    ['?limit=x', 'limit must be an integer'],
    [`?reference=${'r'.repeat(65)}`, 'reference must be 1-64 characters'],
  ]) {
    const res = await list(dev.secretKey, query);
    expect([query, res.status, res.body]).toEqual([query, 400, { statusCode: 400, message }]);
  }
  expect((await http(app.baseUrl, '/api/v1/wallet/payment-requests')).status).toBe(401);
});

test('an empty time range (createdFrom after createdTo) is an empty page, as the contract states each filter alone', async () => {
  const { dev, user } = await merchant();
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const res = await list(dev.secretKey, '?createdFrom=2026-03-01&createdTo=2026-02-01');
  expect([res.status, res.body]).toEqual([200, { data: [], hasMore: false, nextAfter: null }]);
});

test('the GraphQL door runs the same query', async () => {
  const { dev, user } = await merchant();
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1, { reference: 'gql-1' });
  const res = await http(app.baseUrl, '/graphql', {
    token: dev.secretKey,
    body: { query: '{ searchPaymentRequests(reference: "gql-1", status: "PENDING") { data { id } hasMore nextAfter } }' },
  });
  expect(res.body.data.searchPaymentRequests).toEqual({ data: [{ id }], hasMore: false, nextAfter: null });
});

test('UTC offsets: up to ±15:59 filter by the instant they name; beyond, both doors answer a bad input, never a server error', async () => {
  const { dev, user } = await merchant();
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1, { reference: 'tz-1' });
  // 2100-01-01T00:00+15:59 is still in the future; 2000-01-01T00:00-15:59 long past.
  const ok = await list(dev.secretKey, `?reference=tz-1&createdFrom=${encodeURIComponent('2000-01-01T00:00:00-15:59')}&createdTo=${encodeURIComponent('2100-01-01T00:00:00+15:59')}`);
  expect([ok.status, ok.body.data.map((r: { id: string }) => r.id)]).toEqual([200, [id]]);
  const res = await http(app.baseUrl, '/graphql', {
    token: dev.secretKey,
    body: { query: '{ searchPaymentRequests(createdTo: "2026-01-01T00:00:00+16:00") { hasMore } }' },
  });
  expect([res.status, res.body.errors?.[0]?.extensions?.code]).toEqual([200, 'BAD_USER_INPUT']);
});
