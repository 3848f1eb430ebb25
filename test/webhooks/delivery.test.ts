import { startTestApp, startSecondInstance, factories, http, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { describeOnServer } from '../helpers/db.js';
import { until } from '../helpers/expect.js';
import { startReceiver, verify, type Received } from './receiver.js';
import { sleep } from '../helpers/expect.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '1,1,1', WEBHOOK_POLL_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'false' } });
});
afterAll(async () => {
  await app.close();
});

async function register(secretKey: string, url: string, events?: string[]) {
  const res = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: secretKey, body: { url, ...(events ? { events } : {}) } });
  expect(res.status).toBe(200);
  return res.body as { id: string; url: string; events: string[]; status: string; secret: string };
}

const types = (rs: Received[]) => rs.map((r) => r.json.type);

/** The endpoint's deliveries once none is PENDING any more (the worker records an answer after the receiver gave it); bounded. */
async function settledRows(target: TestApp, endpointId: string) {
  let rows = await deliveryRows(target, endpointId);
  await until(
    async () => (rows = await deliveryRows(target, endpointId)).every((r) => r.status !== 'PENDING'),
    15_000,
    `the deliveries of endpoint ${endpointId} settling (still PENDING ones)`,
  );
  return rows;
}

/**
 * The deliveries queued for an endpoint, by payment request: written in the transaction of each
 * event, so once the call that made the event has answered, no row means nothing will ever be sent.
 */
async function deliveryRows(target: TestApp, endpointId: string, paymentRequestId?: string) {
  return target.db.orm.em
    .fork()
    .execute<Array<{ status: string; attempts: number }>>(
      `select status, attempts from webhook_deliveries where endpoint_id = ? ${paymentRequestId ? 'and subject_id = ?' : ''} order by id`,
      paymentRequestId ? [endpointId, paymentRequestId] : [endpointId],
    );
}

test('a registered endpoint receives created then approved, signed (verified with standardwebhooks), with the reference', async () => {
  const receiver = await startReceiver();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const endpoint = await register(dev.secretKey, receiver.url);
  expect(endpoint).toMatchObject({ url: receiver.url, status: 'ENABLED', events: expect.arrayContaining(['payment_request.created', 'transaction.refunded']) });
  expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 12.5, { reference: 'order-1001', metadata: { cart: 'c-7' } });
  await approve(app.baseUrl, user.token, id);
  const got = await receiver.until((rs) => rs.length >= 2);
  expect(types(got)).toEqual(['payment_request.created', 'payment_request.approved']);
  for (const r of got) {
    expect(verify(endpoint.secret, r)).toEqual(r.json);
    expect(r.id).toBe(r.json.id);
    expect(r.json.data.paymentRequest).toMatchObject({ id, reference: 'order-1001', metadata: { cart: 'c-7' } });
    expect(Math.abs(Number(r.timestamp) - Date.now() / 1000)).toBeLessThan(300);
  }
  expect(got[1]!.json.data.transaction).toMatchObject({ status: 'COMPLETED', amount: 12.5 });
  // A tampered body or another secret does not verify.
  expect(() => verify(endpoint.secret, { ...got[0]!, body: got[0]!.body.replace('12.5', '1250') })).toThrow();
  const other = await register(dev.secretKey, `${receiver.url}?other`);
  expect(() => verify(other.secret, got[0]!)).toThrow();
  // The secret is never shown again.
  const list = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey });
  expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([endpoint.id, other.id]);
  expect(JSON.stringify(list.body)).not.toContain('whsec_');
  await receiver.close();
});

test('500 then 200: delivered once more with the same webhook-id; the attempts are recorded', async () => {
  const receiver = await startReceiver({ respond: (_r, i) => (i === 0 ? 500 : 200) });
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const endpoint = await register(dev.secretKey, receiver.url);
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const got = await receiver.until((rs) => rs.some((r) => r.status === 200));
  expect(got.map((r) => r.status)).toEqual([500, 200]);
  expect(got[1]!.id).toBe(got[0]!.id);
  // Nothing more will be sent: the endpoint's only delivery is DELIVERED (no retry is pending).
  expect(await settledRows(app, endpoint.id)).toEqual([{ status: 'DELIVERED', attempts: 2 }]);
  expect(receiver.received).toHaveLength(2);
  const detail = await http(app.baseUrl, `/api/v1/events/${got[0]!.id}`, { token: dev.secretKey });
  expect(detail.status).toBe(200);
  expect(detail.body.deliveries).toEqual([expect.objectContaining({ status: 'DELIVERED', attempts: 2, lastError: null })]);
  expect(detail.body.attempts.map((a: { httpStatus: number | null; error: string | null }) => [a.httpStatus, a.error])).toEqual([
    [500, 'HTTP 500'],
    [200, null],
  ]);
  await receiver.close();
});

test('receiver down, then up on the same port: delivered by a scheduled retry', async () => {
  const probe = await startReceiver();
  const port = probe.port;
  await probe.close();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  await register(dev.secretKey, `http://127.0.0.1:${port}/hooks`);
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const em = app.db.orm.em.fork();
  const failedAttempts = async () => {
    const [row] = await em.execute<Array<{ n: string }>>(
      `select count(*) as n from webhook_attempts a join webhook_endpoints ep on ep.id = a.endpoint_id where ep.developer_id = ? and a.error is not null`,
      [dev.developerId],
    );
    return Number(row!.n);
  };
  await until(async () => (await failedAttempts()) > 0, 10_000, 'a failed attempt against the closed port');
  const receiver = await startReceiver({ port });
  const got = await receiver.until((rs) => rs.length >= 1);
  expect(types(got)).toEqual(['payment_request.created']);
  await receiver.close();
});

test('per payment request, approved is not delivered before created was delivered', async () => {
  let createdAnswered = false;
  const order: string[] = [];
  const receiver = await startReceiver({
    respond: (r, i) => {
      order.push(r.json.type);
      if (r.json.type === 'payment_request.created' && i < 2) return 503;
      if (r.json.type === 'payment_request.created') createdAnswered = true;
      return 200;
    },
  });
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  await register(dev.secretKey, receiver.url);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await receiver.until((rs) => rs.length >= 1);
  await approve(app.baseUrl, user.token, id);
  await receiver.until((rs) => rs.some((r) => r.json.type === 'payment_request.approved'));
  expect(createdAnswered).toBe(true);
  expect(order).toEqual(['payment_request.created', 'payment_request.created', 'payment_request.created', 'payment_request.approved']);
  await receiver.close();
});

test('retries exhausted: the delivery fails and the next event of the request goes out', async () => {
  const own = await startTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '1', WEBHOOK_POLL_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'false' } });
  try {
    const receiver = await startReceiver({ respond: (r) => (r.json.type === 'payment_request.created' ? 500 : 200) });
    const f = factories(own);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const res = await http(own.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url } });
    const id = await requestPayment(own.baseUrl, dev.secretKey, user.walletId, 1);
    await approve(own.baseUrl, user.token, id);
    const got = await receiver.until((rs) => rs.some((r) => r.json.type === 'payment_request.approved'), 20_000);
    expect(types(got)).toEqual(['payment_request.created', 'payment_request.created', 'payment_request.approved']);
    const detail = await http(own.baseUrl, `/api/v1/events/${got[0]!.id}`, { token: dev.secretKey });
    expect(detail.body.deliveries).toEqual([expect.objectContaining({ endpointId: res.body.id, status: 'FAILED', attempts: 2, lastError: 'HTTP 500', nextAttemptAt: null })]);
    await receiver.close();
  } finally {
    await own.close();
  }
});

test('an endpoint failing for longer than WEBHOOK_DISABLE_AFTER_SECONDS is disabled and says why', async () => {
  const own = await startTestApp({
    env: { WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1', WEBHOOK_DISABLE_AFTER_SECONDS: '1', WEBHOOK_POLL_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'false' },
  });
  try {
    const receiver = await startReceiver({ respond: () => 503 });
    const f = factories(own);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const endpoint = (await http(own.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url } })).body;
    await requestPayment(own.baseUrl, dev.secretKey, user.walletId, 1);
    await receiver.until((rs) => rs.length >= 2, 20_000);
    let mine: { status: string; disabledReason: string | null } | undefined;
    await until(
      async () => {
        mine = (await http(own.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey })).body.data[0];
        return mine?.status === 'DISABLED';
      },
      10_000,
      'the failing endpoint being disabled',
      100,
    );
    expect(mine).toMatchObject({ id: endpoint.id, status: 'DISABLED', disabledReason: expect.stringMatching(/^No successful delivery since \d{4}-/) });
    // Nothing more is sent to it: the next event's transaction queued no delivery for it.
    const next = await requestPayment(own.baseUrl, dev.secretKey, user.walletId, 1);
    expect(await deliveryRows(own, endpoint.id, next)).toEqual([]);
    await receiver.close();
  } finally {
    await own.close();
  }
});

describeOnServer('two instances', 'both instances would share the one connection of the embedded database, so their claims could not race', () => {
  test('two instances: every event is delivered, never twice at the same time', async () => {
    const second = await startSecondInstance(app, { WEBHOOK_POLL_INTERVAL_MS: '50', SANDBOX_TEST_WALLETS: 'false' });
    try {
      const inFlight = new Map<string, number>();
      let overlaps = 0;
      const receiver = await startReceiver({
        respond: async (r) => {
          const n = (inFlight.get(r.id) ?? 0) + 1;
          inFlight.set(r.id, n);
          if (n > 1) overlaps++;
          await sleep(30);
          inFlight.set(r.id, (inFlight.get(r.id) ?? 1) - 1);
          return 200;
        },
      });
      const f = factories(app);
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const endpoint = await register(dev.secretKey, receiver.url);
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) => requestPayment(i % 2 ? second.baseUrl : app.baseUrl, dev.secretKey, user.walletId, 1)),
      );
      const got = await receiver.until((rs) => new Set(rs.map((r) => r.id)).size >= ids.length, 20_000);
      expect(overlaps).toBe(0);
      expect(new Set(got.map((r) => r.json.data.paymentRequest.id))).toEqual(new Set(ids));
      // Every delivery is DELIVERED after one attempt (nothing pending, nothing sent twice), and the receiver saw each once.
      const rows = await settledRows(app, endpoint.id);
      expect(rows).toEqual(Array(ids.length).fill({ status: 'DELIVERED', attempts: 1 }));
      expect(receiver.received).toHaveLength(ids.length);
      await receiver.close();
    } finally {
      await second.close();
    }
  });
});

test('rotate-secret: the old and the new secret both verify for 24 h (two v1 signatures)', async () => {
  const receiver = await startReceiver();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const endpoint = await register(dev.secretKey, receiver.url, ['payment_request.created']);
  const rotated = await http(app.baseUrl, `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { method: 'POST', token: dev.secretKey });
  expect(rotated.status).toBe(200);
  expect(rotated.body.secret).toMatch(/^whsec_/);
  expect(rotated.body.secret).not.toBe(endpoint.secret);
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const [r] = await receiver.until((rs) => rs.length >= 1);
  expect(r!.signature.split(' ')).toHaveLength(2);
  expect(verify(rotated.body.secret, r!)).toEqual(r!.json);
  expect(verify(endpoint.secret, r!)).toEqual(r!.json);
  await receiver.close();
});

test('an endpoint only gets the event types it asked for; a deleted endpoint gets nothing more', async () => {
  const receiver = await startReceiver();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const endpoint = await register(dev.secretKey, receiver.url, ['payment_request.approved']);
  expect(endpoint.events).toEqual(['payment_request.approved']);
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await approve(app.baseUrl, user.token, a);
  const got = await receiver.until((rs) => rs.length >= 1);
  expect(types(got)).toEqual(['payment_request.approved']);
  const deleted = await http(app.baseUrl, `/api/v1/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', token: dev.secretKey });
  expect(deleted.status).toBe(200);
  expect(deleted.body).toMatchObject({ id: endpoint.id, status: 'DELETED' });
  expect((await http(app.baseUrl, `/api/v1/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', token: dev.secretKey })).status).toBe(404);
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await approve(app.baseUrl, user.token, b);
  // Nothing more is sent to it: the events of b (created, approved) queued no delivery for it.
  expect(await deliveryRows(app, endpoint.id, b)).toEqual([]);
  expect(receiver.received).toHaveLength(1);
  expect((await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey })).body.data).toEqual([]);
  await receiver.close();
});

test('endpoint input: at most 10, known event types, a real URL; another developer’s endpoint is not found', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const other = await f.developer();
  for (let i = 0; i < 10; i++) await register(dev.secretKey, `http://127.0.0.1:9/${i}`);
  const eleventh = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: 'http://127.0.0.1:9/x' } });
  expect(eleventh.status).toBe(409);
  for (const body of [
    { url: 'ftp://example.com/x' },
    { url: 'not a url' },
    { url: 'https://user:pw@example.com/' },
    { url: 'https://example.com/', events: ['payment_request.paid'] },
    { url: 'https://example.com/', events: [] },
    { url: 'https://example.com/', extra: 1 },
    {},
  ]) {
    const res = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: other.secretKey, body });
    expect([res.status, res.body.statusCode]).toEqual([400, 400]);
  }
  const mine = (await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey })).body.data[0].id as string;
  expect((await http(app.baseUrl, `/api/v1/webhook-endpoints/${mine}`, { method: 'DELETE', token: other.secretKey })).status).toBe(404);
  expect((await http(app.baseUrl, `/api/v1/webhook-endpoints/${mine}/rotate-secret`, { method: 'POST', token: other.secretKey })).status).toBe(404);
  expect((await http(app.baseUrl, '/api/v1/webhook-endpoints')).status).toBe(401);
});
