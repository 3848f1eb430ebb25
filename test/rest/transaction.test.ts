// GET /api/v1/wallet/transaction/{transactionId}: the transaction of an approved request, and the
// rule that a transaction body never names who paid.
import { factories, gql, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, ISO_DATE_RE, UUID_RE, walkJson, type HttpResult } from '../helpers/expect.js';
import { approve, createPaymentRequest, getStatus, getTransaction, UNKNOWN_UUID, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let dev: Awaited<ReturnType<ReturnType<typeof factories>['developer']>>;
let payer: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;
let requestId: string;
let transactionId: string;
let tx: HttpResult;

beforeAll(async () => {
  app = await startTestApp({ env: { ...REST_TEST_ENV } });
  f = factories(app);
  dev = await f.developer('Transaction Merchant');
  payer = await f.user({ username: 'tx_payer', phone: '0912345678', balance: 1000 });
  requestId = await createPaymentRequest(app, dev.secretKey, payer.walletId, {
    amount: 250.75,
    description: 'Invoice 77',
    merchantName: 'Acme Ltd',
  });
  transactionId = await approve(app, payer.token, requestId);
  tx = await getTransaction(app, dev.secretKey, transactionId);
});
afterAll(async () => {
  await app.close();
});

test('200 with exactly id, amount, currency, status, type, description, createdAt, updatedAt, paymentProvider, paymentReference, consentReceipt, refundedAmount, capturedAmount', () => {
  expectOk(tx);
  expect(tx.body).toEqual({
    id: transactionId,
    amount: 250.75,
    currency: app.config.defaultCurrency,
    status: 'COMPLETED',
    type: 'WALLET_PAYMENT',
    description: 'Invoice 77',
    createdAt: expect.stringMatching(ISO_DATE_RE),
    updatedAt: expect.stringMatching(ISO_DATE_RE),
    paymentProvider: 'WALLET',
    paymentReference: expect.any(String),
    consentReceipt: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    refundedAmount: 0,
    capturedAmount: 250.75,
  });
});

test('a partial refund shows in refundedAmount with the status still COMPLETED; REFUNDED once all of it is refunded', async () => {
  const paid = await approve(app, payer.token, await createPaymentRequest(app, dev.secretKey, payer.walletId, { amount: 10.5 }));
  const refund = async (amount: number) => {
    const res = await gql(app.baseUrl, 'mutation($id: ID!, $a: Float) { refundTransaction(id: $id, amount: $a) { refundedAmount } }', { id: paid, a: amount }, app.config.adminToken);
    expect(res.body.errors).toBeUndefined();
  };
  await refund(0.25);
  let res = await getTransaction(app, dev.secretKey, paid);
  expectOk(res);
  expect(res.body).toMatchObject({ amount: 10.5, refundedAmount: 0.25, status: 'COMPLETED' });
  await refund(10.25);
  res = await getTransaction(app, dev.secretKey, paid);
  expectOk(res);
  expect(res.body).toMatchObject({ amount: 10.5, refundedAmount: 10.5, status: 'REFUNDED' });
});

test('paymentReference is WPAY, 12 digits, "-" and 6 of A-Z 0-9', () => {
  expect(tx.body.paymentReference).toMatch(/^WPAY\d{12}-[A-Z0-9]{6}$/);
});

test('each transaction gets its own paymentReference', async () => {
  const other = await createPaymentRequest(app, dev.secretKey, payer.walletId, { amount: 1 });
  const otherTx = await getTransaction(app, dev.secretKey, await approve(app, payer.token, other));
  expectOk(otherTx);
  expect(otherTx.body.paymentReference).toMatch(/^WPAY\d{12}-[A-Z0-9]{6}$/);
  expect(otherTx.body.paymentReference).not.toBe(tx.body.paymentReference);
  expect(otherTx.body.id).not.toBe(tx.body.id);
});

test('the id is a uuid and createdAt <= updatedAt', () => {
  expect(tx.body.id).toMatch(UUID_RE);
  expect(Date.parse(tx.body.createdAt)).toBeLessThanOrEqual(Date.parse(tx.body.updatedAt));
});

test('the status endpoint then shows APPROVED and the transactionId', async () => {
  const res = await getStatus(app, dev.secretKey, requestId);
  expectOk(res);
  expect(res.body).toMatchObject({ id: requestId, status: 'APPROVED', transactionId, amount: 250.75 });
});

describe('no identifiers of the payer or the developer', () => {
  const forbiddenKey = /user|wallet|developer|phone|msisdn|username|owner|payer/i;

  test('no key anywhere in the body looks like userId, walletId, developerId, phone or username', () => {
    const { keys } = walkJson(tx.body);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => forbiddenKey.test(k))).toEqual([]);
  });

  test('no value anywhere in the body contains the user id, username, phone (both forms), walletId or developerId', () => {
    const { values } = walkJson(tx.body);
    const secrets = {
      userId: payer.userId,
      username: payer.username,
      phone: '0912345678',
      phoneNational: '912345678',
      walletId: payer.walletId,
      developerId: dev.developerId,
    };
    const leaks = Object.entries(secrets).flatMap(([name, secret]) =>
      values.filter((v) => v.toLowerCase().includes(secret.toLowerCase())).map((v) => `${name} in ${JSON.stringify(v)}`),
    );
    expect(leaks).toEqual([]);
  });

  test('the raw response text contains none of them either', async () => {
    // fetch on purpose: the bytes as sent, not the parsed body (the tests above read the same answer through http(), checked against the document).
    const res = await fetch(`${app.baseUrl}/api/v1/wallet/transaction/${transactionId}`, {
      headers: { authorization: `Bearer ${dev.secretKey}` },
    });
    const text = (await res.text()).toLowerCase();
    for (const secret of [payer.userId, payer.username, '912345678', payer.walletId, dev.developerId]) {
      expect(text).not.toContain(secret.toLowerCase());
    }
  });
});

describe('errors', () => {
  test('a non-uuid id is 400', async () => {
    expectError(await getTransaction(app, dev.secretKey, 'WPAY000000000001-ABCDEF'), 400, /uuid/i);
  });

  test('an unknown uuid is 404', async () => {
    expectError(await getTransaction(app, dev.secretKey, UNKNOWN_UUID), 404);
  });

  test('a payment request id is not a transaction id: 404', async () => {
    expectError(await getTransaction(app, dev.secretKey, requestId), 404);
  });

  test('without an Authorization header: 401 Missing bearer token', async () => {
    expectError(await getTransaction(app, undefined, transactionId), 401, 'Missing bearer token');
  });
});
