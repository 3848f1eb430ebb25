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

// Only a PostgreSQL server has a leadership connection that can be cut; the embedded database
// belongs to one process, which leads from start to close (src/background/leadership.ts).
describeOnServer('the leadership connection', 'only a server has a leadership connection to cut (the embedded database belongs to one process)', () => {
  test('re-establishes itself after the database drops it; the instance leads again and its subscribers keep receiving events', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const em = app.db.orm.em.fork();
    const from = app.logs.length;
    expect(app.gateway.leadership.isLeader).toBe(true);
    const killed = await em.execute<Array<{ pid: number }>>(
      `select pg_terminate_backend(pid) as ok, pid from pg_stat_activity where datname = current_database() and application_name = 'wallet-gateway-leadership'`,
    );
    expect(killed.length).toBe(1);
    // The instance logs losing the connection (and its leadership) and, once connected again, leads again.
    const logged = (text: string) => app.logs.slice(from).some((line) => line.includes(text));
    await until(() => logged('leadership connection lost') && logged('leadership connection re-established') && app.gateway.leadership.isLeader, 10_000, 'the instance to lead again');
    expect({ lost: logged('no longer the leader'), elected: logged('elected leader') }).toEqual({ lost: true, elected: true });
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
