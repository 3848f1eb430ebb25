import { TEST_PIN, useTestApp, http, type TestApp, type factories } from '../helpers/app.js';
import { APPROVE_WITH_PIN, approve, balances, cancel, countTransactions, ledgerMismatches, reject, requestPayment, statusOf } from '../helpers/payments.js';
import { WalletStatus } from '../../src/accounts/wallet.entity.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '600000' } }, (x) => ({ app, f } = x));

describe('PENDING → APPROVED', () => {
  test('moves the money once, creates a COMPLETED transaction and links it', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 30.25);
    const res = await approve(app.baseUrl, user.token, id);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.approvePaymentRequest).toEqual({ id, status: 'APPROVED', transactionId: expect.any(String) });
    const txId = res.body.data.approvePaymentRequest.transactionId;

    const status = await statusOf(app.baseUrl, dev.secretKey, id);
    expect(status).toMatchObject({ status: 'APPROVED', transactionId: txId });
    const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${txId}`, { token: dev.secretKey });
    expect(tx.status).toBe(200);
    expect(tx.body).toMatchObject({ id: txId, amount: 30.25, currency: 'ETB', status: 'COMPLETED', type: 'WALLET_PAYMENT', paymentProvider: 'WALLET' });
    expect(tx.body.paymentReference).toMatch(/^WPAY\d{12}-[A-Z0-9]{6}$/);

    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 69.75, developer: 30.25 });
    const entries = await app.db.orm.em
      .fork()
      .execute('select kind, wallet_id, developer_id, amount from ledger_entries where transaction_id = ? order by amount', [txId]);
    expect(entries).toEqual([
      { kind: 'PAYMENT', wallet_id: user.walletId, developer_id: null, amount: '-30.25' },
      { kind: 'PAYMENT', wallet_id: null, developer_id: dev.developerId, amount: '30.25' },
    ]);
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('INSUFFICIENT_FUNDS leaves the request PENDING and moves nothing', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 5 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5.01);
    const res = await approve(app.baseUrl, user.token, id);
    expect(res.body.errors[0].extensions).toEqual({ code: 'INSUFFICIENT_FUNDS', statusCode: 402 });
    expect(res.body.data).toBeNull();
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 5, developer: 0 });
    expect(await countTransactions(app.db, id)).toBe(0);
  });

  test('an exact balance can be spent to zero', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 5.01 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5.01);
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 0, developer: 5.01 });
  });

  test('WALLET_NOT_ACTIVE when the wallet was suspended after the request was made', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
    await app.gateway.services.accounts.setWalletStatus(app.gateway.services.works.begin(), user.walletId, WalletStatus.SUSPENDED);
    const res = await approve(app.baseUrl, user.token, id);
    expect(res.body.errors[0].extensions.code).toBe('WALLET_NOT_ACTIVE');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 50, developer: 0 });
  });

  test("another user cannot approve or reject someone else's request (NOT_FOUND)", async () => {
    const dev = await f.developer();
    const owner = await f.user({ balance: 50 });
    const other = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, owner.walletId, 10);
    for (const res of [await approve(app.baseUrl, other.token, id), await reject(app.baseUrl, other.token, id)]) {
      expect(res.body.errors[0].extensions).toEqual({ code: 'NOT_FOUND', statusCode: 404 });
    }
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });

  test('a developer key or no token cannot approve', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
    expect((await approve(app.baseUrl, dev.secretKey, id)).body.errors[0].extensions.code).toBe('FORBIDDEN');
    const anonymous = await http(app.baseUrl, '/graphql', {
      body: { query: APPROVE_WITH_PIN, variables: { id, pin: TEST_PIN } },
    });
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });
});

describe('PENDING → REJECTED / CANCELLED', () => {
  test('the user rejects', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
    expect((await reject(app.baseUrl, user.token, id)).body.data.rejectPaymentRequest).toEqual({ id, status: 'REJECTED' });
    expect(await statusOf(app.baseUrl, dev.secretKey, id)).toMatchObject({ status: 'REJECTED', transactionId: null });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 50, developer: 0 });
  });

  test('the developer cancels', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
    const res = await cancel(app.baseUrl, dev.secretKey, id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'CANCELLED', transactionId: null });
  });
});

describe('terminal states refuse every further change', () => {
  const terminal = {
    APPROVED: (token: string, _key: string, id: string) => approve(app.baseUrl, token, id),
    REJECTED: (token: string, _key: string, id: string) => reject(app.baseUrl, token, id),
    CANCELLED: (_token: string, key: string, id: string) => cancel(app.baseUrl, key, id),
  };
  for (const [state, reach] of Object.entries(terminal)) {
    test(`${state} refuses approve, reject and cancel, and the money stays as it was`, async () => {
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
      await reach(user.token, dev.secretKey, id);
      const before = await balances(app.db, user.walletId, dev.developerId);
      const a = await approve(app.baseUrl, user.token, id);
      expect(a.body.errors[0].extensions).toEqual({ code: 'PAYMENT_REQUEST_NOT_PENDING', statusCode: 409 });
      const r = await reject(app.baseUrl, user.token, id);
      expect(r.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
      const c = await cancel(app.baseUrl, dev.secretKey, id);
      expect(c.status).toBe(409);
      expect(c.body).toEqual({ statusCode: 409, message: expect.stringContaining(state) });
      expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe(state);
      expect(await balances(app.db, user.walletId, dev.developerId)).toEqual(before);
      expect(await countTransactions(app.db, id)).toBe(state === 'APPROVED' ? 1 : 0);
    });
  }
});

test('myPendingPaymentRequests lists only my PENDING requests, oldest first', async () => {
  const dev = await f.developer();
  const me = await f.user({ balance: 100 });
  const other = await f.user({ balance: 100 });
  const first = await requestPayment(app.baseUrl, dev.secretKey, me.walletId, 1);
  const second = await requestPayment(app.baseUrl, dev.secretKey, me.walletId, 2);
  const decided = await requestPayment(app.baseUrl, dev.secretKey, me.walletId, 3);
  await requestPayment(app.baseUrl, dev.secretKey, other.walletId, 4);
  await reject(app.baseUrl, me.token, decided);
  const res = await http(app.baseUrl, '/graphql', {
    token: me.token,
    body: { query: '{ myPendingPaymentRequests { id amount currency description merchantName status createdAt expiresAt } }' },
  });
  expect(res.body.data.myPendingPaymentRequests.map((p: { id: string }) => p.id)).toEqual([first, second]);
  expect(res.body.data.myPendingPaymentRequests[0]).toMatchObject({ amount: 1, status: 'PENDING', merchantName: 'Test Shop' });
});
