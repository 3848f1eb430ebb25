import { useTestApp, factories, http, gql, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';

let app: TestApp;
useTestApp({ env: { SANDBOX_TEST_WALLETS: 'false' } }, (x) => ({ app } = x));

test('GET /events pages a developer’s own events oldest first with after/limit; the bodies are the webhook bodies', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const other = await f.developer();
  const user = await f.user({ balance: 100 });
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await approve(app.baseUrl, user.token, a);
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2, { reference: 'ord-2' });
  await requestPayment(app.baseUrl, other.secretKey, user.walletId, 3);

  const all = await http(app.baseUrl, '/api/v1/events', { token: dev.secretKey });
  expect(all.status).toBe(200);
  expect(all.body.data.map((e: { type: string; data: { paymentRequest: { id: string } } }) => [e.type, e.data.paymentRequest.id])).toEqual([
    ['payment_request.created', a],
    ['payment_request.approved', a],
    ['payment_request.created', b],
  ]);
  expect(all.body.hasMore).toBe(false);
  const [rows] = [await app.db.orm.em.fork().execute<Array<{ payload: unknown }>>('select payload from events where developer_id = ? order by position', [dev.developerId])];
  expect(all.body.data).toEqual(rows.map((r) => r.payload));

  const first = await http(app.baseUrl, '/api/v1/events?limit=2', { token: dev.secretKey });
  expect(first.body.data).toHaveLength(2);
  expect(first.body.hasMore).toBe(true);
  expect(first.body.nextAfter).toBe(first.body.data[1].id);
  const rest = await http(app.baseUrl, `/api/v1/events?after=${first.body.nextAfter}&limit=2`, { token: dev.secretKey });
  expect(rest.body.data.map((e: { id: string }) => e.id)).toEqual([all.body.data[2].id]);
  expect(rest.body.hasMore).toBe(false);
  const empty = await http(app.baseUrl, `/api/v1/events?after=${all.body.data[2].id}`, { token: dev.secretKey });
  expect(empty.body).toEqual({ data: [], hasMore: false, nextAfter: all.body.data[2].id });

  for (const q of ['limit=0', 'limit=101', 'limit=x', 'after=nope']) {
    expect([q, (await http(app.baseUrl, `/api/v1/events?${q}`, { token: dev.secretKey })).status]).toEqual([q, 400]);
  }
  // Another developer's event id is no cursor of mine, and not readable.
  const theirs = (await http(app.baseUrl, '/api/v1/events', { token: other.secretKey })).body.data[0].id as string;
  expect((await http(app.baseUrl, `/api/v1/events?after=${theirs}`, { token: dev.secretKey })).status).toBe(404);
  expect((await http(app.baseUrl, `/api/v1/events/${theirs}`, { token: dev.secretKey })).status).toBe(404);
  expect((await http(app.baseUrl, `/api/v1/events/${theirs}/resend`, { method: 'POST', token: dev.secretKey })).status).toBe(404);
  expect((await http(app.baseUrl, '/api/v1/events')).status).toBe(401);
});

test('GET /events filters by type (repeated or comma-separated) and paymentRequestId; after pages the filtered list', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await approve(app.baseUrl, user.token, a);
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
  await http(app.baseUrl, `/api/v1/wallet/payment-request/${b}/cancel`, { method: 'POST', token: dev.secretKey });
  const c = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3);
  const summary = async (query: string) =>
    (await http(app.baseUrl, `/api/v1/events?${query}`, { token: dev.secretKey })).body.data.map(
      (e: { type: string; data: { paymentRequest: { id: string } } }) => `${e.type}:${e.data.paymentRequest.id}`,
    );
  expect(await summary('type=payment_request.created')).toEqual([`payment_request.created:${a}`, `payment_request.created:${b}`, `payment_request.created:${c}`]);
  const final = [`payment_request.approved:${a}`, `payment_request.cancelled:${b}`];
  expect(await summary('type=payment_request.approved&type=payment_request.cancelled')).toEqual(final);
  expect(await summary('type=payment_request.approved,payment_request.cancelled')).toEqual(final);
  expect(await summary(`paymentRequestId=${b}`)).toEqual([`payment_request.created:${b}`, `payment_request.cancelled:${b}`]);
  expect(await summary(`paymentRequestId=${b}&type=payment_request.cancelled`)).toEqual([`payment_request.cancelled:${b}`]);
  expect(await summary(`paymentRequestId=${c}&type=payment_request.approved`)).toEqual([]);
  // `after` is a position in the whole stream: a filtered page continues after it.
  const first = await http(app.baseUrl, '/api/v1/events?type=payment_request.created&limit=1', { token: dev.secretKey });
  expect(first.body).toMatchObject({ hasMore: true, nextAfter: first.body.data[0].id });
  expect(await summary(`type=payment_request.created&after=${first.body.nextAfter}`)).toEqual([`payment_request.created:${b}`, `payment_request.created:${c}`]);
  for (const [query, message] of [
    ['type=payment_request.paid', 'Unknown event type "payment_request.paid"; known: payment_request.created, payment_request.approved, payment_request.rejected, payment_request.cancelled, payment_request.expired, transaction.refunded, transaction.captured, transaction.voided, payout.created, payout.paid, payout.failed'],
    ['type=webhook.test', 'Unknown event type "webhook.test"; known: payment_request.created, payment_request.approved, payment_request.rejected, payment_request.cancelled, payment_request.expired, transaction.refunded, transaction.captured, transaction.voided, payout.created, payout.paid, payout.failed'],
    ['paymentRequestId=nope', 'paymentRequestId must be a UUID'],
  ]) {
    const res = await http(app.baseUrl, `/api/v1/events?${query}`, { token: dev.secretKey });
    expect([query, res.status, res.body]).toEqual([query, 400, { statusCode: 400, message }]);
  }
});

test('GET /events/{id} shows the event with (no) deliveries; resend without endpoints changes nothing', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const [event] = (await http(app.baseUrl, '/api/v1/events', { token: dev.secretKey })).body.data;
  const detail = await http(app.baseUrl, `/api/v1/events/${event.id}`, { token: dev.secretKey });
  expect(detail.body).toEqual({ ...event, deliveries: [], attempts: [] });
  const resent = await http(app.baseUrl, `/api/v1/events/${event.id}/resend`, { method: 'POST', token: dev.secretKey });
  expect(resent.status).toBe(200);
  expect(resent.body.deliveries).toEqual([]);
  expect((await http(app.baseUrl, '/api/v1/events/evt_nope', { token: dev.secretKey })).status).toBe(400);
});

test('reference and metadata: stored as sent, returned by the status endpoint, found by GET /wallet/payment-requests?reference=', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const other = await f.developer();
  const user = await f.user({ balance: 100 });
  const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`key_${i}`.padEnd(40, 'x'), 'v'.repeat(500)]));
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1, { reference: 'Order #1001 – ጤና', metadata });
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2, { reference: 'Order #1001 – ጤና' });
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3, { reference: 'other' });
  await requestPayment(app.baseUrl, other.secretKey, user.walletId, 4, { reference: 'Order #1001 – ጤና' });
  const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${a}`, { token: dev.secretKey });
  expect(status.body).toMatchObject({ reference: 'Order #1001 – ጤና', metadata });
  const found = await http(app.baseUrl, `/api/v1/wallet/payment-requests?reference=${encodeURIComponent('Order #1001 – ጤና')}`, { token: dev.secretKey });
  expect(found.status).toBe(200);
  expect(found.body.data.map((p: { id: string }) => p.id)).toEqual([b, a]);
  expect(found.body.data[1]).toEqual(status.body);
  expect(found.body.hasMore).toBe(false);
  const limited = await http(app.baseUrl, `/api/v1/wallet/payment-requests?reference=${encodeURIComponent('Order #1001 – ጤና')}&limit=1`, { token: dev.secretKey });
  expect(limited.body).toMatchObject({ data: [{ id: b }], hasMore: true, nextAfter: b });
  expect((await http(app.baseUrl, '/api/v1/wallet/payment-requests?reference=none', { token: dev.secretKey })).body).toEqual({
    data: [],
    hasMore: false,
    nextAfter: null,
  });
  // The GraphQL door has the same fields (and the older field, deprecated, still answers).
  const viaGql = await gql(app.baseUrl, 'query($r: String) { searchPaymentRequests(reference: $r) { data { id reference } } }', { r: 'other' }, dev.secretKey);
  expect(viaGql.body.data.searchPaymentRequests.data).toHaveLength(1);
  const deprecated = await gql(app.baseUrl, 'query($r: String) { paymentRequestsByReference(reference: $r) { data { id reference } } }', { r: 'other' }, dev.secretKey);
  expect(deprecated.body.data.paymentRequestsByReference.data).toHaveLength(1);
});

test('reference and metadata are checked; unknown fields are still refused', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const base = { walletId: user.walletId, amount: 1, description: 'd', merchantName: 'm' };
  const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
  for (const extra of [
    { reference: '' },
    { reference: 'x'.repeat(65) },
    { reference: 'tab\there' },
    { reference: 42 },
    { metadata: tooMany },
    { metadata: { ['k'.repeat(41)]: 'v' } },
    { metadata: { k: 'v'.repeat(501) } },
    { metadata: { k: 1 } },
    { metadata: { k: null } },
    { metadata: ['a'] },
    { metadata: 'x' },
    { callbackUrl: 'https://example.com' },
  ]) {
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { ...base, ...extra } });
    expect([JSON.stringify(extra).slice(0, 60), res.status]).toEqual([JSON.stringify(extra).slice(0, 60), 400]);
  }
  const [row] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from payment_requests where developer_id = ?', [dev.developerId]);
  expect(Number(row!.n)).toBe(0);
});
