/**
 * The PIN lock holds across instances (issue 24): 40 wrong PINs sent in parallel to two gateway
 * instances on one database buy exactly PIN_MAX_ATTEMPTS tries; the rest are refused as locked.
 * Each is compared outside any transaction and recorded by a conditional update (issue 30), which
 * still counts exactly.
 * And parallel approvals with the right PIN all pass verification (the payer's double tap is not
 * taken for guessing); the approval itself still happens once.
 */
import { factories, startSecondInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';
import { approve, balances, countTransactions, requestPayment, statusOf } from '../helpers/payments.js';

describeOnServer('the PIN lock under parallel guesses on two instances', ONE_CONNECTION, () => {
  let first: TestApp;
  let second: TestApp;
  beforeAll(async () => {
    first = await startTestApp();
    second = await startSecondInstance(first);
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  test('40 parallel wrong PINs over two instances: 5 VERIFICATION_FAILED, 35 VERIFICATION_LOCKED, one lock counted, nothing moved', async () => {
    const f = factories(first);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const id = await requestPayment(first.baseUrl, dev.secretKey, user.walletId, 10);
    const guesses = Array.from({ length: 40 }, (_, i) => String(100000 + i));
    const answers = await Promise.all(guesses.map((pin, i) => approve((i % 2 ? second : first).baseUrl, user.token, id, pin)));
    const codes = answers.map((r) => r.body.errors?.[0]?.extensions?.code as string);
    expect(codes.filter((c) => c === 'VERIFICATION_FAILED')).toHaveLength(5);
    expect(codes.filter((c) => c === 'VERIFICATION_LOCKED')).toHaveLength(35);
    const [row] = await first.db.orm.em.fork().execute<Array<{ failures: number; locks: number; locked: boolean }>>(
      'select failures, locks, locked_until > now() as locked from wallet_pins where wallet_id = ?',
      [user.walletId],
    );
    expect(row).toEqual({ failures: 5, locks: 1, locked: true });
    expect((await statusOf(first.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await balances(first.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    expect(await countTransactions(first.db, id)).toBe(0);
  });

  test('20 parallel approvals with the right PIN over two instances: one APPROVED, the rest PAYMENT_REQUEST_NOT_PENDING, never locked', async () => {
    const f = factories(first);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const id = await requestPayment(first.baseUrl, dev.secretKey, user.walletId, 10);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => approve((i % 2 ? second : first).baseUrl, user.token, id)));
    const outcomes = answers.map((r) => r.body.data?.approvePaymentRequest?.status ?? r.body.errors?.[0]?.extensions?.code);
    expect(outcomes.filter((o) => o === 'APPROVED')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'APPROVED')).toEqual(Array(19).fill('PAYMENT_REQUEST_NOT_PENDING'));
    expect(await balances(first.db, user.walletId, dev.developerId)).toEqual({ wallet: 90, developer: 10 });
  });
});
