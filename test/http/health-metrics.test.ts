// Health and metrics: /healthz (process up), /readyz (database reachable, else 503), /metrics
// (Prometheus: HTTP latency by route and status, payment requests by outcome, open
// subscriptions, event delivery lag).
import { randomUUID } from 'node:crypto';
import { TEST_PIN, useTestApp, http, startTestApp, type TestApp, type factories } from '../helpers/app.js';
import { expectError, expectOk, withDeadline, poll } from '../helpers/expect.js';
import { approve, cancel, createPaymentRequest, getStatus, REST_TEST_ENV } from '../helpers/rest.js';
import { reject } from '../helpers/payments.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { parseExposition, valueOf, type Sample } from '../helpers/prometheus.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { ...REST_TEST_ENV } }, (x) => ({ app, f } = x));

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const res = await http(app.baseUrl, '/metrics');
  expect(res.status).toBe(200);
  const text = res.body as string;
  return { text, samples: parseExposition(text) };
}

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  return valueOf((await scrape()).samples, name, labels);
}

/** Polls until a metric has a value (the server side of a WebSocket settles after the client's call returns). */
async function untilMetric(name: string, expected: number, timeoutMs = 3000): Promise<void> {
  await poll(`${name} to be ${expected}`, () => metric(name), (v) => v === expected, timeoutMs);
}

describe('/healthz and /readyz', () => {
  test('/healthz answers 200 while the process is up', async () => {
    const res = await http(app.baseUrl, '/healthz');
    expectOk(res);
    expect(res.body).toEqual({ status: 'ok' });
  });

  test('/readyz answers 200 while the database answers', async () => {
    const res = await http(app.baseUrl, '/readyz');
    expectOk(res);
    expect(res.body).toMatchObject({ status: 'ready' });
  });

  test('/readyz answers 503 with the Error body, quickly, once the database is gone; /healthz stays 200', async () => {
    const broken = await startTestApp();
    try {
      expectOk(await http(broken.baseUrl, '/readyz'));
      await broken.db.close();
      // The probe gives up on the database after its connection timeout (~2.5 s) instead of
      // hanging: a client with a 10 s deadline gets the 503.
      for (let i = 0; i < 2; i++) {
        const res = await withDeadline(http(broken.baseUrl, '/readyz'), 10_000, '/readyz while the database is gone');
        expectError(res, 503);
      }
      // The process is still up and serving: it reports the failure rather than crashing on it.
      const health = await http(broken.baseUrl, '/healthz');
      expectOk(health);
      expect(health.body).toEqual({ status: 'ok' });
      expect((await http(broken.baseUrl, '/metrics')).status).toBe(200);
      // And the probe's failures are in its latency metric with status 503.
      const samples = parseExposition((await http(broken.baseUrl, '/metrics')).body as string);
      expect(valueOf(samples, 'http_request_duration_seconds_count', { route: 'GET /readyz', status: '503' })).toBe(2);
    } finally {
      await broken.gateway.dispose();
      // The ORM is closed already; for a server database, drop the test database too.
      await broken.database.close().catch(() => undefined);
    }
  });
});

describe('/metrics', () => {
  test('is the Prometheus text format with the four families described', async () => {
    const res = await http(app.baseUrl, '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.body as string;
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE payment_requests_total counter');
    expect(text).toContain('# TYPE graphql_open_subscriptions gauge');
    expect(text).toContain('# TYPE event_delivery_lag_seconds histogram');
    expect(() => parseExposition(text)).not.toThrow();
  });

  test('HTTP latency histograms by method, route template and status', async () => {
    const dev = await f.developer();
    const user = await f.user();
    const id = await createPaymentRequest(app, dev.secretKey, user.walletId);
    const route = 'GET /api/v1/wallet/payment-request/:requestId';
    const before = (await scrape()).samples;
    const count = (samples: Sample[], status: string) => valueOf(samples, 'http_request_duration_seconds_count', { method: 'GET', route, status });
    for (let i = 0; i < 3; i++) expectOk(await getStatus(app, dev.secretKey, id));
    expectError(await getStatus(app, dev.secretKey, randomUUID()), 404);
    expectError(await getStatus(app, undefined, id), 401);
    const after = (await scrape()).samples;
    expect(count(after, '200') - count(before, '200')).toBe(3);
    expect(count(after, '404') - count(before, '404')).toBe(1);
    expect(count(after, '401') - count(before, '401')).toBe(1);
    // Buckets: cumulative, ending in +Inf, which equals the count.
    const buckets = after.filter((s) => s.name === 'http_request_duration_seconds_bucket' && s.labels.route === route && s.labels.status === '200');
    expect(buckets.length).toBeGreaterThan(1);
    const inf = buckets.find((b) => b.labels.le === '+Inf')!;
    expect(inf.value).toBe(count(after, '200'));
    const values = buckets.map((b) => b.value);
    expect([...values].sort((a, b) => a - b)).toEqual(values);
    expect(valueOf(after, 'http_request_duration_seconds_sum', { route, status: '200' })).toBeGreaterThan(0);
    // Route labels are templates: no id ever becomes a label value (unbounded cardinality).
    for (const s of after) if (s.labels.route) expect(s.labels.route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/i);
    expect(after.some((s) => s.labels.route?.includes(id))).toBe(false);
  });

  test('other routes have their own series (POST request-payment, /graphql, /healthz)', async () => {
    const dev = await f.developer();
    const user = await f.user();
    await createPaymentRequest(app, dev.secretKey, user.walletId);
    await http(app.baseUrl, '/graphql', { body: { query: '{ __typename }' } });
    await http(app.baseUrl, '/healthz');
    const { samples } = await scrape();
    for (const [method, route] of [
      ['POST', 'POST /api/v1/wallet/request-payment'],
      ['POST', 'POST /graphql'],
      ['GET', 'GET /healthz'],
    ]) {
      expect(valueOf(samples, 'http_request_duration_seconds_count', { method: method!, route: route!, status: '200' })).toBeGreaterThanOrEqual(1);
    }
  });

  test('payment requests by outcome: created, approved, rejected, cancelled, insufficient_funds', async () => {
    const outcomes = ['created', 'approved', 'rejected', 'cancelled', 'insufficient_funds'] as const;
    const read = async () => {
      const { samples } = await scrape();
      return Object.fromEntries(outcomes.map((o) => [o, valueOf(samples, 'payment_requests_total', { outcome: o })]));
    };
    const before = await read();
    const dev = await f.developer();
    const user = await f.user({ balance: 20 });
    const toApprove = await createPaymentRequest(app, dev.secretKey, user.walletId, { amount: 10 });
    const toReject = await createPaymentRequest(app, dev.secretKey, user.walletId, { amount: 10 });
    const toCancel = await createPaymentRequest(app, dev.secretKey, user.walletId, { amount: 10 });
    const tooMuch = await createPaymentRequest(app, dev.secretKey, user.walletId, { amount: 500 });
    await approve(app, user.token, toApprove);
    expect((await reject(app.baseUrl, user.token, toReject)).body.data.rejectPaymentRequest.status).toBe('REJECTED');
    expectOk(await cancel(app, dev.secretKey, toCancel));
    const poor = await http(app.baseUrl, '/graphql', {
      token: user.token,
      body: { query: `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id } }`, variables: { id: tooMuch } },
    });
    expect(poor.body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
    // Refused calls are no outcome: a second cancel (409) and a 400 create change nothing.
    expect((await cancel(app, dev.secretKey, toCancel)).status).toBe(409);
    expect((await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body: { walletId: user.walletId, amount: 0, description: 'x', merchantName: 'y' } })).status).toBe(400);
    const after = await read();
    const delta = Object.fromEntries(outcomes.map((o) => [o, after[o]! - before[o]!]));
    expect(delta).toEqual({ created: 4, approved: 1, rejected: 1, cancelled: 1, insufficient_funds: 1 });
  });

  test('graphql_open_subscriptions is 1 while a subscription is open and 0 after it ends', async () => {
    await untilMetric('graphql_open_subscriptions', 0);
    const user = await f.user();
    const client = wsClient(app.baseUrl, user.token);
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, 1);
    expect(await metric('graphql_open_subscriptions')).toBe(1);
    const second = subscribe(client, 'subscription { paymentRequestUpdated { id status } }');
    await untilSubscribed(app.gateway.services.eventHub, 2);
    expect(await metric('graphql_open_subscriptions')).toBe(2);
    sub.dispose();
    await untilMetric('graphql_open_subscriptions', 1);
    second.dispose();
    await untilMetric('graphql_open_subscriptions', 0);
    await client.dispose();
  });

  test('a dropped connection ends its subscriptions in the gauge too', async () => {
    await untilMetric('graphql_open_subscriptions', 0);
    const user = await f.user();
    const client = wsClient(app.baseUrl, user.token);
    subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, 1);
    expect(await metric('graphql_open_subscriptions')).toBe(1);
    await client.dispose();
    await untilMetric('graphql_open_subscriptions', 0);
  });

  test('event_delivery_lag_seconds observes each delivered event', async () => {
    const dev = await f.developer();
    const user = await f.user();
    const before = await scrape();
    const scrapedBefore = performance.now();
    const countBefore = valueOf(before.samples, 'event_delivery_lag_seconds_count');
    const client = wsClient(app.baseUrl, user.token);
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, 1);
    const id = await createPaymentRequest(app, dev.secretKey, user.walletId);
    expect((await sub.next()).paymentRequested.id).toBe(id);
    const after = await scrape();
    const secondsBetweenScrapes = (performance.now() - scrapedBefore) / 1000;
    expect(valueOf(after.samples, 'event_delivery_lag_seconds_count') - countBefore).toBe(1);
    const sum = valueOf(after.samples, 'event_delivery_lag_seconds_sum') - valueOf(before.samples, 'event_delivery_lag_seconds_sum');
    // In seconds, and no longer than the whole time between the two scrapes it happened in.
    expect(sum).toBeGreaterThanOrEqual(0);
    expect(sum).toBeLessThanOrEqual(secondsBetweenScrapes);
    expect(valueOf(after.samples, 'event_delivery_lag_seconds_bucket', { le: '+Inf' })).toBe(valueOf(after.samples, 'event_delivery_lag_seconds_count'));
    sub.dispose();
    await client.dispose();
  });

  test('an event nobody here listens for is not counted as delivered', async () => {
    const dev = await f.developer();
    const user = await f.user();
    await untilMetric('graphql_open_subscriptions', 0);
    const listener = await f.user();
    const client = wsClient(app.baseUrl, listener.token);
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, 1);
    const countBefore = await metric('event_delivery_lag_seconds_count');
    await createPaymentRequest(app, dev.secretKey, user.walletId);
    // A later event for a listener is delivered and counted; the unheard one before it is not.
    const heard = await createPaymentRequest(app, dev.secretKey, listener.walletId);
    expect((await sub.next()).paymentRequested.id).toBe(heard);
    expect(await metric('event_delivery_lag_seconds_count')).toBe(countBefore + 1);
    sub.dispose();
    await client.dispose();
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  let guarded: TestApp;
  const token = 'metrics-token-0123456789abcdef';
  beforeAll(async () => {
    guarded = await startTestApp({ env: { METRICS_TOKEN: token } });
  });
  afterAll(async () => {
    await guarded.close();
  });

  test('requires the token: 401 without or with a wrong one, 200 with it', async () => {
    const none = await http(guarded.baseUrl, '/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ statusCode: 401, message: 'Invalid metrics token' });
    expect((await http(guarded.baseUrl, '/metrics', { token: 'wrong-token-0123456789' })).status).toBe(401);
    const ok = await http(guarded.baseUrl, '/metrics', { token });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain('http_request_duration_seconds');
  });
});
