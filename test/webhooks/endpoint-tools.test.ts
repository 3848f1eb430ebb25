// Webhook endpoints a developer can manage (issue 20, SPEC §14): the list's delivery figures,
// POST /webhook-endpoints/{id}/test (a signed webhook.test, not an event) and .../enable.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { factories, http as call, startTestApp, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { openApiAjv } from '../helpers/openapi.js';
import { startReceiver, verify } from './receiver.js';
import { SecretBox } from '../../src/webhooks/secret-box.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { poll } from '../helpers/expect.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    env: { WEBHOOK_RETRY_SCHEDULE: '2,3600', WEBHOOK_DISABLE_AFTER_SECONDS: '1', WEBHOOK_POLL_INTERVAL_MS: '100', WEBHOOK_TEST_LIMIT_PER_MINUTE: '3' },
  });
});
afterAll(async () => {
  await app.close();
});

async function register(secretKey: string, url: string) {
  const res = await call(app.baseUrl, '/api/v1/webhook-endpoints', { token: secretKey, body: { url } });
  expect(res.status).toBe(200);
  return res.body as { id: string; secret: string };
}

const endpoints = async (secretKey: string) => (await call(app.baseUrl, '/api/v1/webhook-endpoints', { token: secretKey })).body.data as any[];
const sendTest = (secretKey: string, id: string) => call(app.baseUrl, `/api/v1/webhook-endpoints/${id}/test`, { method: 'POST', token: secretKey });
const enable = (secretKey: string, id: string) => call(app.baseUrl, `/api/v1/webhook-endpoints/${id}/enable`, { method: 'POST', token: secretKey });

/** Polls the developer's endpoint list until `done` holds for the endpoint. */
function untilEndpoint(secretKey: string, id: string, done: (e: any) => boolean): Promise<any> {
  return poll(`endpoint ${id}`, async () => (await endpoints(secretKey)).find((x) => x.id === id), done, 20_000, 100);
}

/** A one-off HTTP server answering every request with `status` and `body`. */
async function answering(status: number, body: string): Promise<{ url: string; hits: Array<{ headers: http.IncomingHttpHeaders; body: string }>; close(): Promise<void> }> {
  const hits: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      hits.push({ headers: req.headers, body: text });
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

describe('POST /webhook-endpoints/{id}/test', () => {
  test('sends a signed webhook.test now and answers the receiver\'s status and the start of its body; nothing is stored', async () => {
    const dev = await factories(app).developer();
    const receiver = await answering(201, `thanks ${'x'.repeat(3000)}`);
    try {
      const endpoint = await register(dev.secretKey, receiver.url);
      const res = await sendTest(dev.secretKey, endpoint.id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ delivered: true, status: 201, durationMs: expect.any(Number), body: `thanks ${'x'.repeat(1017)}`, error: null });
      expect(receiver.hits).toHaveLength(1);
      const hit = receiver.hits[0]!;
      const event = verify(endpoint.secret, hit) as any;
      expect(event).toEqual({
        id: expect.stringMatching(/^evt_test_[A-Za-z0-9]{24}$/),
        type: 'webhook.test',
        createdAt: expect.any(String),
        data: { endpointId: endpoint.id, message: expect.any(String) },
      });
      expect(hit.headers['webhook-id']).toBe(event.id);
      expect(hit.headers['user-agent']).toBe('wallet-gateway-webhooks/1');
      // The payload is the contract's WebhookTestEvent.
      const validate = openApiAjv().getSchema('urn:wallet-gateway:openapi#/$defs/WebhookTestEvent')!;
      expect([validate(event), validate.errors]).toEqual([true, null]);
      // Not an event: not in the events API, no delivery, no attempt.
      expect((await call(app.baseUrl, '/api/v1/events', { token: dev.secretKey })).body.data).toEqual([]);
      expect((await call(app.baseUrl, `/api/v1/events/${event.id}`, { token: dev.secretKey })).status).toBe(400);
      const [row] = await app.db.orm.em.fork().execute<Array<{ n: number }>>('select count(*)::int as n from webhook_attempts where endpoint_id = ?', [endpoint.id]);
      expect(row!.n).toBe(0);
      expect((await endpoints(dev.secretKey))[0]).toMatchObject({ lastDeliveryAt: null, lastDeliveryStatus: null, pendingDeliveries: 0 });
    } finally {
      await receiver.close();
    }
  });

  test('a receiver that errors or is not there: delivered false, with its status, or null and why', async () => {
    const dev = await factories(app).developer();
    const failing = await answering(500, 'boom');
    const gone = await answering(200, '');
    await gone.close();
    try {
      const a = await register(dev.secretKey, failing.url);
      expect((await sendTest(dev.secretKey, a.id)).body).toEqual({ delivered: false, status: 500, durationMs: expect.any(Number), body: 'boom', error: null });
      const b = await register(dev.secretKey, gone.url);
      expect((await sendTest(dev.secretKey, b.id)).body).toEqual({ delivered: false, status: null, durationMs: expect.any(Number), body: null, error: 'ECONNREFUSED' });
    } finally {
      await failing.close();
    }
  });

  test('during a secret rotation the test is signed with both secrets, like a delivery', async () => {
    const dev = await factories(app).developer();
    const receiver = await answering(204, '');
    try {
      const endpoint = await register(dev.secretKey, receiver.url);
      const rotated = (await call(app.baseUrl, `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { method: 'POST', token: dev.secretKey })).body;
      expect((await sendTest(dev.secretKey, endpoint.id)).body).toMatchObject({ delivered: true, status: 204, body: '' });
      const hit = receiver.hits[0]!;
      expect(String(hit.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(verify(endpoint.secret, hit)).toMatchObject({ type: 'webhook.test' });
      expect(verify(rotated.secret, hit)).toMatchObject({ type: 'webhook.test' });
    } finally {
      await receiver.close();
    }
  });

  test('only the developer\'s own endpoints, not deleted ones; at most WEBHOOK_TEST_LIMIT_PER_MINUTE per endpoint', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const other = await f.developer();
    const receiver = await answering(200, 'ok');
    try {
      const endpoint = await register(dev.secretKey, receiver.url);
      const second = await register(dev.secretKey, `${receiver.url}?second`);
      expect((await sendTest(other.secretKey, endpoint.id)).body).toEqual({ statusCode: 404, message: 'Webhook endpoint not found' });
      expect((await sendTest(dev.secretKey, 'we_nope')).status).toBe(404);
      for (let i = 0; i < 3; i++) expect((await sendTest(dev.secretKey, endpoint.id)).status).toBe(200);
      const refused = await sendTest(dev.secretKey, endpoint.id);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ statusCode: 429, message: 'Too many test sends to this webhook endpoint' });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(receiver.hits).toHaveLength(3);
      // The limit is per endpoint.
      expect((await sendTest(dev.secretKey, second.id)).status).toBe(200);
      await call(app.baseUrl, `/api/v1/webhook-endpoints/${second.id}`, { method: 'DELETE', token: dev.secretKey });
      expect((await sendTest(dev.secretKey, second.id)).status).toBe(404);
    } finally {
      await receiver.close();
    }
  });
});

describe('the endpoint list and POST /webhook-endpoints/{id}/enable', () => {
  test('the list shows the last delivery attempt (time, HTTP status) and the pending deliveries', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const receiver = await startReceiver({ respond: (_r, i) => (i === 0 ? 200 : 503) });
    try {
      const endpoint = await register(dev.secretKey, receiver.url);
      expect((await endpoints(dev.secretKey))[0]).toMatchObject({ id: endpoint.id, lastDeliveryAt: null, lastDeliveryStatus: null, pendingDeliveries: 0 });
      await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      const ok = await untilEndpoint(dev.secretKey, endpoint.id, (e) => e.lastDeliveryStatus === 200);
      expect(ok).toMatchObject({ pendingDeliveries: 0, lastDeliveryAt: expect.any(String) });
      await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
      const failing = await untilEndpoint(dev.secretKey, endpoint.id, (e) => e.lastDeliveryStatus === 503);
      expect(failing.pendingDeliveries).toBe(1);
      expect(Date.parse(failing.lastDeliveryAt)).toBeGreaterThanOrEqual(Date.parse(ok.lastDeliveryAt));
    } finally {
      await receiver.close();
    }
  });

  test('a DISABLED endpoint is tested, enabled again; what was pending is sent at once, what was given up only by resend', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    let healthy = false;
    const receiver = await startReceiver({ respond: () => (healthy ? 200 : 503) });
    try {
      const endpoint = await register(dev.secretKey, receiver.url);
      const first = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      const second = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
      // Two attempts each (2 s apart, then an hour): failing for over WEBHOOK_DISABLE_AFTER_SECONDS, so DISABLED.
      const disabled = await untilEndpoint(dev.secretKey, endpoint.id, (e) => e.status === 'DISABLED');
      expect(disabled).toMatchObject({ disabledReason: expect.stringMatching(/^No successful delivery since /), lastDeliveryStatus: 503, pendingDeliveries: 2 });
      const events = (await call(app.baseUrl, '/api/v1/events', { token: dev.secretKey })).body.data as Array<{ id: string; data: { paymentRequest: { id: string } } }>;
      const eventOf = (id: string) => events.find((e) => e.data.paymentRequest.id === id)!.id;
      // The first one's retries run out meanwhile (as the worker records it): given up.
      await app.db.orm.em.fork().execute(`update webhook_deliveries set status = 'FAILED' where event_id = ?`, [eventOf(first)]);
      // The receiver is fixed; a test send shows it before enabling.
      healthy = true;
      expect((await sendTest(dev.secretKey, endpoint.id)).body).toMatchObject({ delivered: true, status: 200 });
      const before = receiver.received.length;
      const enabled = await enable(dev.secretKey, endpoint.id);
      expect(enabled.status).toBe(200);
      expect(enabled.body).toMatchObject({ id: endpoint.id, status: 'ENABLED', disabledReason: null, pendingDeliveries: 1 });
      // The pending delivery goes out at once (not in an hour), with its own webhook-id.
      await receiver.until((rs) => rs.some((r, i) => i >= before && r.id === eventOf(second) && r.status === 200), 10_000);
      expect(await untilEndpoint(dev.secretKey, endpoint.id, (e) => e.pendingDeliveries === 0)).toMatchObject({ lastDeliveryStatus: 200 });
      // The given-up one stays given up...
      expect(receiver.received.slice(before).some((r) => r.id === eventOf(first))).toBe(false);
      const detail = (await call(app.baseUrl, `/api/v1/events/${eventOf(first)}`, { token: dev.secretKey })).body;
      expect(detail.deliveries).toEqual([expect.objectContaining({ endpointId: endpoint.id, status: 'FAILED' })]);
      // ...until it is resent.
      await call(app.baseUrl, `/api/v1/events/${eventOf(first)}/resend`, { method: 'POST', token: dev.secretKey });
      await receiver.until((rs) => rs.some((r, i) => i >= before && r.id === eventOf(first) && r.status === 200), 10_000);
      // Enabling an enabled endpoint changes nothing; a deleted or foreign one is not found.
      expect((await enable(dev.secretKey, endpoint.id)).body).toMatchObject({ status: 'ENABLED' });
      const other = await f.developer();
      expect((await enable(other.secretKey, endpoint.id)).status).toBe(404);
      await call(app.baseUrl, `/api/v1/webhook-endpoints/${endpoint.id}`, { method: 'DELETE', token: dev.secretKey });
      expect((await enable(dev.secretKey, endpoint.id)).body).toEqual({ statusCode: 404, message: 'Webhook endpoint not found' });
    } finally {
      await receiver.close();
    }
  });
});

describe('in production', () => {
  let prod: TestApp;
  beforeAll(async () => {
    prod = await startTestApp({ env: { APP_ENV: 'production' } });
  });
  afterAll(async () => {
    await prod.close();
  });

  test('a test send follows the delivery rules: an endpoint that now points to this machine is refused before connecting', async () => {
    const dev = await factories(prod).developer();
    const receiver = await answering(200, 'ok');
    try {
      // As if its name resolved to a public address at registration and to loopback now (DNS rebinding).
      const [row] = await prod.db.orm.em
        .fork()
        .execute<Array<{ id: string }>>(
          `insert into webhook_endpoints (id, developer_id, url, secret_enc) values ('we_' || md5(random()::text), ?, ?, ?) returning id`,
          [dev.developerId, receiver.url.replace('http:', 'https:'), new SecretBox(prod.config.keySigningSecret).seal(newWebhookSecret())],
        );
      const res = await call(prod.baseUrl, `/api/v1/webhook-endpoints/${row!.id}/test`, { method: 'POST', token: dev.secretKey });
      expect(res.body).toEqual({ delivered: false, status: null, durationMs: expect.any(Number), body: null, error: 'address not allowed' });
      expect(receiver.hits).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });
});
