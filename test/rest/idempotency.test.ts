import { useTestApp, http, type TestApp, type factories } from '../helpers/app.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { fingerprint } from '../../src/rest/idempotency.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { RATE_LIMIT_PER_SECOND: '1000' } }, (x) => ({ app, f } = x));

const post = (token: string, key: string | undefined, body: unknown) =>
  http(app.baseUrl, '/api/v1/wallet/request-payment', { token, body, headers: key ? { 'Idempotency-Key': key } : {} });

async function countRequests(developerId: string): Promise<number> {
  const [row] = await app.db.orm.em.fork().execute<Array<{ n: number }>>('select count(*)::int as n from payment_requests where developer_id = ?', [developerId]);
  return row!.n;
}

test('same key, same body: the first response again, marked replayed, nothing new created', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const body = { walletId: user.walletId, amount: 5, description: 'Order 1', merchantName: 'Shop' };
  const first = await post(dev.secretKey, 'order-1', body);
  expect(first.status).toBe(200);
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  const again = await post(dev.secretKey, 'order-1', { merchantName: 'Shop', description: 'Order 1', amount: 5, walletId: user.walletId });
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(again.body).toEqual(first.body);
  expect(await countRequests(dev.developerId)).toBe(1);
});

test('same key, different body: 422 and nothing created', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  await post(dev.secretKey, 'k-422', { walletId: user.walletId, amount: 5, description: 'A', merchantName: 'Shop' });
  const res = await post(dev.secretKey, 'k-422', { walletId: user.walletId, amount: 6, description: 'A', merchantName: 'Shop' });
  expect(res.status).toBe(422);
  expect(res.body).toEqual({ statusCode: 422, message: 'Idempotency-Key was already used with a different request' });
  expect(await countRequests(dev.developerId)).toBe(1);
});

test('same key, a different body that is also invalid: still 422 (the key is judged before the body), nothing created', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  await post(dev.secretKey, 'k-422-bad', { walletId: user.walletId, amount: 5, description: 'A', merchantName: 'Shop' });
  for (const body of [
    { walletId: user.walletId, amount: -1, description: 'A', merchantName: 'Shop' },
    { walletId: user.walletId, amount: 5, description: '', merchantName: 'Shop' },
  ]) {
    const res = await post(dev.secretKey, 'k-422-bad', body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ statusCode: 422, message: 'Idempotency-Key was already used with a different request' });
  }
  expect(await countRequests(dev.developerId)).toBe(1);
});

test('keys are scoped per developer', async () => {
  const a = await f.developer();
  const b = await f.developer();
  const user = await f.user({ balance: 10 });
  const body = { walletId: user.walletId, amount: 1, description: 'A', merchantName: 'Shop' };
  const ra = await post(a.secretKey, 'shared-key', body);
  const rb = await post(b.secretKey, 'shared-key', body);
  expect(rb.headers.get('idempotent-replayed')).toBeNull();
  expect(rb.body.paymentRequestId).not.toBe(ra.body.paymentRequestId);
});

test('a call that failed validation is not stored: the key can be used again', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const bad = await post(dev.secretKey, 'k-retry', { walletId: user.walletId, amount: 0, description: 'A', merchantName: 'Shop' });
  expect(bad.status).toBe(400);
  const good = await post(dev.secretKey, 'k-retry', { walletId: user.walletId, amount: 2, description: 'A', merchantName: 'Shop' });
  expect(good.status).toBe(200);
  expect(good.headers.get('idempotent-replayed')).toBeNull();
});

test('a bad Idempotency-Key header is a 400', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await post(dev.secretKey, 'x'.repeat(256), { walletId: user.walletId, amount: 2, description: 'A', merchantName: 'Shop' });
  expect(res.status).toBe(400);
  expect(res.body.message).toMatch(/Idempotency-Key/);
});

test('an empty Idempotency-Key header is a 400 (SPEC §10: 1-255 characters), not a call without a key; nothing is created', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const body = { walletId: user.walletId, amount: 2, description: 'A', merchantName: 'Shop' };
  for (let i = 0; i < 2; i++) {
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body, headers: { 'Idempotency-Key': '' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ statusCode: 400, message: 'Idempotency-Key must be 1-255 printable characters' });
  }
  expect(await countRequests(dev.developerId)).toBe(0);
  const created = await post(dev.secretKey, undefined, body);
  const cancel = await http(app.baseUrl, `/api/v1/wallet/payment-request/${created.body.paymentRequestId}/cancel`, { method: 'POST', token: dev.secretKey, headers: { 'Idempotency-Key': '' } });
  expect(cancel.status).toBe(400);
  expect((await http(app.baseUrl, `/api/v1/wallet/payment-request/${created.body.paymentRequestId}`, { token: dev.secretKey })).body.status).toBe('PENDING');
});

test('cancel honours Idempotency-Key too: the retry replays the 200', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const created = await post(dev.secretKey, undefined, { walletId: user.walletId, amount: 2, description: 'A', merchantName: 'Shop' });
  const path = `/api/v1/wallet/payment-request/${created.body.paymentRequestId}/cancel`;
  const first = await http(app.baseUrl, path, { method: 'POST', token: dev.secretKey, headers: { 'Idempotency-Key': 'cancel-1' } });
  const again = await http(app.baseUrl, path, { method: 'POST', token: dev.secretKey, headers: { 'Idempotency-Key': 'cancel-1' } });
  expect(first.status).toBe(200);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  const plain = await http(app.baseUrl, path, { method: 'POST', token: dev.secretKey });
  expect(plain.status).toBe(409);
});

test('same key while the first call is still running: 409 with Retry-After, the mark of a 409 a retry with the same key cures', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const body = { walletId: user.walletId, amount: 2, description: 'Running', merchantName: 'Shop' };
  // The first call's claim, committed and not finished (its instance is still working on it).
  await app.db.orm.em
    .fork()
    .execute(`insert into idempotency_keys (developer_id, key, fingerprint, state) values (?, 'running-1', ?, 'IN_PROGRESS')`, [
      dev.developerId,
      fingerprint('POST', '/api/v1/wallet/request-payment', body),
    ]);
  const busy = await post(dev.secretKey, 'running-1', body);
  expect(busy.status).toBe(409);
  expect(busy.body).toEqual({ statusCode: 409, message: 'A request with this Idempotency-Key is still being processed' });
  expect(busy.headers.get('retry-after')).toBe('1');
  expect(await countRequests(dev.developerId)).toBe(0);
  // A 409 about the state of the request itself is final: no Retry-After.
  const id = (await post(dev.secretKey, undefined, { ...body, description: 'Cancel me' })).body.paymentRequestId;
  await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}/cancel`, { method: 'POST', token: dev.secretKey });
  const again = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}/cancel`, { method: 'POST', token: dev.secretKey });
  expect(again.status).toBe(409);
  expect(again.headers.get('retry-after')).toBeNull();
});

describeOnServer('concurrent calls', ONE_CONNECTION, () => {
  test('fifty concurrent calls with one key: exactly one request and one notification; the others replay or get 409', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 10 });
    const client = wsClient(app.baseUrl, user.token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, before + 1);
    const body = { walletId: user.walletId, amount: 3, description: 'Once', merchantName: 'Shop' };
    const results = await Promise.all(Array.from({ length: 50 }, () => post(dev.secretKey, 'fifty', body)));
    const created = results.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === null);
    const replayed = results.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') === 'true');
    const conflicts = results.filter((r) => r.status === 409);
    expect(created).toHaveLength(1);
    expect(replayed.length + conflicts.length).toBe(49);
    for (const r of replayed) expect(r.body.paymentRequestId).toBe(created[0]!.body.paymentRequestId);
    for (const r of conflicts) expect(r.body).toEqual({ statusCode: 409, message: 'A request with this Idempotency-Key is still being processed' });
    expect(await countRequests(dev.developerId)).toBe(1);
    expect((await sub.next()).paymentRequested.id).toBe(created[0]!.body.paymentRequestId);
    // No second notification: the next one this user receives is of a later, different request.
    const later = await post(dev.secretKey, 'after-fifty', { ...body, description: 'Later' });
    expect((await sub.next()).paymentRequested.id).toBe(later.body.paymentRequestId);
    expect(sub.values).toHaveLength(2);
    sub.dispose();
    await client.dispose();
  });
});

test('records are removed by the cleanup after 24 hours', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const body = { walletId: user.walletId, amount: 1, description: 'Old', merchantName: 'Shop' };
  await post(dev.secretKey, 'old-key', body);
  await app.db.orm.em.fork().execute(`update idempotency_keys set created_at = now() - interval '25 hours' where developer_id = ?`, [dev.developerId]);
  const removed = await app.gateway.maintenance.run();
  expect(removed.idempotencyKeys).toBeGreaterThanOrEqual(1);
  const [row] = await app.db.orm.em.fork().execute<Array<{ n: number }>>('select count(*)::int as n from idempotency_keys where developer_id = ?', [dev.developerId]);
  expect(row!.n).toBe(0);
});
