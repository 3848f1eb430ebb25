import { startSecondInstance, startTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';
import { describeOnServer } from '../helpers/db.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { approve, cancel, reject, requestPayment } from '../helpers/payments.js';
import { until } from '../helpers/expect.js';
import { appendEvents } from '../../src/events/append.js';
import { newPaymentCode } from '../../src/payment-requests/payment-request.entity.js';
import type { Tx } from '../../src/db/unit-of-work.js';
import { paymentRequestBody } from '../../src/payment-requests/payment-request.body.js';
import { paymentRequestColumns, paymentRequestFromRow } from '../../src/payment-requests/payment-request.read.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '100' } });
});
afterAll(async () => {
  await app.close();
});

interface EventRow {
  id: string;
  type: string;
  sequence: number;
  developer_id: string;
  transaction_id: string | null;
  payload: { id: string; type: string; createdAt: string; data: { paymentRequest: Record<string, unknown>; transaction?: Record<string, unknown> } };
}

async function eventsOf(paymentRequestId: string): Promise<EventRow[]> {
  return app.db.orm.em
    .fork()
    .execute<EventRow[]>('select id, type, sequence, developer_id, transaction_id, payload from events where payment_request_id = ? order by sequence', [
      paymentRequestId,
    ]);
}

test('create then approve: two events, sequence 1 and 2, payloads equal the REST bodies', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 12.5, { reference: 'order-1', metadata: { cart: '7' } });
  const [created] = await eventsOf(id);
  expect(created).toMatchObject({ type: 'payment_request.created', sequence: 1, developer_id: dev.developerId, transaction_id: null });
  expect(created!.payload.id).toBe(created!.id);
  expect(created!.id).toMatch(/^evt_\d{13}[A-Za-z0-9]{24}$/);
  expect(created!.payload.data.paymentRequest).toEqual((await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey })).body);
  expect(created!.payload.data.paymentRequest).toMatchObject({ status: 'PENDING', reference: 'order-1', metadata: { cart: '7' } });
  expect(created!.payload.data).not.toHaveProperty('transaction');

  expect((await approve(app.baseUrl, user.token, id)).body.errors).toBeUndefined();
  const events = await eventsOf(id);
  expect(events.map((e) => [e.type, e.sequence])).toEqual([
    ['payment_request.created', 1],
    ['payment_request.approved', 2],
  ]);
  const approved = events[1]!;
  const status = (await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey })).body;
  expect(approved.payload.data.paymentRequest).toEqual(status);
  const tx = (await http(app.baseUrl, `/api/v1/wallet/transaction/${status.transactionId}`, { token: dev.secretKey })).body;
  expect(approved.payload.data.transaction).toEqual(tx);
  expect(approved.transaction_id).toBe(status.transactionId);
  expect(Object.keys(approved.payload).sort()).toEqual(['createdAt', 'data', 'id', 'type']);
});

test('reject and cancel each write one event', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  expect((await reject(app.baseUrl, user.token, a)).body.errors).toBeUndefined();
  expect((await cancel(app.baseUrl, dev.secretKey, b)).status).toBe(200);
  expect((await eventsOf(a)).map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.rejected']);
  expect((await eventsOf(b)).map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.cancelled']);
  // A refused second decision writes nothing.
  expect((await cancel(app.baseUrl, dev.secretKey, a)).status).toBe(409);
  expect(await eventsOf(a)).toHaveLength(2);
});

test('an approval that fails for insufficient funds writes no event', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 1 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 50);
  const res = await approve(app.baseUrl, user.token, id);
  expect(res.body.errors[0].extensions.code).toBe('INSUFFICIENT_FUNDS');
  expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payment_request.created']);
});

test('a refund writes transaction.refunded with the REFUNDED transaction body', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5);
  const approved = await approve(app.baseUrl, user.token, id);
  const txId = approved.body.data.approvePaymentRequest.transactionId as string;
  const refunded = await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id) { id status } }', { id: txId }, app.config.adminToken);
  expect(refunded.body.errors).toBeUndefined();
  const events = await eventsOf(id);
  expect(events.map((e) => [e.type, e.sequence])).toEqual([
    ['payment_request.created', 1],
    ['payment_request.approved', 2],
    ['transaction.refunded', 3],
  ]);
  const tx = (await http(app.baseUrl, `/api/v1/wallet/transaction/${txId}`, { token: dev.secretKey })).body;
  expect(tx).toMatchObject({ status: 'REFUNDED', refundedAmount: 5 });
  expect(events[2]!.payload.data.transaction).toEqual(tx);
});

test('the sweeper’s expiry writes payment_request.expired', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await app.db.orm.em.fork().execute(`update payment_requests set expires_at = created_at + interval '1 millisecond' where id = ?`, [id]);
  await until(async () => (await eventsOf(id)).length >= 2, 10_000, 'the sweeper writing payment_request.expired');
  const events = await eventsOf(id);
  expect(events.map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.expired']);
  expect(events[1]!.payload.data.paymentRequest).toMatchObject({ id, status: 'EXPIRED', transactionId: null });
});

test('event payloads never carry a user id, username, phone, wallet id or developer id', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const a = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2, { reference: 'ref-x', metadata: { k: 'v' } });
  const approved = await approve(app.baseUrl, user.token, a);
  await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id) { id } }', { id: approved.body.data.approvePaymentRequest.transactionId }, app.config.adminToken);
  const b = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
  await reject(app.baseUrl, user.token, b);
  const payloads = [...(await eventsOf(a)), ...(await eventsOf(b))].map((e) => JSON.stringify(e.payload));
  expect(payloads).toHaveLength(5);
  for (const text of payloads) {
    for (const secret of [user.userId, user.username, user.phone, user.phone.replace(/^0/, ''), user.walletId, dev.developerId]) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toMatch(/userId|walletId|developerId|username|phone/i);
  }
});

const REQUESTED = 'subscription { paymentRequested { id status } }';

/**
 * A developer, a funded user with a WebSocket client, and a `sentinel` request made before anyone
 * listens (so an event about it can only come through the reader); `before` is the hub's
 * subscription count before the test subscribes.
 */
async function listeningUser() {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const hub = app.gateway.services.eventHub;
  const sentinel = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const client = wsClient(app.baseUrl, user.token);
  return { dev, user, hub, sentinel, client, before: hub.stats.subscriptions };
}

/** A payment request's cancellation event, appended by hand in `tx` (as a service would, without changing the request). */
async function appendCancelled(tx: Tx, id: string, userId: string): Promise<void> {
  const [row] = await tx.query(`select ${paymentRequestColumns('pr')} from payment_requests pr where pr.id = $1`, [id]);
  const pr = paymentRequestFromRow(row!);
  await appendEvents(tx, [
    { type: 'payment_request.cancelled', subjectId: id, developerId: pr.developerId, paymentRequestId: id, userId, data: { paymentRequest: paymentRequestBody(pr) } },
  ]);
}

test('events appended inside a transaction that joins a door\'s reach subscribers at its commit, and never when it rolls back', async () => {
  const { dev, user, hub, sentinel, client, before } = await listeningUser();
  const updated = subscribe<{ paymentRequestUpdated: { id: string } }>(client, 'subscription { paymentRequestUpdated { id } }');
  await untilSubscribed(hub, before + 1);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  // A door's transaction (the outer one) with a service's inside it: one transaction, one commit.
  const nested = (outcome: 'commit' | 'rollback') => {
    const work = app.gateway.services.works.begin();
    return work
      .transaction(async () => {
        await work.transaction((tx) => appendCancelled(tx, id, user.userId));
        if (outcome === 'rollback') throw new Error('rolled back');
      })
      .catch((err: Error) => expect(err.message).toBe('rolled back'));
  };
  const handed = hub.stats.handedAtCommit;
  await nested('rollback');
  expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payment_request.created']);
  expect(hub.stats.handedAtCommit).toBe(handed);
  await nested('commit');
  expect((await eventsOf(id)).map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.cancelled']);
  expect((await updated.next(3000)).paymentRequestUpdated.id).toBe(id);
  expect(hub.stats.handedAtCommit).toBe(handed + 1); // handed over at the outer commit
  // Nothing more: an event committed after it arrives next, once.
  expect((await cancel(app.baseUrl, dev.secretKey, sentinel)).status).toBe(200);
  expect((await updated.next(3000)).paymentRequestUpdated.id).toBe(sentinel);
  expect(updated.values.map((v) => v.paymentRequestUpdated.id)).toEqual([id, sentinel]);
  updated.dispose();
  await client.dispose();
});

test('the committing process hands its own subscribers their events at commit, once (the reader drops what was handed)', async () => {
  const { dev, user, hub, sentinel, client, before } = await listeningUser();
  // The sentinel's creation committed just before the subscription; a reader that had not read
  // past it yet when the user subscribed brings it too (a subscription may carry what committed
  // up to one poll before it began; the app's catch-up list holds the same request by id).
  const fromFeed = hub.stats.fromFeed;
  const sub = subscribe<{ paymentRequested: { id: string; status: string } }>(client, REQUESTED);
  const updated = subscribe<{ paymentRequestUpdated: { id: string; status: string } }>(client, 'subscription { paymentRequestUpdated { id status } }');
  await untilSubscribed(hub, before + 2);
  const handed = hub.stats.handedAtCommit;
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  let first = (await sub.next(3000)).paymentRequested;
  if (first.id === sentinel) first = (await sub.next(3000)).paymentRequested;
  expect(first).toEqual({ id, status: 'PENDING' });
  expect((await approve(app.baseUrl, user.token, id)).body.errors).toBeUndefined();
  expect((await updated.next(3000)).paymentRequestUpdated).toEqual({ id, status: 'APPROVED' });
  // Both went out at commit (the approval follows the creation handed here), and the reader's reads of them changed nothing.
  expect(hub.stats.handedAtCommit - handed).toBe(2);
  // The reader reads their rows too and must drop them. An event committed after both, which only
  // the reader can bring, arriving means it has read past them: by then the hub published exactly
  // that one event from the reader, and each subscription holds each event once.
  expect((await cancel(app.baseUrl, dev.secretKey, sentinel)).status).toBe(200);
  expect((await updated.next(3000)).paymentRequestUpdated).toEqual({ id: sentinel, status: 'CANCELLED' });
  // If the reader brought the sentinel's creation, its cancellation follows it at commit instead.
  const earlier = sub.values.filter((v) => v.paymentRequested.id === sentinel).length;
  expect(earlier).toBeLessThanOrEqual(1);
  expect(hub.stats.fromFeed - fromFeed).toBe(1);
  expect(hub.stats.handedAtCommit - handed).toBe(2 + earlier);
  expect(sub.values.map((v) => v.paymentRequested.id).filter((x) => x !== sentinel)).toEqual([id]);
  expect(updated.values.map((v) => v.paymentRequestUpdated)).toEqual([
    { id, status: 'APPROVED' },
    { id: sentinel, status: 'CANCELLED' },
  ]);
  sub.dispose();
  updated.dispose();
  await client.dispose();
});

// A held transaction and a LISTEN connection to cut exist on a PostgreSQL server only (the
// embedded database is one session).
describeOnServer('ordering and instances of the outbox', 'a held transaction and a second instance with its own connections exist on a server only (the embedded database is one session)', () => {

  test('a transaction that commits late with a lower position is still delivered to subscribers', async () => {
    const f = factories(app);
    const dev = await f.developer();
    // The slow request comes from another developer: a create holds its own (developer, wallet)
    // pair's payer_pending row to its commit (MAX_PENDING_PER_PAYER), so the same pair's next
    // create would wait for the slow one instead of racing it.
    const slowDev = await f.developer();
    const user = await f.user({ balance: 100 });
    const client = wsClient(app.baseUrl, user.token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const sub = subscribe(client, REQUESTED);
    await untilSubscribed(app.gateway.services.eventHub, before + 1);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let wrote!: () => void;
    const written = new Promise<void>((r) => (wrote = r));
    // A slow transaction takes its event position first and commits last.
    const slow = app.gateway.services.works.begin().transaction(async (tx) => {
      const [row] = await tx.query<{ id: string }>(
        `insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at, code)
         values (gen_random_uuid(), $1, $2, 1.00, 'ETB', 'slow', 'Slow', 'PENDING', now(), now() + interval '5 minutes', now(), $3) returning id`,
        [slowDev.developerId, user.walletId, newPaymentCode()],
      );
      const [pr] = await tx.query(`select ${paymentRequestColumns('pr')} from payment_requests pr where pr.id = $1`, [row!.id]);
      const request = paymentRequestFromRow(pr!);
      await appendEvents(tx, [
        { type: 'payment_request.created', subjectId: request.id, developerId: slowDev.developerId, paymentRequestId: request.id, userId: user.userId, data: { paymentRequest: paymentRequestBody(request) } },
      ]);
      wrote();
      await held;
      return request.id;
    });
    await written;
    const fast = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    // The fast one arrives while the slow one is still running (a batch is what became visible
    // since the last one, whatever its position); the slow one arrives once it commits, and
    // neither is skipped or repeated.
    expect((await sub.next(3000)).paymentRequested.id).toBe(fast);
    // Requests made through a second instance (its own ORM: this instance's reader alone brings
    // them here) mark how far the reader has read: when one arrives, everything committed before
    // it has been read. While the slow transaction is open, its row is invisible to the reader.
    const other = await startSecondInstance(app);
    try {
      const mark1 = await requestPayment(other.baseUrl, dev.secretKey, user.walletId, 1);
      expect((await sub.next(3000)).paymentRequested.id).toBe(mark1);
      expect(sub.values.map((v) => v.paymentRequested.id)).toEqual([fast, mark1]);
      release();
      const slowId = await slow;
      expect((await sub.next(3000)).paymentRequested.id).toBe(slowId);
      const mark2 = await requestPayment(other.baseUrl, dev.secretKey, user.walletId, 1);
      expect((await sub.next(3000)).paymentRequested.id).toBe(mark2);
      // Each once, none skipped: the late commit with the lower position was not lost behind the marks.
      expect(sub.values.map((v) => v.paymentRequested.id)).toEqual([fast, mark1, slowId, mark2]);
    } finally {
      release();
      await other.close();
    }
    sub.dispose();
    await client.dispose();
  });

  test('an event committed by another instance reaches a subscriber here through this instance\'s own poll (no instance hints another)', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const client = wsClient(app.baseUrl, user.token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const sub = subscribe(client, REQUESTED);
    await untilSubscribed(app.gateway.services.eventHub, before + 1);
    const other = await startSecondInstance(app);
    try {
      const fromFeed = app.gateway.services.eventHub.stats.fromFeed;
      const id = await requestPayment(other.baseUrl, dev.secretKey, user.walletId, 1);
      expect((await sub.next(3000)).paymentRequested).toEqual({ id, status: 'PENDING' });
      expect(app.gateway.services.eventHub.stats.fromFeed).toBe(fromFeed + 1);
      // No connection of either instance LISTENs: the reader's poll brought it.
      const listening = await app.db.orm.em.fork().execute<Array<{ n: number }>>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike 'listen wallet_gateway_events%'`,
      );
      expect(listening[0]!.n).toBe(0);
    } finally {
      await other.close();
    }
    sub.dispose();
    await client.dispose();
  });
});
