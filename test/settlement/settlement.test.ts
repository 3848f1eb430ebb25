// Settlement through the doors (SPEC §16): fees taken when money reaches the merchant, the balance
// and its balance transactions, payouts made, paid and failed, and the CSV report.
import { gql, http, startTestApp, factories, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { expectError, UUID_RE } from '../helpers/expect.js';
import { REST_TEST_ENV } from '../helpers/rest.js';
import { checkLedger } from '../../src/ledger/ledger-check.js';

let app: TestApp;
let admin: string;
beforeAll(async () => {
  app = await startTestApp({ env: { ...REST_TEST_ENV } });
  admin = app.config.adminToken;
}, 60_000);
afterAll(async () => {
  await app?.close();
});

type Dev = { developerId: string; secretKey: string };
type User = { walletId: string; token: string };

/** An approved AUTOMATIC payment of `amount`; its transaction id. */
async function paid(dev: Dev, user: User, amount: number, extra: Record<string, unknown> = {}): Promise<{ id: string; tx: string }> {
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount, extra);
  const res = await approve(app.baseUrl, user.token, id);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return { id, tx: res.body.data.approvePaymentRequest.transactionId };
}

const adminGql = async (query: string, variables: Record<string, unknown> = {}) => gql(app.baseUrl, query, variables, admin);
const setFee = (developerId: string, percent: number, fixed: number) =>
  adminGql('mutation($d: ID!, $p: Float!, $f: Float!) { setFeeSchedule(developerId: $d, percent: $p, fixed: $f) { percent fixed isDefault updatedAt } }', {
    d: developerId,
    p: percent,
    f: fixed,
  });
const balanceOf = async (dev: Dev) => (await http(app.baseUrl, '/api/v1/balance', { token: dev.secretKey })).body.balances;
const entriesOf = async (dev: Dev, query = '') => (await http(app.baseUrl, `/api/v1/balance-transactions${query}`, { token: dev.secretKey })).body;
const runPayouts = async (): Promise<number> => {
  const res = await adminGql('mutation { runPayouts }');
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data.runPayouts;
};
const expectBooksBalance = async () => expect((await checkLedger(app.db.orm.em.fork())).mismatches).toEqual([]);

describe('fees', () => {
  test('operators set a schedule (audited); it is validated, shown on the developer, and the defaults apply without one', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const before = await adminGql(`{ developers(first: 200) { nodes { id fee { percent fixed isDefault updatedAt } } } }`);
    expect(before.body.data.developers.nodes.find((d: { id: string }) => d.id === dev.developerId).fee).toEqual({ percent: 0, fixed: 0, isDefault: true, updatedAt: null });
    for (const [p, fx, message] of [
      [10.01, 0, /percent must be at most 10/],
      [-1, 0, /percent must be at least 0/],
      [1.234, 0, /percent must have at most 2 decimal places/],
      [1, -0.01, /fixed must be at least 0/],
      [1, 0.001, /fixed must have at most 2 decimal places/],
    ] as const) {
      const refused = await setFee(dev.developerId, p, fx);
      expect(refused.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(refused.body.errors[0].message).toMatch(message);
    }
    expect((await setFee('00000000-0000-4000-8000-000000000000', 1, 0)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    const set = await setFee(dev.developerId, 2.9, 0.3);
    expect(set.body.data.setFeeSchedule).toEqual({ percent: 2.9, fixed: 0.3, isDefault: false, updatedAt: expect.any(String) });
    const audit = await adminGql(`{ auditLog(filter: { operation: "setFeeSchedule" }) { nodes { outcome arguments } } }`);
    expect(audit.body.data.auditLog.nodes.map((n: { outcome: string }) => n.outcome)).toEqual(expect.arrayContaining(['ok', 'BAD_USER_INPUT', 'NOT_FOUND']));
  });

  test('a payment pays round_half_up(gross × percent / 100, 2) + fixed, at most the gross; the wallet company gets it, both sides entered', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    await setFee(dev.developerId, 2.9, 0.3);
    await paid(dev, user, 100); // 2.90 + 0.30
    await setFee(dev.developerId, 1.5, 0);
    await paid(dev, user, 10.5); // 0.1575 → 0.16
    await setFee(dev.developerId, 5, 0);
    await paid(dev, user, 0.1); // 0.005 exactly → 0.01 (half up)
    await paid(dev, user, 0.3); // 0.015 → 0.02
    await setFee(dev.developerId, 0, 1);
    await paid(dev, user, 0.5); // 1.00 fixed, capped at the gross
    const page = await entriesOf(dev);
    expect(page.data.map((e: { amount: number; fee: number; net: number }) => [e.amount, e.fee, e.net])).toEqual([
      [0.5, 0.5, 0],
      [0.3, 0.02, 0.28],
      [0.1, 0.01, 0.09],
      [10.5, 0.16, 10.34],
      [100, 3.2, 96.8],
    ]);
    expect(page.data.every((e: { type: string; currency: string; transactionId: string; payoutId: unknown }) => e.type === 'payment' && e.currency === 'ETB' && UUID_RE.test(e.transactionId) && e.payoutId === null)).toBe(true);
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 107.51, inPayouts: 0 }]);
    const [company] = await app.db.orm.em
      .fork()
      .execute<Array<{ total: string }>>(
        `select sum(amount)::text as total from ledger_entries where account = 'COMPANY' and transaction_id in (select transaction_id from balance_transactions where developer_id = ?)`,
        [dev.developerId],
      );
    expect(company!.total).toBe('3.89');
    await expectBooksBalance();
  });

  test('a MANUAL payment pays its fee at capture, on the captured amount; a void pays none', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    await setFee(dev.developerId, 2, 0);
    const held = await paid(dev, user, 50, { capture: 'MANUAL' });
    expect(await balanceOf(dev)).toEqual([]);
    const captured = await http(app.baseUrl, `/api/v1/wallet/transaction/${held.tx}/capture`, { token: dev.secretKey, body: { amount: 20 } });
    expect(captured.status).toBe(200);
    const voided = await paid(dev, user, 30, { capture: 'MANUAL' });
    expect((await http(app.baseUrl, `/api/v1/wallet/transaction/${voided.tx}/void`, { method: 'POST', token: dev.secretKey })).status).toBe(200);
    const page = await entriesOf(dev);
    expect(page.data).toEqual([
      expect.objectContaining({ type: 'payment', amount: 20, fee: 0.4, net: 19.6, transactionId: held.tx, paymentRequestId: held.id }),
    ]);
    await expectBooksBalance();
  });

  test('a refund returns the gross to the payer and not the fee; one the available balance cannot cover is refused and changes nothing', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    await setFee(dev.developerId, 10, 0);
    const { tx, id } = await paid(dev, user, 100, { reference: 'order-77' }); // fee 10, net 90
    const REFUND = 'mutation($id: ID!, $a: Float) { refundTransaction(id: $id, amount: $a) { refundedAmount } }';
    expect((await adminGql(REFUND, { id: tx, a: 40 })).body.data.refundTransaction.refundedAmount).toBe(40);
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 50, inPayouts: 0 }]);
    const refused = await adminGql(REFUND, { id: tx, a: 60 }); // 60 left to refund, 50 available
    expect(refused.body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 50, inPayouts: 0 }]);
    const [refund] = (await entriesOf(dev, '?type=refund')).data;
    expect(refund).toEqual(expect.objectContaining({ type: 'refund', amount: -40, fee: 0, net: -40, transactionId: tx, paymentRequestId: id, reference: 'order-77' }));
    await expectBooksBalance();
  });
});

describe('payouts', () => {
  test('runPayouts makes one per developer and currency: available → inPayouts; the list, the payout and its CSV report; paid, then CONFLICT', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    await setFee(dev.developerId, 1, 0.1);
    const payments = [];
    for (const [amount, reference] of [
      [12.5, 'order-1'],
      [40, 'order, with "quotes"'],
      [7.25, 'order-3'],
    ] as const) {
      payments.push(await paid(dev, user, amount, { reference }));
    }
    await adminGql('mutation($id: ID!) { refundTransaction(id: $id, amount: 5) { id } }', { id: payments[1]!.tx });
    const available = (await balanceOf(dev))[0].available; // 12.5-0.23 + 40-0.5 + 7.25-0.17 - 5
    expect(available).toBe(53.85);
    expect(await runPayouts()).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 0, inPayouts: 53.85 }]);
    const list = await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [expect.objectContaining({ status: 'PENDING', amount: 53.85, currency: 'ETB', itemCount: 4 })], hasMore: false, nextAfter: null });
    const payout = list.body.data[0];
    expect(payout).toEqual({
      id: expect.stringMatching(UUID_RE),
      status: 'PENDING',
      amount: 53.85,
      currency: 'ETB',
      itemCount: 4,
      periodStart: expect.any(String),
      periodEnd: expect.any(String),
      createdAt: expect.any(String),
      paidAt: null,
      bankReference: null,
      failureReason: null,
    });
    expect((await http(app.baseUrl, `/api/v1/payouts/${payout.id}`, { token: dev.secretKey })).body).toEqual(payout);

    // The items and the payout's own entry; the items' payoutId is the payout.
    const held = await entriesOf(dev, `?payoutId=${payout.id}`);
    expect(held.data.map((e: { type: string }) => e.type)).toEqual(['payout', 'refund', 'payment', 'payment', 'payment']);
    expect(held.data.every((e: { payoutId: string }) => e.payoutId === payout.id)).toBe(true);
    expect(held.data[0]).toEqual(expect.objectContaining({ type: 'payout', amount: -53.85, fee: 0, net: -53.85, transactionId: null }));

    const report = await http(app.baseUrl, `/api/v1/payouts/${payout.id}/report`, { token: dev.secretKey });
    expect(report.status).toBe(200);
    expect(report.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present');
    expect(report.headers.get('content-disposition')).toBe(`attachment; filename="payout-${payout.id}.csv"`);
    const text = report.body as string;
    expect(text.endsWith('\r\n')).toBe(true);
    const lines = text.split('\r\n').slice(0, -1);
    expect(lines[0]).toBe('balance_transaction_id,type,created_at,transaction_id,payment_request_id,reference,currency,gross,fee,net,consent_receipt');
    expect(lines).toHaveLength(5);
    expect(lines[2]).toContain(',"order, with ""quotes""",ETB,40.00,0.50,39.50,eyJ');
    const nets = lines.slice(1).map((l) => Number(/,ETB,([^,]+),([^,]+),([^,]+),/.exec(l)![3]));
    expect(Math.round(nets.reduce((a, b) => a + b, 0) * 100)).toBe(5385);
    const receipts = await Promise.all(payments.map(async (p) => (await http(app.baseUrl, `/api/v1/wallet/payment-request/${p.id}`, { token: dev.secretKey })).body.consentReceipt));
    for (const receipt of receipts) expect(text).toContain(receipt);
    expect(lines[4]).toMatch(/^[0-9a-f-]{36},refund,[^,]+,[0-9a-f-]{36},[0-9a-f-]{36},"order, with ""quotes""",ETB,-5.00,0.00,-5.00,eyJ/);

    // Read a page of 1 or 2 items at a time (the cursor at the microsecond), it is the same report.
    for (const pageSize of [1, 2, 4]) {
      let paged = '';
      for await (const chunk of await app.gateway.services.payouts.reportLines(app.gateway.services.works.begin(), dev.developerId, payout.id, pageSize)) paged += chunk;
      expect([pageSize, paged]).toEqual([pageSize, text]);
    }

    // Another developer sees none of it.
    const other = await f.developer();
    expectError(await http(app.baseUrl, `/api/v1/payouts/${payout.id}`, { token: other.secretKey }), 404);
    expectError(await http(app.baseUrl, `/api/v1/payouts/${payout.id}/report`, { token: other.secretKey }), 404);
    expectError(await http(app.baseUrl, `/api/v1/balance-transactions?payoutId=${payout.id}`, { token: other.secretKey }), 404);
    expectError(await http(app.baseUrl, `/api/v1/payouts/${payout.id}/report`, { token: dev.secretKey, headers: { accept: 'application/json' } }), 406);

    const PAID = 'mutation($id: ID!, $r: String!) { markPayoutPaid(id: $id, bankReference: $r) { status paidAt bankReference } }';
    const marked = await adminGql(PAID, { id: payout.id, r: 'CBE-2026-11-28-0042' });
    expect(marked.body.data.markPayoutPaid).toEqual({ status: 'PAID', paidAt: expect.any(String), bankReference: 'CBE-2026-11-28-0042' });
    expect((await adminGql(PAID, { id: payout.id, r: 'again' })).body.errors[0].extensions.code).toBe('CONFLICT');
    expect((await adminGql('mutation($id: ID!) { markPayoutFailed(id: $id, reason: "x") { status } }', { id: payout.id })).body.errors[0].extensions.code).toBe('CONFLICT');
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 0, inPayouts: 0 }]);
    const audit = await adminGql(`{ auditLog(filter: { operation: "markPayoutPaid" }) { nodes { outcome } } }`);
    expect(audit.body.data.auditLog.nodes.map((n: { outcome: string }) => n.outcome)).toEqual(expect.arrayContaining(['ok', 'CONFLICT']));
    expect((await adminGql(`{ auditLog(filter: { operation: "runPayouts" }) { nodes { outcome } } }`)).body.data.auditLog.nodes.length).toBeGreaterThan(0);
    await expectBooksBalance();
  });

  test('a failed payout returns its amount to available as a payout_reversal, which the next payout holds', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    await paid(dev, user, 30);
    await runPayouts();
    const [first] = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
    const failed = await adminGql('mutation($id: ID!, $r: String!) { markPayoutFailed(id: $id, reason: $r) { status failureReason } }', { id: first.id, r: 'Account closed' });
    expect(failed.body.data.markPayoutFailed).toEqual({ status: 'FAILED', failureReason: 'Account closed' });
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 30, inPayouts: 0 }]);
    const [reversal] = (await entriesOf(dev, '?type=payout_reversal')).data;
    expect(reversal).toEqual(expect.objectContaining({ amount: 30, fee: 0, net: 30, reference: first.id, payoutId: null }));
    await paid(dev, user, 5);
    await runPayouts();
    const payouts = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
    expect(payouts.map((p: { status: string; amount: number; itemCount: number }) => [p.status, p.amount, p.itemCount])).toEqual([
      ['PENDING', 35, 2],
      ['FAILED', 30, 1],
    ]);
    expect(payouts[0].periodStart).toBe(first.periodEnd);
    expect((await entriesOf(dev, '?type=payout_reversal')).data[0].payoutId).toBe(payouts[0].id);
    // The failed payout still holds its own item; the payouts list filters by status.
    expect((await http(app.baseUrl, '/api/v1/payouts?status=FAILED', { token: dev.secretKey })).body.data.map((p: { id: string }) => p.id)).toEqual([first.id]);
    await expectBooksBalance();
  });

  test('no payout under PAYOUT_MINIMUM, nothing twice at one cut-off, and nothing made when nothing is due', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    await paid(dev, user, 0.99);
    await runPayouts();
    expect((await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data).toEqual([]);
    await paid(dev, user, 0.01);
    const [{ now }] = await app.db.orm.em.fork().execute<Array<{ now: string }>>('select clock_timestamp()::text as now');
    const payouts = app.gateway.services.payouts;
    const first = await payouts.run(now);
    expect(first.failed).toBe(0);
    expect(first.made).toBeGreaterThanOrEqual(1);
    expect(await payouts.run(now)).toEqual({ made: 0, failed: 0 });
    expect(await payouts.makePayout(dev.developerId, 'ETB', now)).toBeNull();
    const [made] = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
    expect([made.amount, made.itemCount]).toEqual([1, 2]);
    await expectBooksBalance();
  });

  test('operators list payouts by status and developer; an adjustment corrects the balance from the wallet company', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const ADJUST = 'mutation($d: ID!, $a: Float!, $r: String!) { adjustBalance(developerId: $d, currency: "ETB", amount: $a, reason: $r) { type amount fee net reference } }';
    expect((await adminGql(ADJUST, { d: dev.developerId, a: -1, r: 'too much' })).body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
    expect((await adminGql(ADJUST, { d: dev.developerId, a: 12.34, r: 'Goodwill for incident 7' })).body.data.adjustBalance).toEqual({
      type: 'adjustment',
      amount: 12.34,
      fee: 0,
      net: 12.34,
      reference: 'Goodwill for incident 7',
    });
    expect((await adminGql(ADJUST, { d: dev.developerId, a: -2.34, r: 'Correction' })).body.data.adjustBalance.net).toBe(-2.34);
    expect(await balanceOf(dev)).toEqual([{ currency: 'ETB', available: 10, inPayouts: 0 }]);
    await runPayouts();
    const listed = await adminGql(`query($d: ID!) { payouts(filter: { developerId: $d, status: PENDING }) { nodes { amount itemCount developer { id } } } }`, { d: dev.developerId });
    expect(listed.body.data.payouts.nodes).toEqual([{ amount: 10, itemCount: 2, developer: { id: dev.developerId } }]);
    const dev2 = await adminGql(`{ developers(first: 200) { nodes { id balance { currency balance available inPayouts } } } }`);
    expect(dev2.body.data.developers.nodes.find((d: { id: string }) => d.id === dev.developerId).balance).toEqual([{ currency: 'ETB', balance: 0, available: 0, inPayouts: 10 }]);
    await expectBooksBalance();
  });
});

describe('ledgerCheck', () => {
  test('finds an available balance that differs from Σ net, a payout whose items do not add up, and a one-sided fee', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    await setFee(dev.developerId, 10, 0);
    const { tx } = await paid(dev, user, 20);
    await runPayouts();
    const [payout] = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
    await expectBooksBalance();
    const em = app.db.orm.em.fork();
    // Written outside the doors: one entry's net changed (as if an item were added or altered after the payout).
    await em.execute(`update balance_transactions set net = net + 1, amount = amount + 1 where transaction_id = ? and type = 'payment'`, [tx]);
    await em.execute(`update ledger_entries set amount = amount + 1 where transaction_id = ? and account = 'COMPANY'`, [tx]);
    const check = await adminGql('{ ledgerCheck { ok checkedPayouts mismatches { kind id balance ledgerSum } } }');
    expect(check.body.data.ledgerCheck.ok).toBe(false);
    expect(check.body.data.ledgerCheck.mismatches).toEqual(
      expect.arrayContaining([
        { kind: 'BALANCE_TRANSACTIONS', id: `${dev.developerId}:ETB`, balance: 0, ledgerSum: 1 },
        { kind: 'PAYOUT', id: payout.id, balance: 18, ledgerSum: 19 },
        { kind: 'COMPANY', id: 'ETB', balance: expect.any(Number), ledgerSum: expect.any(Number) },
        { kind: 'BOOKS', id: 'ETB', balance: 0, ledgerSum: 1 },
      ]),
    );
    await em.execute(`update balance_transactions set net = net - 1, amount = amount - 1 where transaction_id = ? and type = 'payment'`, [tx]);
    await em.execute(`update ledger_entries set amount = amount - 1 where transaction_id = ? and account = 'COMPANY'`, [tx]);
    await expectBooksBalance();
  });
});

describe('the lists', () => {
  test('balance transactions page newest first with after/nextAfter and filter by type and time; bad input is a 400, a foreign cursor a 404', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 500 });
    for (let i = 1; i <= 5; i++) await paid(dev, user, i);
    const first = await entriesOf(dev, '?limit=2');
    expect(first.data.map((e: { amount: number }) => e.amount)).toEqual([5, 4]);
    expect(first.hasMore).toBe(true);
    const second = await entriesOf(dev, `?limit=2&after=${first.nextAfter}`);
    expect(second.data.map((e: { amount: number }) => e.amount)).toEqual([3, 2]);
    const third = await entriesOf(dev, `?limit=2&after=${second.nextAfter}`);
    expect(third).toEqual({ data: [expect.objectContaining({ amount: 1 })], hasMore: false, nextAfter: null });
    expect((await entriesOf(dev, '?type=refund')).data).toEqual([]);
    expect((await entriesOf(dev, `?createdFrom=${encodeURIComponent(first.data[0].createdAt)}`)).data.map((e: { amount: number }) => e.amount)).toEqual([5]);
    expectError(await http(app.baseUrl, '/api/v1/balance-transactions?type=fee', { token: dev.secretKey }), 400, /type must be one of payment, refund, payout, payout_reversal, adjustment/);
    expectError(await http(app.baseUrl, '/api/v1/balance-transactions?limit=101', { token: dev.secretKey }), 400);
    expectError(await http(app.baseUrl, '/api/v1/balance-transactions?payoutId=nope', { token: dev.secretKey }), 400);
    expectError(await http(app.baseUrl, '/api/v1/payouts?status=SENT', { token: dev.secretKey }), 400);
    const other = await f.developer();
    expectError(await http(app.baseUrl, `/api/v1/balance-transactions?after=${first.nextAfter}`, { token: other.secretKey }), 404);
    expectError(await http(app.baseUrl, '/api/v1/balance', {}), 401);
    const user2 = await f.user();
    const forbidden = await gql(app.baseUrl, '{ balance { balances { currency } } }', {}, user2.token);
    expect(forbidden.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});
