import { useTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';

// Cursor pages compare (created_at, id) in the database: PostgreSQL keeps microseconds, while a
// JavaScript Date in a cursor holds milliseconds, so rows made within one millisecond were skipped.
let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

const ADMIN = () => app.config.adminToken;
/** Rows of `table` moved into one millisecond (in the past, in their order), returned newest first. */
async function sameMillisecond(table: string, ids: string[]): Promise<string[]> {
  const em = app.db.orm.em.fork();
  for (const [i, id] of ids.entries()) {
    await em.execute(`update ${table} set created_at = ?::timestamptz where id = ?`, [`2026-01-01T00:00:00.000${i + 1}00Z`, id]);
  }
  return [...ids].reverse();
}

test('a list paged one row at a time returns each of the rows made within one millisecond exactly once', async () => {
  const f = factories(app);
  const devs = [await f.developer('a'), await f.developer('b'), await f.developer('c')];
  const expected = await sameMillisecond('developers', devs.map((d) => d.developerId));
  const seen: string[] = [];
  let after: string | null = null;
  for (let i = 0; i < 3; i++) {
    const res = await gql(app.baseUrl, 'query($a: String) { developers(first: 1, after: $a) { nodes { id } nextCursor } }', { a: after }, ADMIN());
    expect(res.body.errors).toBeUndefined();
    seen.push(...res.body.data.developers.nodes.map((n: { id: string }) => n.id));
    after = res.body.data.developers.nextCursor;
  }
  expect(seen).toEqual(expected);
});

test("a nested page (a wallet's payment requests) does the same", async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
      token: dev.secretKey,
      body: { walletId: user.walletId, amount: 1, description: `order ${i}`, merchantName: 'Shop' },
    });
    expect(res.status).toBe(200);
    ids.push(res.body.paymentRequestId);
  }
  const expected = await sameMillisecond('payment_requests', ids);
  const seen: string[] = [];
  let after: string | null = null;
  for (let i = 0; i < 3; i++) {
    const res = await gql(
      app.baseUrl,
      'query($w: String, $a: String) { paymentRequests(filter: { walletId: $w }, first: 1) { nodes { wallet { paymentRequests(first: 1, after: $a) { nodes { id } nextCursor } } } } }',
      { w: user.walletId, a: after },
      ADMIN(),
    );
    expect(res.body.errors).toBeUndefined();
    const page = res.body.data.paymentRequests.nodes[0].wallet.paymentRequests;
    seen.push(...page.nodes.map((n: { id: string }) => n.id));
    after = page.nextCursor;
  }
  expect(seen).toEqual(expected);
});

test('a cursor that does not fit the list is refused, not a 500', async () => {
  const bad = Buffer.from(JSON.stringify(['2030-01-01T00:00:00.000Z', 'wlt_not-a-uuid'])).toString('base64url');
  const res = await gql(app.baseUrl, 'query($a: String) { developers(first: 1, after: $a) { nodes { id } } }', { a: bad }, ADMIN());
  expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(res.body.errors?.[0]?.message).toBe('after is not a valid cursor');
});
