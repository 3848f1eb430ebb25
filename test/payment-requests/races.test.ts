import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { approve, balances, cancel, countTransactions, ledgerMismatches, requestPayment, statusOf } from '../helpers/payments.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

// Concurrent decisions on one request or one wallet: they race only where transactions run side
// by side, on a PostgreSQL server (TEST_DATABASE_URL; CI sets it).
describeOnServer('concurrent decisions', ONE_CONNECTION, () => {
  let app: TestApp;
  let f: ReturnType<typeof factories>;
  beforeAll(async () => {
    app = await startTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
    f = factories(app);
  });
  afterAll(async () => {
    await app.close();
  });

  test('50 concurrent approvals of one request: exactly one transaction and one debit', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 7.5);
    const results = await Promise.all(Array.from({ length: 50 }, () => approve(app.baseUrl, user.token, id)));
    const ok = results.filter((r) => r.body.data?.approvePaymentRequest?.status === 'APPROVED');
    expect(ok).toHaveLength(1);
    for (const r of results.filter((x) => !x.body.data?.approvePaymentRequest)) {
      expect(r.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
    }
    expect(await countTransactions(app.db, id)).toBe(1);
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 92.5, developer: 7.5 });
    const [entries] = await app.db.orm.em.fork().execute('select count(*)::int as n from ledger_entries where wallet_id = ? and kind = ?', [user.walletId, 'PAYMENT']);
    expect(entries.n).toBe(1);
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('concurrent approvals against a limited balance never overdraw and the ledger matches', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 25 });
    const ids = [];
    for (let i = 0; i < 12; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3));
    const results = await Promise.all(ids.map((id) => approve(app.baseUrl, user.token, id)));
    const approved = results.filter((r) => r.body.data?.approvePaymentRequest?.status === 'APPROVED').length;
    const refused = results.filter((r) => r.body.errors?.[0]?.extensions?.code === 'INSUFFICIENT_FUNDS').length;
    expect(approved).toBe(8); // 8 × 3 = 24 ≤ 25 < 27
    expect(refused).toBe(4);
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 1, developer: 24 });
    expect(await ledgerMismatches(app.db)).toEqual([]);
    const states = await Promise.all(ids.map((id) => statusOf(app.baseUrl, dev.secretKey, id)));
    expect(states.filter((s) => s.status === 'PENDING')).toHaveLength(4);
  });

  test('cancel racing approve: one final state per request, money consistent with it', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    let approvedCount = 0;
    for (let i = 0; i < 10; i++) {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
      const [c, a] = await Promise.all([cancel(app.baseUrl, dev.secretKey, id), approve(app.baseUrl, user.token, id)]);
      const final = await statusOf(app.baseUrl, dev.secretKey, id);
      const cancelled = c.status === 200;
      const approved = a.body.data?.approvePaymentRequest?.status === 'APPROVED';
      expect(cancelled !== approved).toBe(true); // exactly one of the two calls won
      expect(final.status).toBe(cancelled ? 'CANCELLED' : 'APPROVED');
      if (cancelled) expect(a.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
      else expect(c.status).toBe(409);
      expect(await countTransactions(app.db, id)).toBe(approved ? 1 : 0);
      if (approved) approvedCount++;
    }
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 1000 - 2 * approvedCount, developer: 2 * approvedCount });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });
});
