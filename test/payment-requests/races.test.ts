import pg from 'pg';
import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { approve, balances, cancel, countTransactions, ledgerMismatches, requestPayment, statusOf } from '../helpers/payments.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';
import { until } from '../helpers/expect.js';

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

  test('a wallet re-activated between the approval\'s debit and its diagnosis: the approval succeeds (not "Insufficient funds")', async () => {
    // Found by the model test (issue 8). The debit is a conditional update; when it finds the
    // wallet SUSPENDED, the reason is read again under the row lock, and a wallet that is ACTIVE and
    // covers the amount by then is debited. Orchestrated: a statement trigger on wallets (test
    // only) holds the approval right after its first update, until this test has re-activated the
    // wallet (this connection holds the advisory lock, so its own update passes the trigger).
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 20);
    const sql = <T>(text: string, params: unknown[] = []) => app.db.orm.em.fork().execute<T[]>(text, params);
    await sql(`update wallets set status = 'SUSPENDED' where id = ?`, [user.walletId]);
    const director = new pg.Client({ connectionString: app.database.url });
    await director.connect();
    try {
      await director.query('select pg_advisory_lock(8008)');
      await sql(`create or replace function test_hold_wallet_updates() returns trigger language plpgsql as $$
        begin perform pg_advisory_xact_lock(8008); return null; end $$`);
      await sql(`create trigger test_hold_wallet_updates after update on wallets for each statement execute function test_hold_wallet_updates()`);
      const approval = approve(app.baseUrl, user.token, id);
      // The approval's update found no ACTIVE wallet and now waits in the trigger.
      await until(
        async () => (await director.query(`select 1 from pg_locks where locktype = 'advisory' and objid = 8008 and not granted`)).rows.length > 0,
        10_000,
        'the approval waiting in the trigger',
      );
      await director.query(`update wallets set status = 'ACTIVE' where id = $1`, [user.walletId]);
      await director.query('select pg_advisory_unlock(8008)');
      const res = await approval;
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.approvePaymentRequest.status).toBe('APPROVED');
      expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 30, developer: 20 });
      expect(await countTransactions(app.db, id)).toBe(1);
    } finally {
      await sql('drop trigger if exists test_hold_wallet_updates on wallets');
      await sql('drop function if exists test_hold_wallet_updates()');
      await director.end();
    }
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('refunds and approvals on one wallet and one developer at once: no deadlock, no 5xx, the books balance', async () => {
    // A refund moves money the other way; it locks the wallet, then the developer's balance, in
    // the order a payment does, so the two cannot wait for each other.
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    const paid: string[] = [];
    for (let i = 0; i < 8; i++) {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
      const res = await approve(app.baseUrl, user.token, id);
      paid.push(res.body.data.approvePaymentRequest.transactionId as string);
    }
    const pending: string[] = [];
    for (let i = 0; i < 8; i++) pending.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5));
    const refund = (transactionId: string) =>
      fetch(`${app.baseUrl}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${app.config.adminToken}` },
        body: JSON.stringify({ query: 'mutation($t: ID!) { refundTransaction(id: $t) { id } }', variables: { t: transactionId } }),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    const results = await Promise.all([...paid.map(refund), ...pending.map((id) => approve(app.baseUrl, user.token, id))]);
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.body.errors).toBeUndefined();
    }
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 1000 - 40, developer: 40 });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });
});
