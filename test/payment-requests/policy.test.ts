import { useTestApp, http, gql, type factories, type TestApp } from '../helpers/app.js';
import { approve, reject, requestPayment, statusOf } from '../helpers/payments.js';

// Who may act on a payment request (src/payment-requests/payment-request.policy.ts): one rule,
// asked before an approval's verification is counted and again by the claim. An open link in
// another currency had its PIN verified and counted before the currency was refused; a payer who
// blocked a developer paid that developer's link without a word (SPEC §16: MERCHANT_BLOCKED).
let app: TestApp;
let f: ReturnType<typeof factories>;
let dev: { developerId: string; secretKey: string };
useTestApp({}, async (x) => {
  ({ app, f } = x);
});
beforeAll(async () => {
  dev = await f.developer();
});

async function openLink(): Promise<string> {
  const res = await http(app.baseUrl, '/api/v1/wallet/payment-links', {
    token: dev.secretKey,
    body: { amount: 5, description: 'Table 9', merchantName: 'Policy Café' },
  });
  expect(res.status).toBe(200);
  return res.body.paymentRequestId;
}

async function pinFailures(walletId: string): Promise<number> {
  const rows = await app.db.sql.query<{ failures: number }>('select failures from wallet_pins where wallet_id = $1', [walletId]);
  return rows[0]?.failures ?? 0;
}

async function walletOf(id: string): Promise<{ wallet_id: string | null; status: string }> {
  const [row] = await app.db.sql.query<{ wallet_id: string | null; status: string }>('select wallet_id, status from payment_requests where id = $1', [id]);
  return row!;
}

test('an open link in another currency is refused before the PIN is checked: BAD_USER_INPUT, no failure counted, nothing bound', async () => {
  const id = await openLink();
  const euro = await f.user({ balance: 50, currency: 'EUR' });
  const res = await approve(app.baseUrl, euro.token, id, '000000');
  expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  expect(res.body.errors[0].message).toMatch(/in ETB; your wallet holds EUR/);
  expect(await pinFailures(euro.walletId)).toBe(0);
  expect(await walletOf(id)).toEqual({ wallet_id: null, status: 'PENDING' });
});

test("a payer who blocked the developer cannot pay its link: MERCHANT_BLOCKED before the PIN, nothing changes; after unblocking it pays", async () => {
  const payer = await f.user({ balance: 50 });
  const earlier = await requestPayment(app.baseUrl, dev.secretKey, payer.walletId, 1);
  const blocked = await gql(app.baseUrl, 'mutation($id: ID!) { blockMerchant(paymentRequestId: $id) { id } }', { id: earlier }, payer.token);
  expect(blocked.body.errors).toBeUndefined();
  const id = await openLink();

  const wrongPin = await approve(app.baseUrl, payer.token, id, '000000');
  expect(wrongPin.body.errors[0].extensions.code).toBe('MERCHANT_BLOCKED');
  expect(await pinFailures(payer.walletId)).toBe(0);
  const rightPin = await approve(app.baseUrl, payer.token, id);
  expect(rightPin.body.errors[0].extensions.code).toBe('MERCHANT_BLOCKED');
  expect(await walletOf(id)).toEqual({ wallet_id: null, status: 'PENDING' });
  expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');

  const unblocked = await gql(app.baseUrl, 'mutation($id: ID!) { unblockMerchant(id: $id) }', { id: blocked.body.data.blockMerchant.id }, payer.token);
  expect(unblocked.body.data.unblockMerchant).toBe(true);
  expect((await approve(app.baseUrl, payer.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
});

test('the rule answers each caller the same way on every path: not theirs, not PENDING, FORBIDDEN for a stranger rejecting a link', async () => {
  const owner = await f.user({ balance: 50 });
  const stranger = await f.user({ balance: 50 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, owner.walletId, 2);
  // Someone else's request: NOT_FOUND for approve (before any PIN) and reject alike.
  expect((await approve(app.baseUrl, stranger.token, id, '000000')).body.errors[0].extensions.code).toBe('NOT_FOUND');
  expect((await reject(app.baseUrl, stranger.token, id)).body.errors[0].extensions.code).toBe('NOT_FOUND');
  expect(await pinFailures(stranger.walletId)).toBe(0);
  // A link: a stranger may approve it but not reject it.
  const link = await openLink();
  expect((await reject(app.baseUrl, stranger.token, link)).body.errors[0].extensions.code).toBe('FORBIDDEN');
  // Decided: PAYMENT_REQUEST_NOT_PENDING for every action, the developer's cancel included.
  expect((await reject(app.baseUrl, owner.token, id)).body.data.rejectPaymentRequest.status).toBe('REJECTED');
  expect((await approve(app.baseUrl, owner.token, id, '000000')).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
  expect((await reject(app.baseUrl, owner.token, id)).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
  const cancel = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}/cancel`, { method: 'POST', token: dev.secretKey });
  expect(cancel.status).toBe(409);
  expect(await pinFailures(owner.walletId)).toBe(0);
});
