import { SignJWT } from 'jose';
import { useTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';

// #8: client inputs that reached a 500 (with a stack in the log) answer a coded 4xx instead.
let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

const errorLines = () => app.logs.filter((l) => /"level":(50|60)/.test(l));

test('a subscription sent over HTTP POST: 400 BAD_USER_INPUT', async () => {
  const res = await gql(app.baseUrl, 'subscription { paymentRequested { id } }');
  expect(res.status).toBe(400);
  expect(res.body.errors[0]).toMatchObject({ message: 'Subscriptions are served over WebSocket (graphql-ws) on /graphql', extensions: { code: 'BAD_USER_INPUT', statusCode: 400 } });
  expect(errorLines()).toEqual([]);
});

test('a persisted-query hash that does not match: a coded error, not INTERNAL_SERVER_ERROR', async () => {
  const res = await http(app.baseUrl, '/graphql', { body: { query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } } } });
  expect(res.status).toBeLessThan(500);
  expect(res.body.errors[0].extensions.code).not.toBe('INTERNAL_SERVER_ERROR');
  expect(errorLines()).toEqual([]);
});

test('requestPayment with a NUL in idempotencyKey through GraphQL: 400', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await gql(
    app.baseUrl,
    'mutation($k: String) { requestPayment(input: { walletId: "' + user.walletId + '", amount: 1, description: "d", merchantName: "m" }, idempotencyKey: $k) { paymentRequestId } }',
    { k: 'a\u0000b' },
    dev.secretKey,
  );
  expect(res.body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', statusCode: 400 });
  expect(errorLines()).toEqual([]);
});

test('a validly signed user token whose sub is not a UUID: 401', async () => {
  const token = await new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject('not-a-uuid')
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(app.config.userTokenSecret));
  const res = await gql(app.baseUrl, '{ myPendingPaymentRequests { id } }', {}, token);
  expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  expect(errorLines()).toEqual([]);
});

test('NUL in admin string arguments: 400', async () => {
  for (const query of [
    'mutation { createDeveloper(name: "a\\u0000b") { id } }',
    'mutation { topUpWallet(walletId: "a\\u0000b", amount: 1) { __typename } }',
    'mutation { createUser(input: { username: "a\\u0000b", phone: "0911000000" }) { userId } }',
    '{ paymentRequests(after: "a\\u0000b") { nextCursor } }',
  ]) {
    const res = await gql(app.baseUrl, query, {}, app.config.adminToken);
    expect([query, res.body.errors?.[0]?.extensions?.code, res.body.errors?.[0]?.message]).toEqual([query, 'BAD_USER_INPUT', expect.any(String)]);
  }
  expect(errorLines()).toEqual([]);
});
