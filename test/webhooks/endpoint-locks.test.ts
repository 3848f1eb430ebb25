// Issue #31 item 4: a merchant's operation on its own webhook endpoint (delete, rotate, enable,
// test) never waits on a send to a slow receiver, and never on a delivery being recorded. The 503
// "The database is busy (a lock or statement timed out)" seen in fuzzing is what PostgreSQL's
// lock_timeout (3 s) and deadlock detection both answer; two causes were found and are tested
// here: enable's FOR UPDATE waiting for foreign-key locks (3 s, then 503), and the recording of a
// failed attempt taking the delivery's row before the endpoint's while a DELETE took them the
// other way round (a deadlock, the DELETE its victim). These tests put each interleaving in
// place on purpose (a receiver that holds the request until the test lets it go, a transaction of
// the test's own holding a row) instead of hoping for it, and no wall clock is read: an operation
// that had to wait for the held request or row would answer 503, or not at all.
import pg from 'pg';
import { factories, http, startTestApp, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { until } from '../helpers/expect.js';
import { ONE_CONNECTION, describeOnServer } from '../helpers/db.js';
import { startReceiver, type Receiver } from './receiver.js';

let app: TestApp;
beforeAll(async () => {
  // No retry falls due by itself and no poll runs: every attempt here is one the test starts.
  app = await startTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '3600', WEBHOOK_POLL_INTERVAL_MS: '60000', WEBHOOK_TIMEOUT_MS: '60000' } });
});
afterAll(async () => {
  await app?.close();
});

/** A receiver that holds every request until `release(status)`; `held` resolves when the first one arrives. */
async function holdingReceiver(): Promise<Receiver & { held: Promise<void>; release(status: number): void }> {
  let arrived!: () => void;
  const held = new Promise<void>((r) => (arrived = r));
  let answer!: (status: number) => void;
  const released = new Promise<number>((r) => (answer = r));
  const receiver = await startReceiver({
    respond: async () => {
      arrived();
      return released;
    },
  });
  return Object.assign(receiver, { held, release: answer });
}

async function register(secretKey: string, url: string, events?: string[]): Promise<string> {
  const res = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: secretKey, body: { url, ...(events ? { events } : {}) } });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

const post = (secretKey: string, path: string, key?: string) =>
  http(app.baseUrl, `/api/v1/webhook-endpoints/${path}`, { method: 'POST', token: secretKey, ...(key ? { headers: { 'Idempotency-Key': key } } : {}) });
const remove = (secretKey: string, id: string) => http(app.baseUrl, `/api/v1/webhook-endpoints/${id}`, { method: 'DELETE', token: secretKey });

const one = async <T>(text: string, values: unknown[]): Promise<T> => (await app.db.sql.query<T>(text, values))[0]!;

/** A new developer's endpoint whose first delivery (payment_request.created) its receiver holds, unanswered. */
async function deliveryInFlight() {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const receiver = await holdingReceiver();
  const id = await register(dev.secretKey, receiver.url, ['payment_request.created']);
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await receiver.held;
  return { dev, id, receiver };
}

describe('a send in flight to a slow receiver holds nothing the endpoint\'s owner needs', () => {
  test.each([
    ['without', undefined],
    ['with', 'test-send-in-flight'],
  ])('a test send (%s an Idempotency-Key): rotate, enable and delete answer while the receiver holds it', async (_how, key) => {
    const dev = await factories(app).developer();
    const receiver = await holdingReceiver();
    try {
      const id = await register(dev.secretKey, receiver.url);
      const test = post(dev.secretKey, `${id}/test`, key);
      await receiver.held;
      // The receiver has the test send and has not answered: everything else goes on meanwhile.
      expect((await post(dev.secretKey, `${id}/rotate-secret`)).status).toBe(200);
      expect((await post(dev.secretKey, `${id}/enable`, key && `${key}-enable`)).status).toBe(200);
      const deleted = await remove(dev.secretKey, id);
      expect([deleted.status, deleted.body.status]).toEqual([200, 'DELETED']);
      expect(receiver.received).toHaveLength(0);
      receiver.release(204);
      // The test send answers what the receiver said, though the endpoint was deleted meanwhile.
      expect((await test).body).toMatchObject({ delivered: true, status: 204 });
    } finally {
      await receiver.close();
    }
  });

  test('a delivery: rotate, enable and delete answer while the receiver holds it, and its late answer undoes nothing', async () => {
    const { dev, id, receiver } = await deliveryInFlight();
    try {
      expect((await post(dev.secretKey, `${id}/rotate-secret`)).status).toBe(200);
      expect((await post(dev.secretKey, `${id}/enable`)).status).toBe(200);
      expect((await remove(dev.secretKey, id)).status).toBe(200);
      expect(receiver.received).toHaveLength(0);
      // The delete failed the delivery it found pending; the receiver's late 500 is recorded as an
      // attempt but neither revives the delivery nor touches the deleted endpoint.
      receiver.release(500);
      await until(async () => (await one<{ n: number }>('select count(*)::int as n from webhook_attempts where endpoint_id = $1', [id])).n === 1, 15_000, 'the attempt recorded');
      expect(await one('select status, last_error from webhook_deliveries where endpoint_id = $1', [id])).toEqual({ status: 'FAILED', last_error: 'endpoint deleted' });
      expect(await one('select status, failing_since from webhook_endpoints where id = $1', [id])).toEqual({ status: 'DELETED', failing_since: null });
    } finally {
      await receiver.close();
    }
  });
});

describeOnServer('row locks: a merchant\'s operations beside other transactions on the same rows', ONE_CONNECTION, () => {
  let holder: pg.Client;
  beforeEach(async () => {
    holder = new pg.Client({ connectionString: app.database.url });
    await holder.connect();
  });
  afterEach(async () => {
    await holder.query('rollback').catch(() => undefined);
    await holder.end();
  });

  test('enable does not wait for a transaction that is queueing a delivery to the endpoint (its foreign-key lock)', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 10 });
    // An event of the developer's from before the endpoint existed: no delivery of it to the endpoint yet.
    const requestId = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const receiver = await startReceiver();
    try {
      const id = await register(dev.secretKey, receiver.url);
      // A create's (or a resend's) transaction is queueing a delivery to this endpoint and has not
      // committed: its foreign-key check holds a KEY SHARE lock on the endpoint's row.
      await holder.query('begin');
      await holder.query(
        `insert into webhook_deliveries (event_id, endpoint_id, subject_id, sequence)
         select e.id, $1, e.subject_id, e.sequence from events e where e.payment_request_id = $2`,
        [id, requestId],
      );
      // An enable that waited for that commit would give up after lock_timeout with a 503, and every
      // DELETE or rotation of the endpoint arriving meanwhile would queue behind it on the row.
      const enabled = await post(dev.secretKey, `${id}/enable`);
      expect([enabled.status, enabled.body.status]).toEqual([200, 'ENABLED']);
      expect((await post(dev.secretKey, `${id}/rotate-secret`)).status).toBe(200);
      const deleted = await remove(dev.secretKey, id);
      expect([deleted.status, deleted.body.status]).toEqual([200, 'DELETED']);
    } finally {
      await receiver.close();
    }
  });

  test('registering an endpoint does not wait for a transaction that writes a row of the developer\'s (a payment request being created)', async () => {
    const dev = await factories(app).developer();
    // Every insert that references the developer (a payment request, an event) holds this lock until it commits.
    await holder.query('begin');
    await holder.query('select 1 from developers where id = $1 for key share', [dev.developerId]);
    const receiver = await startReceiver();
    try {
      const res = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url } });
      expect(res.status).toBe(200);
    } finally {
      await receiver.close();
    }
  });

  /** Backends of the test's database waiting for a lock. */
  const waiting = async (): Promise<number> =>
    (
      await app.db.sql.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
      )
    )[0]!.n;

  test('a failed attempt being recorded and a DELETE of its endpoint meet on the same two rows: both finish, no deadlock', async () => {
    const { dev, id, receiver } = await deliveryInFlight();
    try {
      // Another short transaction has the endpoint's row (as a rotation or an enable may): the
      // DELETE queues on it first; then the receiver answers 500, and the worker records the attempt.
      await holder.query('begin');
      await holder.query('select 1 from webhook_endpoints where id = $1 for no key update', [id]);
      const deleted = remove(dev.secretKey, id);
      await until(async () => (await waiting()) === 1, 15_000, 'the DELETE waits for the endpoint row');
      receiver.release(500);
      await until(async () => (await waiting()) === 2, 15_000, 'the recording waits too');
      await holder.query('commit');
      // Were the recording to take the delivery's row before the endpoint's (the DELETE takes the
      // endpoint's, then its deliveries'), each would wait for the other: PostgreSQL would end one
      // as a deadlock, the DELETE with a 503 or the recording with its attempt lost.
      const res = await deleted;
      expect([res.status, res.body.status]).toEqual([200, 'DELETED']);
      await until(async () => (await one<{ n: number }>('select count(*)::int as n from webhook_attempts where endpoint_id = $1', [id])).n === 1, 15_000, 'the attempt recorded');
      expect(app.logs.filter((l) => /webhook delivery pass failed|deadlock/.test(l))).toEqual([]);
      expect(await one('select status, last_error from webhook_deliveries where endpoint_id = $1', [id])).toEqual({ status: 'FAILED', last_error: 'endpoint deleted' });
    } finally {
      await receiver.close();
    }
  });
});
