import { useTestApp, http, gql, startTestApp, type factories, type TestApp } from '../helpers/app.js';
import { approve, balances, ledgerMismatches, reject, requestPayment, statusOf } from '../helpers/payments.js';
import { expectError, walkJson } from '../helpers/expect.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import type { Client } from 'graphql-ws';

// Open requests (payment links), their codes and links, the QR route and the /pay page (SPEC §15, #25).
let app: TestApp;
let f: ReturnType<typeof factories>;
let dev: { developerId: string; secretKey: string };
useTestApp({ env: { PUBLIC_BASE_URL: 'https://pay.example.test/' } }, async (x) => {
  ({ app, f } = x);
});
beforeAll(async () => {
  dev = await f.developer();
});

const link = (body: Record<string, unknown>, key = dev.secretKey) => http(app.baseUrl, '/api/v1/wallet/payment-links', { token: key, body });
const LINK = { amount: 12.5, description: 'Table 4', merchantName: 'Corner Café' };
const CODE_URL = /^https:\/\/pay\.example\.test\/pay\/([A-Za-z0-9_-]{22,})$/;

async function openLink(extra: Record<string, unknown> = {}): Promise<{ id: string; code: string; paymentUrl: string }> {
  const res = await link({ ...LINK, ...extra });
  expect(res.status).toBe(200);
  const code = CODE_URL.exec(res.body.paymentUrl)![1]!;
  return { id: res.body.paymentRequestId, code, paymentUrl: res.body.paymentUrl };
}

const byCode = (token: string, code: string) =>
  gql(app.baseUrl, 'query($c: String!) { paymentRequestByCode(code: $c) { id status amount currency merchantName paymentUrl transactionId } }', { c: code }, token);

describe('POST /wallet/payment-links', () => {
  test('creates an open PENDING request with the creation body and an unguessable paymentUrl (not the id)', async () => {
    const res = await link({ ...LINK, reference: 'till-1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      message: expect.any(String),
      paymentRequestId: expect.any(String),
      status: 'PENDING',
      expiresAt: expect.any(String),
      paymentUrl: expect.stringMatching(CODE_URL),
    });
    const code = CODE_URL.exec(res.body.paymentUrl)![1]!;
    expect(code).not.toContain(res.body.paymentRequestId);
    expect(Buffer.from(code, 'base64url').length).toBeGreaterThanOrEqual(16); // ≥ 128 bits
    const status = await statusOf(app.baseUrl, dev.secretKey, res.body.paymentRequestId);
    expect(status).toMatchObject({ status: 'PENDING', paymentUrl: res.body.paymentUrl, currency: 'ETB', reference: 'till-1' });
  });

  test('every request gets its own code, request-payment too', async () => {
    const user = await f.user({ balance: 10 });
    const a = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { walletId: user.walletId, ...LINK } });
    const b = await link(LINK);
    expect(a.body.paymentUrl).toMatch(CODE_URL);
    expect(a.body.paymentUrl).not.toBe(b.body.paymentUrl);
  });

  test('Idempotency-Key: the same key and body answer the first link again; another body is 422', async () => {
    const key = `link-${Date.now()}`;
    const first = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: dev.secretKey, body: LINK, headers: { 'idempotency-key': key } });
    const again = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: dev.secretKey, body: LINK, headers: { 'idempotency-key': key } });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: dev.secretKey, body: { ...LINK, amount: 1 }, headers: { 'idempotency-key': key } });
    expectError(other, 422);
  });

  test('a walletId (or any other unknown field) is a 400 naming it, and nothing is created', async () => {
    const user = await f.user();
    const before = await http(app.baseUrl, '/api/v1/wallet/payment-requests', { token: dev.secretKey });
    expectError(await link({ ...LINK, walletId: user.walletId }), 400, /walletId/);
    expectError(await link({ ...LINK, payer: 'x' }), 400, /payer/);
    const after = await http(app.baseUrl, '/api/v1/wallet/payment-requests', { token: dev.secretKey });
    expect(after.body.data[0]?.id).toBe(before.body.data[0]?.id);
  });

  test('the first approval binds it to the approver; a second user gets PAYMENT_REQUEST_NOT_PENDING', async () => {
    const { id, code } = await openLink();
    const payer = await f.user({ balance: 50 });
    const late = await f.user({ balance: 50 });
    const ok = await approve(app.baseUrl, payer.token, id);
    expect(ok.body.data.approvePaymentRequest).toMatchObject({ id, status: 'APPROVED', transactionId: expect.any(String) });
    const again = await approve(app.baseUrl, late.token, id);
    expect(again.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
    expect(await balances(app.db, payer.walletId, dev.developerId)).toMatchObject({ wallet: 37.5 });
    expect((await balances(app.db, late.walletId, dev.developerId)).wallet).toBe(50);
    // Once paid, only the payer reads it by its code.
    expect((await byCode(payer.token, code)).body.data.paymentRequestByCode).toMatchObject({ id, status: 'APPROVED' });
    expect((await byCode(late.token, code)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('the payer of an open request verifies with their own PIN: a wrong one is VERIFICATION_FAILED and binds nothing', async () => {
    const { id } = await openLink();
    const payer = await f.user({ balance: 50 });
    const wrong = await approve(app.baseUrl, payer.token, id, '000000');
    expect(wrong.body.errors[0].extensions.code).toBe('VERIFICATION_FAILED');
    const [row] = await app.db.orm.em.fork().execute<Array<{ wallet_id: string | null; status: string }>>('select wallet_id, status from payment_requests where id = ?', [id]);
    expect(row).toEqual({ wallet_id: null, status: 'PENDING' });
    expect((await approve(app.baseUrl, payer.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('an open request is in no one’s myPendingPaymentRequests, and only approving touches it (reject: FORBIDDEN, unchanged)', async () => {
    const { id } = await openLink();
    const user = await f.user({ balance: 50 });
    const mine = await gql(app.baseUrl, '{ myPendingPaymentRequests { id } }', {}, user.token);
    expect(mine.body.data.myPendingPaymentRequests).toEqual([]);
    const refused = await reject(app.baseUrl, user.token, id);
    expect(refused.body.errors[0].extensions.code).toBe('FORBIDDEN');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });

  test('cancel and expiry work on an open request; approving after them is refused', async () => {
    const user = await f.user({ balance: 50 });
    const cancelled = await openLink();
    const c = await http(app.baseUrl, `/api/v1/wallet/payment-request/${cancelled.id}/cancel`, { method: 'POST', token: dev.secretKey });
    expect(c.body.status).toBe('CANCELLED');
    expect((await approve(app.baseUrl, user.token, cancelled.id)).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
    const expiring = await openLink();
    await app.db.orm.em.fork().execute(`update payment_requests set expires_at = created_at + interval '1 millisecond' where id = ?`, [expiring.id]);
    expect((await statusOf(app.baseUrl, dev.secretKey, expiring.id)).status).toBe('EXPIRED');
    expect((await approve(app.baseUrl, user.token, expiring.id)).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_EXPIRED');
    await app.gateway.sweeper.sweep();
    const events = await http(app.baseUrl, `/api/v1/events?paymentRequestId=${expiring.id}`, { token: dev.secretKey });
    expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(['payment_request.created', 'payment_request.expired']);
  });
});

describe('paymentRequestByCode', () => {
  test('an open request not yet paid: any user; a request to a wallet: only that wallet’s user; else NOT_FOUND', async () => {
    const open = await openLink();
    const someone = await f.user();
    expect((await byCode(someone.token, open.code)).body.data.paymentRequestByCode).toEqual({
      id: open.id,
      status: 'PENDING',
      amount: 12.5,
      currency: 'ETB',
      merchantName: 'Corner Café',
      paymentUrl: open.paymentUrl,
      transactionId: null,
    });
    const owner = await f.user({ balance: 5 });
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { walletId: owner.walletId, ...LINK } });
    const code = CODE_URL.exec(res.body.paymentUrl)![1]!;
    expect((await byCode(owner.token, code)).body.data.paymentRequestByCode.id).toBe(res.body.paymentRequestId);
    expect((await byCode(someone.token, code)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await byCode(someone.token, 'A'.repeat(24))).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await byCode(someone.token, '../../etc')).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await byCode(dev.secretKey, open.code)).body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});

describe('nothing the merchant reads identifies the payer of an open request', () => {
  test('status body, transaction body and events carry no user, wallet or developer identifier', async () => {
    const { id } = await openLink();
    const payer = await f.user({ balance: 50 });
    const txId = (await approve(app.baseUrl, payer.token, id)).body.data.approvePaymentRequest.transactionId;
    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey });
    const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${txId}`, { token: dev.secretKey });
    const events = await http(app.baseUrl, `/api/v1/events?paymentRequestId=${id}`, { token: dev.secretKey });
    expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(['payment_request.created', 'payment_request.approved']);
    const seen = walkJson([status.body, tx.body, events.body]);
    for (const secret of [payer.userId, payer.walletId, payer.username, payer.phone, payer.phone.replace(/^0/, ''), dev.developerId]) {
      expect(seen.values.filter((v) => v.includes(secret))).toEqual([]);
    }
    expect(seen.keys.filter((k) => /user|wallet|phone|developer|payer/i.test(k))).toEqual([]);
  });
});

describe('no paymentRequested at creation', () => {
  let ws: Client | undefined;
  afterEach(async () => {
    await ws?.dispose();
  });

  test('a user listening sees nothing for an open request, and the approval reaches the payer as an update', async () => {
    const payer = await f.user({ balance: 50 });
    const before = app.gateway.services.eventHub.stats.subscriptions;
    ws = wsClient(app.baseUrl, payer.token);
    const requested = subscribe(ws, 'subscription { paymentRequested { id } }');
    const updated = subscribe(ws, 'subscription { paymentRequestUpdated { id status } }');
    await untilSubscribed(app.gateway.services.eventHub, before + 2);
    const { id } = await openLink();
    // A request to the same user, made after the open one: the first paymentRequested must be this one.
    const direct = await requestPayment(app.baseUrl, dev.secretKey, payer.walletId, 1);
    expect((await requested.next(5000)).paymentRequested.id).toBe(direct);
    await approve(app.baseUrl, payer.token, id);
    expect((await updated.next(5000)).paymentRequestUpdated).toEqual({ id, status: 'APPROVED' });
  });
});

describe('expiresInSeconds', () => {
  const create = (body: Record<string, unknown>) =>
    http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { walletId: 'wlt_unused0000000000000000', ...LINK, ...body } });

  test.each([
    ['below 60', 59],
    ['above 86400', 86_401],
    ['zero', 0],
    ['negative', -60],
    ['not an integer', 90.5],
    ['a string', '300'],
    ['a boolean', true],
  ])('%s is a 400 naming expiresInSeconds, on both creates', async (_name, value) => {
    expectError(await create({ expiresInSeconds: value }), 400, /expiresInSeconds/);
    expectError(await link({ ...LINK, expiresInSeconds: value }), 400, /expiresInSeconds/);
  });

  test('sets expiresAt exactly, from 60 to 86400 seconds; absent is PAYMENT_REQUEST_TTL_SECONDS', async () => {
    const user = await f.user();
    for (const seconds of [60, 86_400]) {
      const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { walletId: user.walletId, ...LINK, expiresInSeconds: seconds } });
      const status = await statusOf(app.baseUrl, dev.secretKey, res.body.paymentRequestId);
      expect(new Date(status.expiresAt).getTime() - new Date(status.createdAt).getTime()).toBe(seconds * 1000);
    }
    const open = await openLink({ expiresInSeconds: 3600 });
    const s = await statusOf(app.baseUrl, dev.secretKey, open.id);
    expect(new Date(s.expiresAt).getTime() - new Date(s.createdAt).getTime()).toBe(3600 * 1000);
    const dflt = await openLink();
    const d = await statusOf(app.baseUrl, dev.secretKey, dflt.id);
    expect(new Date(d.expiresAt).getTime() - new Date(d.createdAt).getTime()).toBe(app.config.paymentRequestTtlSeconds * 1000);
  });

  test('GraphQL: the same rule, with a coded error', async () => {
    const res = await gql(
      app.baseUrl,
      'mutation($i: PaymentLinkInput!) { createPaymentLink(input: $i) { paymentRequestId } }',
      { i: { ...LINK, expiresInSeconds: 30 } },
      dev.secretKey,
    );
    expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(res.body.errors[0].message).toMatch(/expiresInSeconds/);
  });

  test('capture other than AUTOMATIC or MANUAL is a 400 naming it', async () => {
    expectError(await link({ ...LINK, capture: 'LATER' }), 400, /capture/);
    expectError(await link({ ...LINK, capture: 1 }), 400, /capture/);
  });
});

describe('GET /wallet/payment-request/{id}/qr', () => {
  test('SVG by default and for */*, PNG when Accept asks for it, 406 for anything else', async () => {
    const { id } = await openLink();
    const path = `/api/v1/wallet/payment-request/${id}/qr`;
    const svg = await http(app.baseUrl, path, { token: dev.secretKey });
    expect(svg.status).toBe(200);
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(svg.body).toMatch(/^<svg[\s\S]*<\/svg>\s*$/);
    const any = await http(app.baseUrl, path, { token: dev.secretKey, headers: { accept: '*/*' } });
    expect(any.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    // Raw bytes, off the JSON contract's body check: the PNG signature.
    const png = await fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${dev.secretKey}`, accept: 'image/png' } });
    expect(png.status).toBe(200);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect([...new Uint8Array(await png.arrayBuffer()).slice(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expectError(await http(app.baseUrl, path, { token: dev.secretKey, headers: { accept: 'application/json' } }), 406);
  });

  test('another developer’s request, an unknown one: 404; a malformed id: 400; no key: 401', async () => {
    const { id } = await openLink();
    const other = await f.developer();
    expectError(await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}/qr`, { token: other.secretKey }), 404);
    expectError(await http(app.baseUrl, `/api/v1/wallet/payment-request/${crypto.randomUUID()}/qr`, { token: dev.secretKey }), 404);
    expectError(await http(app.baseUrl, '/api/v1/wallet/payment-request/nope/qr', { token: dev.secretKey }), 400);
    expectError(await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}/qr`), 401);
  });
});

describe('GET /pay/{code}', () => {
  test('development: the /app page opened on the request; an unknown code: a 404 page', async () => {
    const { code } = await openLink();
    // A page for people, off the JSON contract.
    const res = await fetch(`${app.baseUrl}/pay/${code}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/app#pay=${code}`);
    const missing = await fetch(`${app.baseUrl}/pay/${'x'.repeat(24)}`, { redirect: 'manual' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
  });

  test('production: merchant, amount, the app link and the QR code; never the payer; 404 page for an unknown code', async () => {
    const prod = await startTestApp({
      database: app.database,
      env: {
        APP_ENV: 'production',
        KEY_SIGNING_SECRET: 'test-key-signing-secret-0123456789',
        USER_TOKEN_SECRET: 'test-user-token-secret-0123456789',
        ADMIN_TOKEN: 'test-admin-token-0123456789',
        PUBLIC_BASE_URL: 'https://pay.example.test',
        WALLET_APP_LINK_TEMPLATE: 'examplewallet://pay?c={code}',
      },
    });
    try {
      const { code } = await openLink({ merchantName: 'Café <b>&</b>' });
      const res = await fetch(`${prod.baseUrl}/pay/${code}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
      const html = await res.text();
      // Merchant text is isolated from the page's direction (<bdi>): it cannot reorder what follows it.
      expect(html).toContain('<h1><bdi>Café &lt;b&gt;&amp;&lt;/b&gt;</bdi></h1>');
      expect(html).toMatch(/<p><bdi>[^<]+<\/bdi><\/p>/);
      expect(html).toContain('12.50 ETB');
      expect(html).toContain(`href="examplewallet://pay?c=${code}"`);
      expect(html).toMatch(/<svg[\s\S]*<\/svg>/);
      expect((await fetch(`${prod.baseUrl}/pay/${'y'.repeat(24)}`)).status).toBe(404);
      // Once paid, the page says so and shows no QR code, and nothing of the payer.
      const payer = await f.user({ balance: 50, username: `payer_${Date.now().toString(36)}` });
      const id = (await byCode(payer.token, code)).body.data.paymentRequestByCode.id;
      await approve(app.baseUrl, payer.token, id);
      const paid = await (await fetch(`${prod.baseUrl}/pay/${code}`)).text();
      expect(paid).toContain('approved');
      expect(paid).not.toContain(payer.username);
      expect(paid).not.toContain(payer.walletId);
      expect(paid).not.toMatch(/<svg/);
    } finally {
      await prod.close();
    }
  });
});
