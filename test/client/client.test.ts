// The merchant's typed client (@wallet-gateway/client, clients/typescript), imported by its
// package name as a merchant does, against a real gateway: authentication, Idempotency-Keys,
// retries honouring Retry-After with the same key, typed errors, lists, waitForOutcome and
// webhooks.verify.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import getRawBody from 'raw-body';
import pg from 'pg';
import {
  WalletGateway,
  WalletGatewayError,
  WebhookVerificationError,
  webhooks,
  type RetryInfo,
  type WebhookEvent,
} from '@wallet-gateway/client';
import { TEST_PIN, factories, gql, startTestApp, type TestApp } from '../helpers/app.js';
import { describeOnServer } from '../helpers/db.js';
import { fingerprint } from '../../src/rest/idempotency.js';
import { signatureHeader } from '../../src/webhooks/signing.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    env: { RATE_LIMIT_PER_SECOND: '100000', WEBHOOK_POLL_INTERVAL_MS: '100', PAYMENT_REQUEST_TTL_SECONDS: '300' },
  });
});
afterAll(async () => {
  await app.close();
});

/** A developer with a client of its own, and a funded user. */
async function merchant(options: { onRetry?: (info: RetryInfo) => void; maxRetries?: number } = {}) {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const gateway = new WalletGateway({ secretKey: dev.secretKey, baseUrl: app.baseUrl, ...options });
  return { dev, user, gateway };
}

const order = (walletId: string, extra: Record<string, unknown> = {}) => ({
  walletId,
  amount: 12.5,
  description: 'Two flat whites',
  merchantName: 'Corner Café',
  ...extra,
});

/** The error a call rejects with. */
async function failure(call: Promise<unknown>): Promise<WalletGatewayError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WalletGatewayError);
  return err as WalletGatewayError;
}

describe('calls and errors', () => {
  test('errors are WalletGatewayError with the gateway\'s statusCode, message and request id', async () => {
    const { gateway, dev } = await merchant();
    const notFound = await failure(gateway.paymentRequests.get('00000000-0000-4000-8000-000000000000'));
    expect(notFound).toMatchObject({ statusCode: 404, message: 'Payment request not found', requestId: expect.any(String) });
    expect(notFound.requestId!.length).toBeGreaterThan(0);
    expect(await failure(gateway.paymentRequests.get('nope'))).toMatchObject({ statusCode: 400, message: 'id must be a UUID' });
    const bad = new WalletGateway({ secretKey: `${dev.secretKey.slice(0, -2)}xx`, baseUrl: app.baseUrl });
    expect(await failure(bad.accounts.walletId('someone'))).toMatchObject({ statusCode: 401, message: 'Invalid secret key' });
    expect(await failure(gateway.accounts.walletId('no_such_user'))).toMatchObject({ statusCode: 404 });
    // The request id is the one in the gateway's log line of that call.
    const logged = app.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === notFound.requestId);
    expect(logged).toBeDefined();
  });

  test('every POST carries an Idempotency-Key: a new one unless given; a given one replays the first answer', async () => {
    const { gateway, dev, user } = await merchant();
    const a = await gateway.paymentRequests.create(order(user.walletId));
    expect(a).toMatchObject({ success: true, status: 'PENDING', paymentRequestId: expect.stringMatching(UUID) });
    const b = await gateway.paymentRequests.create(order(user.walletId));
    expect(b.paymentRequestId).not.toBe(a.paymentRequestId);
    const keys = await app.db.orm.em
      .fork()
      .execute<Array<{ idempotency_key: string }>>('select idempotency_key from payment_requests where developer_id = ? order by created_at', [dev.developerId]);
    expect(keys.map((k) => k.idempotency_key)).toEqual([expect.stringMatching(UUID), expect.stringMatching(UUID)]);
    expect(keys[0]!.idempotency_key).not.toBe(keys[1]!.idempotency_key);
    const first = await gateway.paymentRequests.create(order(user.walletId), { idempotencyKey: 'order-1001' });
    const again = await gateway.paymentRequests.create(order(user.walletId), { idempotencyKey: 'order-1001' });
    expect(again).toEqual(first);
    const misuse = await failure(gateway.paymentRequests.create(order(user.walletId, { amount: 13 }), { idempotencyKey: 'order-1001' }));
    expect(misuse).toMatchObject({ statusCode: 422, message: 'Idempotency-Key was already used with a different request' });
    // The other POSTs too (here: registering an endpoint).
    await gateway.webhookEndpoints.create({ url: 'http://127.0.0.1:9/hooks' });
    const [claims] = [await app.db.orm.em.fork().execute<Array<{ key: string }>>('select key from idempotency_keys where developer_id = ?', [dev.developerId])];
    expect(claims.filter((c) => UUID.test(c.key))).toHaveLength(3);
  });

  test('a 409 "still being processed" is retried after Retry-After with the same key, and creates once', async () => {
    const retries: RetryInfo[] = [];
    const em = () => app.db.orm.em.fork();
    const { gateway, dev, user } = await merchant({
      // The first call finishes meanwhile (here: its claim is released).
      onRetry: (info) => {
        retries.push(info);
        void em().execute('delete from idempotency_keys where developer_id = ? and key = ?', [dev.developerId, 'busy-1']);
      },
    });
    const body = order(user.walletId);
    await em().execute(`insert into idempotency_keys (developer_id, key, fingerprint, state) values (?, 'busy-1', ?, 'IN_PROGRESS')`, [
      dev.developerId,
      fingerprint('POST', '/api/v1/wallet/request-payment', body),
    ]);
    const created = await gateway.paymentRequests.create(body, { idempotencyKey: 'busy-1' });
    expect(retries).toEqual([expect.objectContaining({ method: 'POST', status: 409, attempt: 1, delayMs: 1000, requestId: expect.any(String) })]);
    const rows = await em().execute<Array<{ id: string }>>('select id from payment_requests where developer_id = ? and idempotency_key = ?', [dev.developerId, 'busy-1']);
    expect(rows).toEqual([{ id: created.paymentRequestId }]);
  });

  test('a 409 about the request\'s own state is not retried', async () => {
    const retries: RetryInfo[] = [];
    const { gateway, user } = await merchant({ onRetry: (i) => retries.push(i) });
    const { paymentRequestId } = await gateway.paymentRequests.create(order(user.walletId));
    expect(await gateway.paymentRequests.cancel(paymentRequestId!)).toMatchObject({ status: 'CANCELLED' });
    expect(await failure(gateway.paymentRequests.cancel(paymentRequestId!))).toMatchObject({ statusCode: 409, message: 'Payment request is CANCELLED, not PENDING' });
    expect(retries).toEqual([]);
  });
});

describe('rate limited', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '1' } });
  });
  afterAll(async () => {
    await limited.close();
  });

  test('429 is retried after Retry-After; with retries off it is thrown with retryAfter', async () => {
    const dev = await factories(limited).developer();
    const retries: RetryInfo[] = [];
    const gateway = new WalletGateway({ secretKey: dev.secretKey, baseUrl: limited.baseUrl, maxRetries: 5, onRetry: (i) => retries.push(i) });
    // Three at once against a limit of one a second: two of them wait for a later window.
    const found = await Promise.all([1, 2, 3].map(() => gateway.webhookEndpoints.list()));
    expect(found).toEqual([[], [], []]);
    expect(retries.length).toBeGreaterThanOrEqual(2);
    for (const r of retries) expect(r).toMatchObject({ method: 'GET', status: 429, delayMs: expect.any(Number) });
    expect(Math.min(...retries.map((r) => r.delayMs))).toBeGreaterThanOrEqual(1000);
    const impatient = new WalletGateway({ secretKey: dev.secretKey, baseUrl: limited.baseUrl, maxRetries: 0 });
    const errors = (await Promise.allSettled([1, 2].map(() => impatient.webhookEndpoints.list()))).filter((r) => r.status === 'rejected');
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect((errors[0] as PromiseRejectedResult).reason).toMatchObject({ statusCode: 429, message: 'Too many requests', retryAfter: expect.any(Number) });
  });
});

describeOnServer('a busy database', 'it holds a row lock on another connection (the embedded database is one session)', () => {
  test('503 is retried with the same Idempotency-Key: the request is created once', async () => {
    const locker = new pg.Client({ connectionString: app.database.url });
    await locker.connect();
    try {
      const retries: RetryInfo[] = [];
      const { gateway, dev, user } = await merchant({
        onRetry: (info) => {
          retries.push(info);
          void locker.query('commit');
        },
      });
      // The wallet's row is held: the create's foreign-key check waits past the lock timeout (503, rolled back).
      await locker.query('begin');
      await locker.query('select 1 from wallets where id = $1 for update', [user.walletId]);
      const created = await gateway.paymentRequests.create(order(user.walletId), { idempotencyKey: 'busy-db-1' });
      expect(retries).toEqual([expect.objectContaining({ status: 503, attempt: 1 })]);
      const rows = await app.db.orm.em
        .fork()
        .execute<Array<{ id: string }>>('select id from payment_requests where developer_id = ?', [dev.developerId]);
      expect(rows).toEqual([{ id: created.paymentRequestId }]);
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await locker.end();
    }
  });
});

describe('lists', () => {
  test('paymentRequests.list filters and pages; all() walks every page; events.list filters by type and request', async () => {
    const { gateway, user } = await merchant();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await gateway.paymentRequests.create(order(user.walletId, { reference: i < 3 ? 'batch-a' : 'batch-b' }))).paymentRequestId!);
    const page = await gateway.paymentRequests.list({ reference: 'batch-a', limit: 2 });
    expect(page.data.map((p) => p.id)).toEqual([ids[2], ids[1]]);
    expect(page).toMatchObject({ hasMore: true, nextAfter: ids[1] });
    const rest = await gateway.paymentRequests.list({ reference: 'batch-a', limit: 2, after: page.nextAfter! });
    expect(rest.data.map((p) => p.id)).toEqual([ids[0]]);
    const walked: string[] = [];
    for await (const pr of gateway.paymentRequests.all({ limit: 2 })) walked.push(pr.id);
    expect(walked).toEqual([...ids].reverse());
    const today = new Date();
    const dayStart = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()));
    const byDate = await gateway.paymentRequests.list({ createdFrom: dayStart, createdTo: new Date(dayStart.getTime() + 2 * 86_400_000), status: 'PENDING' });
    expect(byDate.data.map((p) => p.id)).toEqual([...ids].reverse());
    await gateway.paymentRequests.cancel(ids[4]!);
    const events = await gateway.events.list({ type: ['payment_request.cancelled'] });
    expect(events.data.map((e) => [e.type, e.type === 'payment_request.cancelled' ? e.data.paymentRequest.id : null])).toEqual([['payment_request.cancelled', ids[4]]]);
    const ofOne = await gateway.events.list({ paymentRequestId: ids[4]! });
    expect(ofOne.data.map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.cancelled']);
  });
});

describe('waitForOutcome', () => {
  test('APPROVED: from the approval event, with the COMPLETED transaction', async () => {
    const { gateway, user } = await merchant();
    const { paymentRequestId } = await gateway.paymentRequests.create(order(user.walletId, { reference: 'wait-1' }));
    const waiting = gateway.waitForOutcome(paymentRequestId!, { pollIntervalMs: 100 });
    await gql(app.baseUrl, `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id } }`, { id: paymentRequestId }, user.token);
    const outcome = await waiting;
    expect(outcome.status).toBe('APPROVED');
    expect(outcome.paymentRequest).toMatchObject({ id: paymentRequestId, status: 'APPROVED', reference: 'wait-1' });
    expect(outcome.transaction).toMatchObject({ id: outcome.paymentRequest.transactionId, status: 'COMPLETED', amount: 12.5 });
    expect(outcome.event).toMatchObject({ type: 'payment_request.approved', id: expect.stringMatching(/^evt_/) });
    expect((await gateway.events.get(outcome.event!.id)).type).toBe('payment_request.approved');
  });

  test('REJECTED and CANCELLED end it too; a request already final is answered from its status at once', async () => {
    const { gateway, user } = await merchant();
    const rejected = (await gateway.paymentRequests.create(order(user.walletId))).paymentRequestId!;
    const waiting = gateway.waitForOutcome(rejected, { pollIntervalMs: 100 });
    await gql(app.baseUrl, 'mutation($id: ID!) { rejectPaymentRequest(id: $id) { id } }', { id: rejected }, user.token);
    expect(await waiting).toMatchObject({ status: 'REJECTED', transaction: null, event: { type: 'payment_request.rejected' } });
    const cancelled = (await gateway.paymentRequests.create(order(user.walletId))).paymentRequestId!;
    const waitingToo = gateway.waitForOutcome(cancelled, { pollIntervalMs: 100 });
    await gateway.paymentRequests.cancel(cancelled);
    expect(await waitingToo).toMatchObject({ status: 'CANCELLED', event: { type: 'payment_request.cancelled' } });
    expect(await gateway.waitForOutcome(rejected)).toMatchObject({ status: 'REJECTED', event: null, paymentRequest: { id: rejected } });
  });

  test('EXPIRED is read from the status at expiresAt, before any expiry event exists (the polling fallback)', async () => {
    const lazy = await startTestApp({ env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '3600000' } });
    try {
      const f = factories(lazy);
      const dev = await f.developer();
      const user = await f.user({ balance: 1 });
      const gateway = new WalletGateway({ secretKey: dev.secretKey, baseUrl: lazy.baseUrl });
      const { paymentRequestId } = await gateway.paymentRequests.create(order(user.walletId));
      const outcome = await gateway.waitForOutcome(paymentRequestId!, { pollIntervalMs: 100 });
      expect(outcome).toMatchObject({ status: 'EXPIRED', transaction: null, event: null, paymentRequest: { id: paymentRequestId, status: 'EXPIRED' } });
      expect((await gateway.events.list({ paymentRequestId: paymentRequestId!, type: 'payment_request.expired' })).data).toEqual([]);
    } finally {
      await lazy.close();
    }
  });
});

describe('webhooks.verify', () => {
  /** A Koa receiver that keeps the raw body and verifies it, as docs/merchants.md shows. */
  async function koaReceiver(secret: () => string) {
    const verified: WebhookEvent[] = [];
    const refused: unknown[] = [];
    const koa = new Koa();
    koa.use(async (ctx) => {
      const raw = await getRawBody(ctx.req, { limit: '1mb' });
      try {
        verified.push(webhooks.verify(raw, ctx.headers, secret()));
        ctx.status = 204;
      } catch (err) {
        refused.push(err);
        ctx.status = 400;
      }
    });
    const server = http.createServer(koa.callback());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
      verified,
      refused,
      close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
    };
  }

  test('a delivery verifies with the endpoint secret into a typed event; a test event too', async () => {
    const { gateway, user } = await merchant();
    let secret = '';
    const receiver = await koaReceiver(() => secret);
    try {
      const endpoint = await gateway.webhookEndpoints.create({ url: receiver.url, events: ['payment_request.approved'] });
      secret = endpoint.secret;
      const { paymentRequestId } = await gateway.paymentRequests.create(order(user.walletId));
      await gql(app.baseUrl, `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id } }`, { id: paymentRequestId }, user.token);
      const deadline = Date.now() + 15_000;
      while (receiver.verified.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const event = receiver.verified[0]!;
      // The union narrows on `type`: an approval carries its transaction.
      if (event.type !== 'payment_request.approved') throw new Error(`unexpected ${event.type}`);
      expect(event.data.transaction.paymentReference).toMatch(/^WPAY\d{12}-[A-Z0-9]{6}$/);
      expect(event.data.paymentRequest.id).toBe(paymentRequestId);
      expect(await gateway.webhookEndpoints.test(endpoint.id)).toMatchObject({ delivered: true, status: 204 });
      expect(receiver.verified[1]).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
      expect(receiver.refused).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  test('a changed body, another secret, an old timestamp or missing headers are refused', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = JSON.stringify({ id: 'evt_abc', type: 'payment_request.created', createdAt: new Date().toISOString(), data: {} });
    const now = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': 'evt_abc', 'webhook-timestamp': String(now), 'webhook-signature': signatureHeader([secret], 'evt_abc', now, body) };
    expect(webhooks.verify(body, headers, secret)).toMatchObject({ id: 'evt_abc', type: 'payment_request.created' });
    // Fetch Headers, upper-case names and bytes work as well.
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(webhooks.verify(Buffer.from(body), new Headers(headers), secret)).toMatchObject({ id: 'evt_abc' });
    expect(webhooks.verify(new TextEncoder().encode(body), upper, secret)).toMatchObject({ id: 'evt_abc' });
    const old = now - 600;
    const stale = { ...headers, 'webhook-timestamp': String(old), 'webhook-signature': signatureHeader([secret], 'evt_abc', old, body) };
    for (const [what, run] of [
      ['changed body', () => webhooks.verify(body.replace('created', 'approved'), headers, secret)],
      ['other secret', () => webhooks.verify(body, headers, 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh')],
      ['old timestamp', () => webhooks.verify(body, stale, secret)],
      ['no headers', () => webhooks.verify(body, {}, secret)],
      ['re-serialised body', () => webhooks.verify(JSON.stringify(JSON.parse(body), null, 2), headers, secret)],
    ] as const) {
      expect([what, (() => { try { run(); return 'accepted'; } catch (e) { return e instanceof WebhookVerificationError ? 'refused' : String(e); } })()]).toEqual([what, 'refused']);
    }
  });
});
