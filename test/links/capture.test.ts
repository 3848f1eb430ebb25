import { useTestApp, http, gql, type factories, type TestApp } from '../helpers/app.js';
import { approve, balances, ledgerMismatches, requestPayment, statusOf } from '../helpers/payments.js';
import { expectError } from '../helpers/expect.js';

// Reserve, then capture (SPEC §15, #25): a MANUAL approval holds the amount; capture moves it,
// void releases it, and a hold past HOLD_TTL_HOURS is voided by the sweep.
let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '600000' } }, (x) => ({ app, f } = x));

const wallet = (token: string) => gql(app.baseUrl, '{ myWallet { balance availableBalance } }', {}, token).then((r) => r.body.data.myWallet);
const tx = (key: string, id: string) => http(app.baseUrl, `/api/v1/wallet/transaction/${id}`, { token: key });
const capture = (key: string, id: string, body?: unknown) =>
  http(app.baseUrl, `/api/v1/wallet/transaction/${id}/capture`, { method: 'POST', token: key, ...(body === undefined ? {} : { body }) });
const voidTx = (key: string, id: string) => http(app.baseUrl, `/api/v1/wallet/transaction/${id}/void`, { method: 'POST', token: key });
const refund = (id: string, amount?: number) =>
  gql(app.baseUrl, 'mutation($id: ID!, $a: Float) { refundTransaction(id: $id, amount: $a) { status refundedAmount } }', { id, a: amount }, app.config.adminToken);
const held = async (walletId: string) =>
  Number((await app.db.orm.em.fork().execute<Array<{ held: string }>>('select held from wallets where id = ?', [walletId]))[0]!.held);

/** A MANUAL request of `amount` approved by a user with `balance`: the hold's transaction id. */
async function hold(amount: number, balance = 100) {
  const dev = await f.developer();
  const user = await f.user({ balance });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount, { capture: 'MANUAL' });
  const res = await approve(app.baseUrl, user.token, id);
  expect(res.body.data.approvePaymentRequest.status).toBe('APPROVED');
  return { dev, user, id, txId: res.body.data.approvePaymentRequest.transactionId as string };
}

describe('approving a MANUAL request holds the amount', () => {
  test('the transaction is PENDING with capturedAmount null; the balance is unchanged, availableBalance drops, nothing reaches the merchant', async () => {
    const { dev, user, id, txId } = await hold(30);
    const body = (await tx(dev.secretKey, txId)).body;
    expect(body).toMatchObject({ id: txId, status: 'PENDING', amount: 30, capturedAmount: null });
    expect('capturedAmount' in body).toBe(true);
    expect(await statusOf(app.baseUrl, dev.secretKey, id)).toMatchObject({ status: 'APPROVED', transactionId: txId });
    expect(await wallet(user.token)).toEqual({ balance: 100, availableBalance: 70 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    expect(await ledgerMismatches(app.db)).toEqual([]);
    // The admin graph shows the hold: on the wallet, and the transaction's capturedAmount.
    const admin = await gql(
      app.baseUrl,
      'query($w: String!) { paymentRequests(filter: { walletId: $w }) { nodes { wallet { balance held availableBalance } } } }',
      { w: user.walletId },
      app.config.adminToken,
    );
    expect(admin.body.data.paymentRequests.nodes[0].wallet).toEqual({ balance: 100, held: 30, availableBalance: 70 });
    const adminTx = await gql(app.baseUrl, '{ transactions(filter: { status: PENDING }) { nodes { id capturedAmount } } }', {}, app.config.adminToken);
    expect(adminTx.body.data.transactions.nodes).toContainEqual({ id: txId, capturedAmount: null });
  });

  test('an AUTOMATIC approval may spend only the available balance', async () => {
    const { dev, user } = await hold(80);
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 30);
    expect((await approve(app.baseUrl, user.token, id)).body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
    const fits = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 20);
    expect((await approve(app.baseUrl, user.token, fits)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    expect(await wallet(user.token)).toEqual({ balance: 80, availableBalance: 0 });
  });

  test('a second hold beyond the available balance is INSUFFICIENT_FUNDS and leaves the request PENDING', async () => {
    const { dev, user } = await hold(60);
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 41, { capture: 'MANUAL' });
    expect((await approve(app.baseUrl, user.token, id)).body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await held(user.walletId)).toBe(60);
  });
});

describe('capture', () => {
  test('all of it (no body): COMPLETED, capturedAmount = amount, the money moves, the hold is gone', async () => {
    const { dev, user, txId } = await hold(30);
    const res = await capture(dev.secretKey, txId);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: txId, status: 'COMPLETED', amount: 30, capturedAmount: 30 });
    expect(await wallet(user.token)).toEqual({ balance: 70, availableBalance: 70 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 70, developer: 30 });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('part of it: capturedAmount set, amount stays the authorised one, the rest released; refunds only up to the captured amount', async () => {
    const { dev, user, txId } = await hold(30);
    const res = await capture(dev.secretKey, txId, { amount: 12.34 });
    expect(res.body).toMatchObject({ status: 'COMPLETED', amount: 30, capturedAmount: 12.34 });
    expect(await wallet(user.token)).toEqual({ balance: 87.66, availableBalance: 87.66 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 87.66, developer: 12.34 });
    expect((await refund(txId, 12.35)).body.errors[0].extensions.code).toBe('REFUND_EXCEEDS_REMAINING');
    expect((await refund(txId)).body.data.refundTransaction).toEqual({ status: 'REFUNDED', refundedAmount: 12.34 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test.each([
    ['zero', { amount: 0 }],
    ['negative', { amount: -1 }],
    ['above the hold', { amount: 30.01 }],
    ['more than 2 decimals', { amount: 1.005 }],
    ['a string', { amount: '5' }],
    ['an unknown field', { amt: 5 }],
  ])('%s: 400, nothing changes', async (_name, body) => {
    const { dev, user, txId } = await hold(30);
    expectError(await capture(dev.secretKey, txId, body), 400);
    expect((await tx(dev.secretKey, txId)).body).toMatchObject({ status: 'PENDING', capturedAmount: null });
    expect(await held(user.walletId)).toBe(30);
  });

  test('not PENDING (captured, voided, an AUTOMATIC payment): 409; another developer’s: 404', async () => {
    const { dev, user, txId } = await hold(10);
    expect((await capture(dev.secretKey, txId)).status).toBe(200);
    expectError(await capture(dev.secretKey, txId), 409);
    expectError(await voidTx(dev.secretKey, txId), 409);
    const voided = await hold(10);
    expect((await voidTx(voided.dev.secretKey, voided.txId)).status).toBe(200);
    expectError(await capture(voided.dev.secretKey, voided.txId), 409);
    expectError(await voidTx(voided.dev.secretKey, voided.txId), 409);
    const auto = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const autoTx = (await approve(app.baseUrl, user.token, auto)).body.data.approvePaymentRequest.transactionId;
    expectError(await capture(dev.secretKey, autoTx), 409);
    const other = await hold(10);
    expectError(await capture(dev.secretKey, other.txId), 404);
    expectError(await voidTx(dev.secretKey, other.txId), 404);
    expectError(await capture(dev.secretKey, crypto.randomUUID()), 404);
    expect(await held(other.user.walletId)).toBe(10);
  });
});

describe('void and the hold’s expiry', () => {
  test('void: CANCELLED, the whole hold released, no money moved; refund of it: 409', async () => {
    const { dev, user, txId } = await hold(25);
    const res = await voidTx(dev.secretKey, txId);
    expect(res.body).toMatchObject({ status: 'CANCELLED', capturedAmount: null, amount: 25 });
    expect(await wallet(user.token)).toEqual({ balance: 100, availableBalance: 100 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    expect((await refund(txId)).body.errors[0].extensions.code).toBe('CONFLICT');
  });

  test('a held (PENDING) transaction cannot be refunded', async () => {
    const { txId } = await hold(5);
    expect((await refund(txId)).body.errors[0].extensions.code).toBe('CONFLICT');
  });

  test('a hold past HOLD_TTL_HOURS is voided by the sweep, once, with transaction.voided; a hold within it is left', async () => {
    const late = await hold(40);
    const fresh = await hold(15);
    const expect168h = await app.db.orm.em
      .fork()
      .execute<Array<{ hours: number }>>(`select extract(epoch from hold_expires_at - created_at) / 3600 as hours from transactions where id = ?`, [fresh.txId]);
    expect(Number(expect168h[0]!.hours)).toBe(168);
    await app.db.orm.em.fork().execute(`update transactions set hold_expires_at = now() - interval '1 second' where id = ?`, [late.txId]);
    expect(await app.gateway.holdSweeper.sweep()).toBe(1);
    expect(await app.gateway.holdSweeper.sweep()).toBe(0);
    expect((await tx(late.dev.secretKey, late.txId)).body.status).toBe('CANCELLED');
    expect((await tx(fresh.dev.secretKey, fresh.txId)).body.status).toBe('PENDING');
    expect(await wallet(late.user.token)).toEqual({ balance: 100, availableBalance: 100 });
    const events = await http(app.baseUrl, `/api/v1/events?paymentRequestId=${late.id}`, { token: late.dev.secretKey });
    expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(['payment_request.created', 'payment_request.approved', 'transaction.voided']);
    expect(events.body.data[2].data.transaction).toMatchObject({ id: late.txId, status: 'CANCELLED', capturedAmount: null });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('capture and void write transaction.captured / transaction.voided with the transaction body', async () => {
    const a = await hold(9);
    await capture(a.dev.secretKey, a.txId, { amount: 4 });
    const events = await http(app.baseUrl, `/api/v1/events?paymentRequestId=${a.id}&type=transaction.captured`, { token: a.dev.secretKey });
    expect(events.body.data).toHaveLength(1);
    expect(events.body.data[0].data.transaction).toMatchObject({ status: 'COMPLETED', capturedAmount: 4, amount: 9 });
  });
});

describe('the database keeps the invariants itself', () => {
  test('held above the balance, a negative hold, a capture above the amount: refused by CHECKs', async () => {
    const { user, txId } = await hold(10, 20);
    const em = () => app.db.orm.em.fork();
    await expect(em().execute(`update wallets set held = balance + 1 where id = ?`, [user.walletId])).rejects.toThrow(/wallets_held_check/);
    await expect(em().execute(`update wallets set held = -1 where id = ?`, [user.walletId])).rejects.toThrow(/wallets_held_check/);
    await expect(em().execute(`update wallets set balance = 5 where id = ?`, [user.walletId])).rejects.toThrow(/wallets_held_check/);
    await expect(
      em().execute(`update transactions set status = 'COMPLETED', captured_amount = amount + 1 where id = ?`, [txId]),
    ).rejects.toThrow(/transactions_captured_amount_check/);
    await expect(em().execute(`update transactions set refunded_amount = 1 where id = ?`, [txId])).rejects.toThrow(/transactions_refunded_amount_check/);
  });

  test('ledgerCheck reports a held total that differs from the sum of the active holds', async () => {
    const { user } = await hold(10);
    await app.db.orm.em.fork().execute(`update wallets set held = held + 1 where id = ?`, [user.walletId]);
    try {
      const check = await gql(app.baseUrl, '{ ledgerCheck { ok mismatches { kind id balance ledgerSum } } }', {}, app.config.adminToken);
      expect(check.body.data.ledgerCheck.ok).toBe(false);
      expect(check.body.data.ledgerCheck.mismatches).toContainEqual({ kind: 'HOLD', id: user.walletId, balance: 11, ledgerSum: 10 });
    } finally {
      await app.db.orm.em.fork().execute(`update wallets set held = held - 1 where id = ?`, [user.walletId]);
    }
  });
});
