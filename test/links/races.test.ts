import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { approve, balances, ledgerMismatches, requestPayment, statusOf } from '../helpers/payments.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

// Races of links and holds (SPEC §15, #25): they race only where transactions run side by side,
// on a PostgreSQL server (TEST_DATABASE_URL; CI sets it).
describeOnServer('links and holds under concurrency', ONE_CONNECTION, () => {
  let app: TestApp;
  let f: ReturnType<typeof factories>;
  beforeAll(async () => {
    app = await startTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
    f = factories(app);
  });
  afterAll(async () => {
    await app.close();
  });

  const sql = <T = Record<string, unknown>>(text: string, values: unknown[] = []) => app.db.orm.em.fork().execute<T[]>(text, values);
  const codeOf = (res: { body: any }) => res.body.errors?.[0]?.extensions?.code ?? res.body.data?.approvePaymentRequest?.status;

  test.each(['AUTOMATIC', 'MANUAL'])('%s: ten users approving one open request at once: one wins, exactly one debit or hold', async (capture) => {
    const dev = await f.developer();
    const users = await Promise.all(Array.from({ length: 10 }, () => f.user({ balance: 50 })));
    const created = await http(app.baseUrl, '/api/v1/wallet/payment-links', {
      token: dev.secretKey,
      body: { amount: 7.5, description: 'Table 9', merchantName: 'Race Café', capture },
    });
    const id = created.body.paymentRequestId as string;
    const results = await Promise.all(users.map((u) => approve(app.baseUrl, u.token, id)));
    const codes = results.map(codeOf);
    expect(codes.filter((c) => c === 'APPROVED')).toHaveLength(1);
    expect(codes.filter((c) => c !== 'APPROVED')).toEqual(Array(9).fill('PAYMENT_REQUEST_NOT_PENDING'));
    const winner = users[codes.indexOf('APPROVED')]!;
    const [bound] = await sql<{ wallet_id: string }>('select wallet_id from payment_requests where id = ?', [id]);
    expect(bound!.wallet_id).toBe(winner.walletId);
    expect(await sql('select 1 from transactions where payment_request_id = ?', [id])).toHaveLength(1);
    const wallets = await sql<{ id: string; balance: string; held: string }>('select id, balance, held from wallets where id in (?)', [users.map((u) => u.walletId)]);
    for (const w of wallets) {
      const mine = w.id === winner.walletId;
      expect([w.id === winner.walletId, Number(w.balance), Number(w.held)]).toEqual(
        capture === 'MANUAL' ? [mine, 50, mine ? 7.5 : 0] : [mine, mine ? 42.5 : 50, 0],
      );
    }
    expect((await balances(app.db, winner.walletId, dev.developerId)).developer).toBe(capture === 'MANUAL' ? 0 : 7.5);
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('capture against void against the hold’s expiry sweep (two sweepers): one outcome, exact balances, a clean ledger', async () => {
    for (let round = 0; round < 12; round++) {
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 40, { capture: 'MANUAL' });
      const txId = (await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.transactionId as string;
      await sql(`update transactions set hold_expires_at = now() - interval '1 second' where id = ?`, [txId]);
      const post = (verb: string) => http(app.baseUrl, `/api/v1/wallet/transaction/${txId}/${verb}`, { method: 'POST', token: dev.secretKey });
      const sweep = () => app.gateway.services.transactions.expireHolds(app.gateway.services.works.begin());
      const [captured, voided, swept1, swept2] = await Promise.all([post('capture'), post('void'), sweep(), sweep()]);
      const winners = [captured.status === 200, voided.status === 200, swept1 + swept2 === 1].filter(Boolean);
      expect(winners).toHaveLength(1);
      expect(swept1 + swept2).toBeLessThanOrEqual(1);
      for (const r of [captured, voided]) if (r.status !== 200) expect([r.status, r.body.statusCode]).toEqual([409, 409]);
      const [row] = await sql<{ status: string; captured_amount: string | null }>('select status, captured_amount from transactions where id = ?', [txId]);
      const wallet = await sql<{ balance: string; held: string }>('select balance, held from wallets where id = ?', [user.walletId]);
      if (captured.status === 200) {
        expect(row).toEqual({ status: 'COMPLETED', captured_amount: '40.00' });
        expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 60, developer: 40 });
      } else {
        expect(row).toEqual({ status: 'CANCELLED', captured_amount: null });
        expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
      }
      expect(Number(wallet[0]!.held)).toBe(0);
      const events = await sql<{ type: string }>(`select type from events where payment_request_id = ? and type like 'transaction.%'`, [id]);
      expect(events.map((e) => e.type)).toEqual([captured.status === 200 ? 'transaction.captured' : 'transaction.voided']);
      expect(await ledgerMismatches(app.db)).toEqual([]);
    }
  });

  test('approving MANUAL and AUTOMATIC requests while other holds use most of the balance: never over-reserved', async () => {
    for (let round = 0; round < 8; round++) {
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      // Holds of 90 already: 10 available.
      for (const amount of [50, 40]) {
        const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount, { capture: 'MANUAL' });
        expect(codeOf(await approve(app.baseUrl, user.token, id))).toBe('APPROVED');
      }
      const ids = [
        await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 8, { capture: 'MANUAL' }),
        await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 8, { capture: 'MANUAL' }),
        await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 8),
        await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 8),
      ];
      const codes = (await Promise.all(ids.map((id) => approve(app.baseUrl, user.token, id)))).map(codeOf);
      expect(codes.filter((c) => c === 'APPROVED')).toHaveLength(1);
      expect(codes.filter((c) => c !== 'APPROVED')).toEqual(Array(3).fill('INSUFFICIENT_FUNDS'));
      const [w] = await sql<{ balance: string; held: string }>('select balance, held from wallets where id = ?', [user.walletId]);
      const won = codes.indexOf('APPROVED');
      expect([Number(w!.balance), Number(w!.held)]).toEqual(won < 2 ? [100, 98] : [92, 90]);
      for (const [i, id] of ids.entries()) expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe(i === won ? 'APPROVED' : 'PENDING');
      expect(await ledgerMismatches(app.db)).toEqual([]);
    }
  });
});
