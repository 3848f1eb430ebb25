// POST /api/v1/wallet/request-payment: the success shape, what is stored, and the wallet's state.
import { WalletStatus } from '../../src/accounts/wallet.entity.js';
import { factories, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, ISO_DATE_RE, UUID_RE } from '../helpers/expect.js';
import { countRows, getStatus, requestPayment, requestPaymentRaw, validBody, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let dev: Awaited<ReturnType<ReturnType<typeof factories>['developer']>>;

beforeAll(async () => {
  app = await startTestApp({ env: { ...REST_TEST_ENV } });
  f = factories(app);
  dev = await f.developer();
});
afterAll(async () => {
  await app.close();
});

const setWalletStatus = (walletId: string, status: WalletStatus) =>
  app.gateway.services.accounts.setWalletStatus(app.gateway.services.works.begin(), walletId, status);

describe('success', () => {
  test('answers 200 with exactly success, message, paymentRequestId, status PENDING, expiresAt and paymentUrl', async () => {
    const user = await f.user();
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    expectOk(res);
    expect(res.body).toEqual({
      success: true,
      message: expect.any(String),
      paymentRequestId: expect.stringMatching(UUID_RE),
      status: 'PENDING',
      expiresAt: expect.stringMatching(ISO_DATE_RE),
      paymentUrl: expect.stringMatching(/^http:\/\/localhost:\d+\/pay\/[A-Za-z0-9_-]{24}$/),
    });
    expect(res.body.message.length).toBeGreaterThan(0);
  });

  test('expiresAt is createdAt + 300 seconds', async () => {
    const user = await f.user();
    const created = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    expectOk(created);
    const status = await getStatus(app, dev.secretKey, created.body.paymentRequestId);
    expectOk(status);
    expect(status.body.expiresAt).toBe(created.body.expiresAt);
    expect(Date.parse(created.body.expiresAt) - Date.parse(status.body.createdAt)).toBe(300_000);
  });

  test('createdAt is the moment of the call', async () => {
    const user = await f.user();
    const before = Date.now();
    const created = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    const after = Date.now();
    const status = await getStatus(app, dev.secretKey, created.body.paymentRequestId);
    const createdAt = Date.parse(status.body.createdAt);
    expect(createdAt).toBeGreaterThanOrEqual(before);
    expect(createdAt).toBeLessThanOrEqual(after);
  });

  test('stores the request as given: amount, wallet currency, description, merchantName, PENDING', async () => {
    const user = await f.user({ currency: 'USD' });
    const created = await requestPayment(
      app,
      dev.secretKey,
      validBody(user.walletId, { amount: 99.99, description: 'Two flat whites', merchantName: 'Blue Bean' }),
    );
    expectOk(created);
    const status = await getStatus(app, dev.secretKey, created.body.paymentRequestId);
    expect(status.body).toMatchObject({
      id: created.body.paymentRequestId,
      status: 'PENDING',
      amount: 99.99,
      currency: 'USD',
      description: 'Two flat whites',
      merchantName: 'Blue Bean',
      transactionId: null,
    });
  });

  test('each call creates a new request with its own id', async () => {
    const user = await f.user();
    const first = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    const second = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    expectOk(first);
    expectOk(second);
    expect(first.body.paymentRequestId).not.toBe(second.body.paymentRequestId);
  });

  test('the wallet need not hold the amount yet (funds are checked at approval)', async () => {
    const user = await f.user({ balance: 0 });
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId, { amount: 500 }));
    expectOk(res);
    expect(res.body.status).toBe('PENDING');
  });

  test.each([0.01, 0.1, 19.99, 1234.5, 999_999.99, 1_000_000])('accepts amount %p and stores it exactly', async (amount) => {
    const user = await f.user();
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId, { amount }));
    expectOk(res);
    const status = await getStatus(app, dev.secretKey, res.body.paymentRequestId);
    expect(status.body.amount).toBe(amount);
  });

  test('description of 255 characters is accepted, and surrounding whitespace is trimmed away', async () => {
    const user = await f.user();
    const description = 'd'.repeat(255);
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId, { description: `   ${description}\t\n ` }));
    expectOk(res);
    const status = await getStatus(app, dev.secretKey, res.body.paymentRequestId);
    expect(status.body.description).toBe(description);
  });

  test('merchantName of 100 characters is accepted, and surrounding whitespace is trimmed away', async () => {
    const user = await f.user();
    const merchantName = 'M'.repeat(100);
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId, { merchantName: `  ${merchantName}  ` }));
    expectOk(res);
    const status = await getStatus(app, dev.secretKey, res.body.paymentRequestId);
    expect(status.body.merchantName).toBe(merchantName);
  });

  test('single-character description and merchantName are accepted', async () => {
    const user = await f.user();
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId, { description: 'x', merchantName: 'y' }));
    expectOk(res);
  });

  test('a JSON content type with a charset parameter is accepted', async () => {
    const user = await f.user();
    const withCharset = await requestPaymentRaw(app, dev.secretKey, JSON.stringify(validBody(user.walletId)), 'application/json; charset=utf-8');
    expect(withCharset.status).toBe(200);
    expect(withCharset.body).toMatchObject({ success: true, status: 'PENDING' });
  });
});

describe('the wallet', () => {
  test('an unknown walletId is 404 and creates nothing', async () => {
    const before = await countRows(app, 'payment_requests');
    const res = await requestPayment(app, dev.secretKey, validBody('wlt_doesNotExist000000000000'));
    expectError(res, 404, /wallet/i);
    expect(await countRows(app, 'payment_requests')).toBe(before);
  });

  test('a SUSPENDED wallet is 400 and creates nothing', async () => {
    const user = await f.user();
    await setWalletStatus(user.walletId, WalletStatus.SUSPENDED);
    const before = await countRows(app, 'payment_requests');
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    expectError(res, 400, /not active/i);
    expect(await countRows(app, 'payment_requests')).toBe(before);
  });

  test('a CLOSED wallet is 400 and creates nothing', async () => {
    const user = await f.user();
    await setWalletStatus(user.walletId, WalletStatus.CLOSED);
    const before = await countRows(app, 'payment_requests');
    const res = await requestPayment(app, dev.secretKey, validBody(user.walletId));
    expectError(res, 400, /not active/i);
    expect(await countRows(app, 'payment_requests')).toBe(before);
  });

  test('a wallet made ACTIVE again accepts requests again', async () => {
    const user = await f.user();
    await setWalletStatus(user.walletId, WalletStatus.SUSPENDED);
    expectError(await requestPayment(app, dev.secretKey, validBody(user.walletId)), 400);
    await setWalletStatus(user.walletId, WalletStatus.ACTIVE);
    expectOk(await requestPayment(app, dev.secretKey, validBody(user.walletId)));
  });
});

describe('authentication', () => {
  test('without an Authorization header: 401 Missing bearer token, nothing created', async () => {
    const user = await f.user();
    const before = await countRows(app, 'payment_requests');
    const res = await requestPayment(app, undefined, validBody(user.walletId));
    expectError(res, 401, 'Missing bearer token');
    expect(await countRows(app, 'payment_requests')).toBe(before);
  });
});
