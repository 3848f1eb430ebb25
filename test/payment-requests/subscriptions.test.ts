import { randomUUID } from 'node:crypto';
import { useTestApp, startSecondInstance, factories, http, type TestApp } from '../helpers/app.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { describeOnServer } from '../helpers/db.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';
import { poll, until } from '../helpers/expect.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

const REQUESTED = 'subscription { paymentRequested { id amount currency description merchantName status createdAt expiresAt } }';

test('the wallet owner receives paymentRequested after a creation through REST', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const client = wsClient(app.baseUrl, user.token);
  const sub = subscribe(client, REQUESTED);
  await untilSubscribed(app.gateway.services.eventHub, 1);
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: dev.secretKey,
    body: { walletId: user.walletId, amount: 12.5, description: 'Order 7', merchantName: 'Acme' },
  });
  expect(res.status).toBe(200);
  const event = await sub.next();
  expect(event.paymentRequested).toEqual({
    id: res.body.paymentRequestId,
    amount: 12.5,
    currency: 'ETB',
    description: 'Order 7',
    merchantName: 'Acme',
    status: 'PENDING',
    createdAt: expect.any(String),
    expiresAt: res.body.expiresAt,
  });
  sub.dispose();
  await client.dispose();
});

const UPDATED = 'subscription { paymentRequestUpdated { id status updatedAt transactionId } }';

test('isolation: a user never receives another user’s events', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const alice = await f.user({ balance: 100 });
  const bob = await f.user({ balance: 100 });
  const before = app.gateway.services.eventHub.stats.subscriptions;
  const ca = wsClient(app.baseUrl, alice.token);
  const cb = wsClient(app.baseUrl, bob.token);
  const sa = subscribe(ca, REQUESTED);
  const sb = subscribe(cb, REQUESTED);
  await untilSubscribed(app.gateway.services.eventHub, before + 2);
  // Each event is awaited before the next is created, and one publication reaches all its
  // receivers at once: an event leaked to the other user would arrive before that user's own next one.
  const forBob = await requestPayment(app.baseUrl, dev.secretKey, bob.walletId, 3);
  expect((await sb.next()).paymentRequested.id).toBe(forBob);
  const forAlice = await requestPayment(app.baseUrl, dev.secretKey, alice.walletId, 4);
  expect((await sa.next()).paymentRequested.id).toBe(forAlice);
  const forBobAgain = await requestPayment(app.baseUrl, dev.secretKey, bob.walletId, 5);
  expect((await sb.next()).paymentRequested.id).toBe(forBobAgain);
  expect(sa.values.map((v) => v.paymentRequested.id)).toEqual([forAlice]);
  expect(sb.values.map((v) => v.paymentRequested.id)).toEqual([forBob, forBobAgain]);
  sa.dispose();
  sb.dispose();
  await Promise.all([ca.dispose(), cb.dispose()]);
});

test('paymentRequestUpdated follows approve with the transactionId', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const client = wsClient(app.baseUrl, user.token);
  const before = app.gateway.services.eventHub.stats.subscriptions;
  const sub = subscribe(client, UPDATED);
  await untilSubscribed(app.gateway.services.eventHub, before + 1);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3);
  const res = await approve(app.baseUrl, user.token, id);
  const event = await sub.next();
  expect(event.paymentRequestUpdated).toEqual({
    id,
    status: 'APPROVED',
    updatedAt: expect.any(String),
    transactionId: res.body.data.approvePaymentRequest.transactionId,
  });
  sub.dispose();
  await client.dispose();
});

describe('a missing or bad token closes the socket with 4401 before any operation runs', () => {
  const cases: Array<[string, () => Promise<string | undefined>]> = [
    ['no connectionParams', async () => undefined],
    ['garbage', async () => 'not-a-jwt'],
    ['signed with another secret', async () => mintUserToken({ ...app.config, userTokenSecret: 'another-secret-0123456789abcdef' }, randomUUID())],
    ['expired', async () => mintUserToken(app.config, randomUUID(), -60)],
    ['a developer secret key', async () => (await factories(app).developer()).secretKey],
  ];
  for (const [name, token] of cases) {
    test(name, async () => {
      let closed: { code: number; reason: string } | undefined;
      const client = wsClient(app.baseUrl, await token(), { onClose: (code, reason) => (closed = { code, reason }) });
      const sub = subscribe(client, REQUESTED);
      await poll('the socket closed', () => closed, (c) => c !== undefined, 2000, 10);
      expect(closed).toEqual({ code: 4401, reason: 'Unauthorized' });
      expect(sub.values).toEqual([]);
      await client.dispose();
    });
  }
});

test('cross-instance: subscribed on one instance, created and approved through another', async () => {
  const second = await startSecondInstance(app);
  try {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const client = wsClient(app.baseUrl, user.token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const requested = subscribe(client, REQUESTED);
    const updated = subscribe(client, UPDATED);
    await untilSubscribed(app.gateway.services.eventHub, before + 2);
    const id = await requestPayment(second.baseUrl, dev.secretKey, user.walletId, 9.99);
    expect((await requested.next()).paymentRequested).toMatchObject({ id, amount: 9.99, status: 'PENDING' });
    const res = await approve(second.baseUrl, user.token, id);
    expect((await updated.next()).paymentRequestUpdated).toMatchObject({ id, status: 'APPROVED', transactionId: res.body.data.approvePaymentRequest.transactionId });
    // and the developer reads it back through the first instance
    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey });
    expect(status.body).toMatchObject({ status: 'APPROVED', transactionId: res.body.data.approvePaymentRequest.transactionId });
    requested.dispose();
    updated.dispose();
    await client.dispose();
  } finally {
    await second.close();
  }
});

test('cross-instance the other way round: subscribed on the second instance, created through the first', async () => {
  const second = await startSecondInstance(app);
  try {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const client = wsClient(second.baseUrl, user.token);
    const before = second.gateway.services.eventHub.stats.subscriptions;
    const requested = subscribe(client, REQUESTED);
    await untilSubscribed(second.gateway.services.eventHub, before + 1);
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    expect((await requested.next()).paymentRequested.id).toBe(id);
    requested.dispose();
    await client.dispose();
  } finally {
    await second.close();
  }
});

// Only a PostgreSQL server has a LISTEN connection that can be cut; the embedded database
// wakes its readers in-process through the commit hook instead (see src/events/event-source.ts).
describeOnServer('the LISTEN connection', 'only a server has a LISTEN connection to cut (the embedded database wakes its readers through a commit hook)', () => {
  test('re-establishes itself after the database drops it', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const em = app.db.orm.em.fork();
    const from = app.logs.length;
    const killed = await em.execute<Array<{ pid: number }>>(
      `select pg_terminate_backend(pid) as ok, pid from pg_stat_activity where datname = current_database() and application_name = 'wallet-gateway-events'`,
    );
    expect(killed.length).toBeGreaterThanOrEqual(1);
    // The source logs losing the connection and, once it listens again, reconnecting.
    const logged = (text: string) => app.logs.slice(from).some((line) => line.includes(text));
    await until(() => logged('event listener lost its connection') && logged('event listener reconnected'), 10_000, 'the listener logged losing its connection and reconnecting');
    expect({ lost: logged('event listener lost its connection'), reconnected: logged('event listener reconnected') }).toEqual({ lost: true, reconnected: true });
    expect(app.gateway.services.eventHub.healthy).toBe(true);
    const client = wsClient(app.baseUrl, user.token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const sub = subscribe(client, REQUESTED);
    await untilSubscribed(app.gateway.services.eventHub, before + 1);
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    expect((await sub.next()).paymentRequested.id).toBe(id);
    sub.dispose();
    await client.dispose();
  });
});
