// GET /api/v1/wallet/payment-request/{requestId}
import { useTestApp, factories, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, ON_SERVER } from '../helpers/db.js';
import { expectError, expectOk, ISO_DATE_RE } from '../helpers/expect.js';
import { createPaymentRequest, getStatus, UNKNOWN_UUID, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let token: string;
useTestApp({ env: { ...REST_TEST_ENV }, developer: true }, (x) => ({ app, f, token } = x));

test('200 with exactly the PaymentRequestStatus fields plus merchantName, updatedAt, transactionId, reference, metadata and consentReceipt (null)', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId, {
    amount: 42.1,
    description: 'Monthly plan',
    merchantName: 'Stream Co',
  });
  const res = await getStatus(app, token, id);
  expectOk(res);
  expect(res.body).toEqual({
    id,
    status: 'PENDING',
    amount: 42.1,
    currency: app.config.defaultCurrency,
    description: 'Monthly plan',
    merchantName: 'Stream Co',
    createdAt: expect.stringMatching(ISO_DATE_RE),
    expiresAt: expect.stringMatching(ISO_DATE_RE),
    updatedAt: expect.stringMatching(ISO_DATE_RE),
    transactionId: null,
    reference: null,
    metadata: null,
    consentReceipt: null,
    paymentUrl: expect.stringMatching(/^http:\/\/localhost:\d+\/pay\/[A-Za-z0-9_-]{24}$/),
  });
});

test('amount is a JSON number and the dates are ordered createdAt <= updatedAt < expiresAt', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId, { amount: 7 });
  const { body } = await getStatus(app, token, id);
  expect(typeof body.amount).toBe('number');
  expect(body.amount).toBe(7);
  expect(Date.parse(body.createdAt)).toBeLessThanOrEqual(Date.parse(body.updatedAt));
  expect(Date.parse(body.updatedAt)).toBeLessThan(Date.parse(body.expiresAt));
});

test('reading twice gives the same answer (a read changes nothing)', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  const first = await getStatus(app, token, id);
  const second = await getStatus(app, token, id);
  expect(second.body).toEqual(first.body);
});

test('an uppercase form of the uuid names the same request', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  const res = await getStatus(app, token, id.toUpperCase());
  expectOk(res);
  expect(res.body.id).toBe(id);
});

test.each([
  ['not-a-uuid'],
  ['123'],
  ['00000000-0000-4000-8000-00000000000'],
  ['00000000-0000-4000-8000-0000000000000'],
  ['g0000000-0000-4000-8000-000000000000'],
  ['00000000000040008000000000000000'],
])('a non-uuid id (%s) is 400', async (id) => {
  expectError(await getStatus(app, token, id), 400, /uuid/i);
});

test('an unknown uuid is 404', async () => {
  expectError(await getStatus(app, token, UNKNOWN_UUID), 404);
});

test('without an Authorization header: 401 Missing bearer token', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  expectError(await getStatus(app, undefined, id), 401, 'Missing bearer token');
});

test('a session that lost its prepared statements (a pooler, DEALLOCATE ALL) still gets 200: the read runs unnamed', async () => {
  // One pooled connection, so the statement the first read prepares is the one deallocated (the
  // embedded database's pool is one connection: there the second gateway shares the file's).
  const database = ON_SERVER ? await createTestDatabase(1) : app.database;
  const one = await startTestApp({ database, env: { ...REST_TEST_ENV } });
  try {
    const f1 = factories(one);
    const key = (await f1.developer()).secretKey;
    const id = await createPaymentRequest(one, key, (await f1.user()).walletId);
    expectOk(await getStatus(one, key, id));
    const client = one.db.orm.em.getKnex().client as { acquireConnection(): Promise<{ query(q: string): Promise<unknown> }>; releaseConnection(c: unknown): Promise<void> };
    const connection = await client.acquireConnection();
    await connection.query('deallocate all');
    await client.releaseConnection(connection);
    for (let i = 0; i < 2; i++) {
      const res = await getStatus(one, key, id);
      expectOk(res);
      expect(res.body.id).toBe(id);
    }
  } finally {
    await one.close();
    if (database !== app.database) await database.close();
  }
});
