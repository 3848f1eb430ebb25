import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { approve, balances, cancel, countTransactions, reject, requestPayment, statusOf, untilPast } from '../helpers/payments.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';
import { sleep } from '../helpers/expect.js';

// Requests live 1 s here; the background sweeper is parked so each test sweeps when it means to.
let app: TestApp;
let f: ReturnType<typeof factories>;
beforeAll(async () => {
  app = await startTestApp({ env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
  f = factories(app);
});
afterAll(async () => {
  await app.close();
});

test('from expiresAt on every read says EXPIRED and every decision is refused, before the sweeper ran', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
  await untilPast((await statusOf(app.baseUrl, dev.secretKey, id)).expiresAt);
  const status = await statusOf(app.baseUrl, dev.secretKey, id);
  expect(status.status).toBe('EXPIRED');
  expect(status.updatedAt).toBe(status.expiresAt);
  const [row] = await app.db.orm.em.fork().execute('select status from payment_requests where id = ?', [id]);
  expect(row.status).toBe('PENDING'); // not swept yet: the read rule alone says EXPIRED

  const a = await approve(app.baseUrl, user.token, id);
  expect(a.body.errors[0].extensions).toEqual({ code: 'PAYMENT_REQUEST_EXPIRED', statusCode: 409 });
  expect((await reject(app.baseUrl, user.token, id)).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_EXPIRED');
  const c = await cancel(app.baseUrl, dev.secretKey, id);
  expect(c.status).toBe(409);
  expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
  expect(await countTransactions(app.db, id)).toBe(0);
});

test('the sweeper writes EXPIRED once and the owner receives paymentRequestUpdated', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const client = wsClient(app.baseUrl, user.token);
  const sub = subscribe(client, 'subscription { paymentRequestUpdated { id status updatedAt transactionId } }');
  await untilSubscribed(app.gateway.services.eventHub, 1);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
  await untilPast((await statusOf(app.baseUrl, dev.secretKey, id)).expiresAt);
  expect(await app.gateway.sweeper.sweep()).toBeGreaterThanOrEqual(1);
  const event = await sub.next();
  expect(event.paymentRequestUpdated).toEqual({ id, status: 'EXPIRED', updatedAt: expect.any(String), transactionId: null });
  expect(await app.gateway.sweeper.sweep()).toBe(0);
  // No second EXPIRED: the next event this user receives is a later change of another request.
  const later = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  expect((await cancel(app.baseUrl, dev.secretKey, later)).status).toBe(200);
  expect((await sub.next()).paymentRequestUpdated).toMatchObject({ id: later, status: 'CANCELLED' });
  expect(sub.values.map((v) => v.paymentRequestUpdated.id)).toEqual([id, later]);
  const a = await approve(app.baseUrl, user.token, id);
  expect(a.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
  sub.dispose();
  await client.dispose();
});

describeOnServer('races with the sweeper', ONE_CONNECTION, () => {
  test('two instances sweeping at once (FOR UPDATE SKIP LOCKED) expire each request exactly once', async () => {
    const second = await startTestApp({ database: app.database, env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
    try {
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const ids = [];
      for (let i = 0; i < 30; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
      await untilPast((await statusOf(app.baseUrl, dev.secretKey, ids.at(-1)!)).expiresAt);
      const [a, b] = await Promise.all([app.gateway.sweeper.sweep(), second.gateway.sweeper.sweep()]);
      expect(a + b).toBe(30);
      const rows = await app.db.orm.em
        .fork()
        .execute<Array<{ n: string }>>(`select count(*) as n from payment_requests where id in (${ids.map(() => '?').join(',')}) and status = 'EXPIRED'`, ids);
      expect(Number(rows[0]!.n)).toBe(30);
    } finally {
      await second.close();
    }
  });

  test('approve racing expiry ends in exactly one state with the money consistent with it', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    // Nothing else is left to sweep: what a sweep counts below is this test's request.
    await app.gateway.sweeper.sweep();
    const outcomes: Record<string, 'APPROVED' | 'EXPIRED'> = {};
    for (let i = 0; i < 6; i++) {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      const { expiresAt } = await statusOf(app.baseUrl, dev.secretKey, id);
      // Land the approval a few milliseconds either side of expiresAt.
      await sleep(Math.max(0, new Date(expiresAt).getTime() - Date.now() - 15 + i * 4));
      const [res, sweptDuring] = await Promise.all([approve(app.baseUrl, user.token, id), app.gateway.sweeper.sweep()]);
      await untilPast(expiresAt);
      const sweptAfter = await app.gateway.sweeper.sweep();
      const final = await statusOf(app.baseUrl, dev.secretKey, id);
      const n = await countTransactions(app.db, id);
      if (final.status === 'APPROVED') {
        expect(res.body.data.approvePaymentRequest.status).toBe('APPROVED');
        expect(n).toBe(1);
        expect(sweptDuring + sweptAfter).toBe(0);
      } else {
        expect(final.status).toBe('EXPIRED');
        expect(res.body.errors[0].extensions.code).toMatch(/PAYMENT_REQUEST_(EXPIRED|NOT_PENDING)/);
        expect(n).toBe(0);
        expect(sweptDuring + sweptAfter).toBe(1); // written EXPIRED exactly once
      }
      outcomes[id] = final.status;
    }
    // What the REST reads said is what the rows hold, and the money follows the approvals.
    const rows = await app.db.orm.em
      .fork()
      .execute<Array<{ id: string; status: string }>>(`select id, status from payment_requests where id in (${Object.keys(outcomes).map(() => '?').join(',')})`, Object.keys(outcomes));
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual(outcomes);
    const approved = Object.values(outcomes).filter((s) => s === 'APPROVED').length;
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 1000 - approved, developer: approved });
  });
});
