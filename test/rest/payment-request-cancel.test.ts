// POST /api/v1/wallet/payment-request/{requestId}/cancel
import { TEST_PIN, useTestApp, gql, type TestApp, type factories } from '../helpers/app.js';
import { expectError, expectOk, ISO_DATE_RE } from '../helpers/expect.js';
import { approve, cancel, countRows, createPaymentRequest, getStatus, UNKNOWN_UUID, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let token: string;
useTestApp({ env: { ...REST_TEST_ENV }, developer: true }, (x) => ({ app, f, token } = x));

test('200 with the PaymentRequestStatus body, status CANCELLED', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId, { amount: 3.5, description: 'Tea', merchantName: 'Kiosk' });
  const res = await cancel(app, token, id);
  expectOk(res);
  expect(res.body).toEqual({
    id,
    status: 'CANCELLED',
    amount: 3.5,
    currency: app.config.defaultCurrency,
    description: 'Tea',
    merchantName: 'Kiosk',
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

test('the status endpoint then reads CANCELLED, with updatedAt moved forward', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  const before = await getStatus(app, token, id);
  const cancelled = await cancel(app, token, id);
  const after = await getStatus(app, token, id);
  expect(after.body).toEqual(cancelled.body);
  expect(after.body.status).toBe('CANCELLED');
  expect(after.body.createdAt).toBe(before.body.createdAt);
  expect(after.body.expiresAt).toBe(before.body.expiresAt);
  expect(Date.parse(after.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.body.updatedAt));
});

test('a second cancel is 409 and the request stays CANCELLED', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  expectOk(await cancel(app, token, id));
  const first = await getStatus(app, token, id);
  expectError(await cancel(app, token, id), 409);
  expect((await getStatus(app, token, id)).body).toEqual(first.body);
});

test('cancelling an APPROVED request is 409 and it stays APPROVED with its transaction', async () => {
  const user = await f.user({ balance: 50 });
  const id = await createPaymentRequest(app, token, user.walletId, { amount: 10 });
  const transactionId = await approve(app, user.token, id);
  expectError(await cancel(app, token, id), 409);
  expect((await getStatus(app, token, id)).body).toMatchObject({ status: 'APPROVED', transactionId });
});

test('a cancelled request can no longer be approved: no money moves, no transaction', async () => {
  const user = await f.user({ balance: 50 });
  const id = await createPaymentRequest(app, token, user.walletId, { amount: 10 });
  expectOk(await cancel(app, token, id));
  const transactionsBefore = await countRows(app, 'transactions');
  const res = await gql(app.baseUrl, `mutation($id: ID!){ approvePaymentRequest(id:$id, verification: { pin: "${TEST_PIN}" }){ id status } }`, { id }, user.token);
  expect(res.body.errors?.[0]?.extensions?.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
  expect(await countRows(app, 'transactions')).toBe(transactionsBefore);
  expect((await getStatus(app, token, id)).body).toMatchObject({ status: 'CANCELLED', transactionId: null });
});

test('an unknown uuid is 404', async () => {
  expectError(await cancel(app, token, UNKNOWN_UUID), 404);
});

test('a non-uuid id is 400', async () => {
  expectError(await cancel(app, token, 'not-a-uuid'), 400, /uuid/i);
});

test('without an Authorization header: 401 Missing bearer token, and the request stays PENDING', async () => {
  const user = await f.user();
  const id = await createPaymentRequest(app, token, user.walletId);
  expectError(await cancel(app, undefined, id), 401, 'Missing bearer token');
  expect((await getStatus(app, token, id)).body.status).toBe('PENDING');
});
