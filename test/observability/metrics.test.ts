// Domain metrics on /metrics beside the HTTP ones: time from create to decision, webhook attempts
// by outcome, pending deliveries and the oldest one's age, the outbox reader's lag, the scheduled
// ledger check's mismatches. No merchant, user, wallet or reference value is ever a label.
import { factories, http, startTestApp, type TestApp } from '../helpers/app.js';
import { parseExposition, valueOf, type Sample } from '../helpers/prometheus.js';
import { approve, cancel, reject, requestPayment } from '../helpers/payments.js';
import { startReceiver } from '../webhooks/receiver.js';
import { until } from '../helpers/expect.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { describeOnServer } from '../helpers/db.js';
import { runScheduledLedgerCheck, LEDGER_CHECK_LOCK_KEY } from '../../src/ledger/ledger-check-schedule.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
beforeAll(async () => {
  app = await startTestApp({
    env: {
      RATE_LIMIT_PER_SECOND: '1000000',
      WEBHOOK_RETRY_SCHEDULE: '1',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      EXPIRY_SWEEP_INTERVAL_MS: '100',
      LEDGER_CHECK_INTERVAL_SECONDS: '1',
    },
  });
  f = factories(app);
});
afterAll(async () => {
  await app.close();
});

async function scrape(target: TestApp = app): Promise<Sample[]> {
  const res = await http(target.baseUrl, '/metrics');
  expect(res.status).toBe(200);
  return parseExposition(res.body as string);
}

/** Polls /metrics until `check` holds for a scrape (bounded); returns that scrape. */
async function untilScrape(what: string, check: (samples: Sample[]) => boolean, target: TestApp = app): Promise<Sample[]> {
  let last: Sample[] = [];
  await until(async () => check((last = await scrape(target))), 15_000, what);
  return last;
}

test('the domain families are described, next to the HTTP ones', async () => {
  const text = (await http(app.baseUrl, '/metrics')).body as string;
  for (const [name, type] of [
    ['http_request_duration_seconds', 'histogram'],
    ['payment_requests_total', 'counter'],
    ['payment_request_decision_seconds', 'histogram'],
    ['webhook_attempts_total', 'counter'],
    ['webhook_deliveries_pending', 'gauge'],
    ['webhook_oldest_pending_delivery_age_seconds', 'gauge'],
    ['outbox_reader_lag_seconds', 'gauge'],
    ['graphql_open_subscriptions', 'gauge'],
    ['ledger_check_mismatches', 'gauge'],
    ['ledger_check_last_run_timestamp_seconds', 'gauge'],
  ]) {
    expect(text).toContain(`# TYPE ${name} ${type}`);
    expect(text).toMatch(new RegExp(`^# HELP ${name} \\S`, 'm'));
  }
});

test('payment_request_decision_seconds: one observation per decision, in seconds between creation and decision', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const before = await scrape();
  const started = performance.now();
  const ids = await Promise.all([1, 2, 3, 4].map(() => requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5)));
  expect((await approve(app.baseUrl, user.token, ids[0]!)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  expect((await reject(app.baseUrl, user.token, ids[1]!)).body.data.rejectPaymentRequest.status).toBe('REJECTED');
  expect((await cancel(app.baseUrl, dev.secretKey, ids[2]!)).status).toBe(200);
  // The fourth is made due now (rather than waiting out its lifetime) and the sweeper expires it.
  await app.db.orm.em.fork().execute('update payment_requests set expires_at = now() where id = ?', [ids[3]]);
  const after = await untilScrape(
    'the expiry of the fourth request',
    (s) => valueOf(s, 'payment_request_decision_seconds_count', { decision: 'expired' }) > valueOf(before, 'payment_request_decision_seconds_count', { decision: 'expired' }),
  );
  const elapsed = (performance.now() - started) / 1000;
  for (const decision of ['approved', 'rejected', 'cancelled', 'expired']) {
    const count = valueOf(after, 'payment_request_decision_seconds_count', { decision }) - valueOf(before, 'payment_request_decision_seconds_count', { decision });
    const sum = valueOf(after, 'payment_request_decision_seconds_sum', { decision }) - valueOf(before, 'payment_request_decision_seconds_sum', { decision });
    expect({ decision, count }).toEqual({ decision, count: 1 });
    expect(sum).toBeGreaterThanOrEqual(0);
    expect(sum).toBeLessThanOrEqual(elapsed + 1); // the database's clock, rounded
  }
  // Cumulative buckets end in +Inf = count.
  expect(valueOf(after, 'payment_request_decision_seconds_bucket', { decision: 'approved', le: '+Inf' })).toBe(
    valueOf(after, 'payment_request_decision_seconds_count', { decision: 'approved' }),
  );
});

test('webhook attempts by outcome and result; pending deliveries and the oldest one’s age come from the database', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  let failing = true;
  // The first attempt is held open until the test has seen its delivery pending and ageing.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const receiver = await startReceiver({
    respond: async (_r, index) => {
      if (index === 0) await held;
      return failing ? 503 : 200;
    },
  });
  try {
    const endpoint = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url, events: ['payment_request.created'] } });
    expect(endpoint.status).toBe(200);
    const attempts = (s: Sample[], outcome: string, result: string) => valueOf(s, 'webhook_attempts_total', { outcome, result });
    const before = await scrape();
    await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    // While the first attempt is in flight the delivery is pending, and its age grows.
    const pending = await untilScrape('the pending delivery to age', (s) => valueOf(s, 'webhook_oldest_pending_delivery_age_seconds') > 0.2);
    expect(valueOf(pending, 'webhook_deliveries_pending')).toBeGreaterThanOrEqual(1);
    release();
    // First attempt: 503, a retry is scheduled (in ~1 s).
    await untilScrape('a failed attempt', (s) => attempts(s, 'retrying', '5xx') > attempts(before, 'retrying', '5xx'));
    // Second attempt (the last of the schedule) also fails: the delivery is given up.
    const failed = await untilScrape('the delivery given up', (s) => attempts(s, 'failed', '5xx') > attempts(before, 'failed', '5xx'));
    expect(attempts(failed, 'retrying', '5xx') - attempts(before, 'retrying', '5xx')).toBe(1);
    expect(attempts(failed, 'failed', '5xx') - attempts(before, 'failed', '5xx')).toBe(1);
    // Now the endpoint answers: the next delivery is delivered at the first attempt, and nothing is pending.
    failing = false;
    await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const delivered = await untilScrape('a delivered attempt', (s) => attempts(s, 'delivered', '2xx') > attempts(before, 'delivered', '2xx'));
    expect(attempts(delivered, 'delivered', '2xx') - attempts(before, 'delivered', '2xx')).toBe(1);
    const idle = await untilScrape('no pending delivery', (s) => valueOf(s, 'webhook_deliveries_pending') === 0);
    expect(valueOf(idle, 'webhook_oldest_pending_delivery_age_seconds')).toBe(0);
  } finally {
    await receiver.close();
  }
});

test('a connection refused counts as network_error', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const closed = await startReceiver();
  const url = closed.url;
  await closed.close(); // nothing listens there any more
  expect((await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url, events: ['payment_request.created'] } })).status).toBe(200);
  const before = valueOf(await scrape(), 'webhook_attempts_total', { outcome: 'retrying', result: 'network_error' });
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await untilScrape('a refused attempt', (s) => valueOf(s, 'webhook_attempts_total', { outcome: 'retrying', result: 'network_error' }) > before);
});

test('outbox_reader_lag_seconds stays within a few poll intervals while the reader keeps up', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const lag = valueOf(await scrape(), 'outbox_reader_lag_seconds');
  expect(lag).toBeGreaterThanOrEqual(0);
  expect(lag).toBeLessThan(5);
});

test('outbox_reader_lag_seconds grows while the reader cannot read (database gone) for a subscriber; /metrics still answers', async () => {
  const broken = await startTestApp({ env: { OUTBOX_POLL_INTERVAL_MS: '50' } });
  // Someone listens (an idle reader, with no one to read for, has no lag).
  const listener = await factories(broken).user();
  const client = wsClient(broken.baseUrl, listener.token);
  try {
    subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(broken.gateway.services.eventHub, 1);
    await broken.db.close();
    await untilScrape('the lag to grow past 1 s', (s) => valueOf(s, 'outbox_reader_lag_seconds') > 1, broken);
    // The database-derived gauges are left out rather than failing the scrape.
    const samples = await scrape(broken);
    expect(samples.some((s) => s.name === 'webhook_deliveries_pending')).toBe(false);
    expect(samples.some((s) => s.name === 'http_request_duration_seconds_count')).toBe(true);
  } finally {
    await client.dispose();
    await broken.gateway.dispose();
    await broken.database.close().catch(() => undefined);
  }
});

test('ledger_check_mismatches: the scheduled check runs (1 s here), records its result, and a balance that differs from its ledger shows', async () => {
  const clean = await untilScrape('a first scheduled check', (s) => valueOf(s, 'ledger_check_last_run_timestamp_seconds') > 0);
  expect(valueOf(clean, 'ledger_check_mismatches')).toBe(0);
  expect(Math.abs(valueOf(clean, 'ledger_check_last_run_timestamp_seconds') - Date.now() / 1000)).toBeLessThan(600);
  // A balance changed behind the ledger's back (what the check exists to catch).
  const user = await f.user({ balance: 10 });
  await app.db.orm.em.fork().execute('update wallets set balance = balance + 1 where id = ?', [user.walletId]);
  const broken = await untilScrape('the mismatch to show', (s) => valueOf(s, 'ledger_check_mismatches') === 1);
  expect(valueOf(broken, 'ledger_check_last_run_timestamp_seconds')).toBeGreaterThanOrEqual(valueOf(clean, 'ledger_check_last_run_timestamp_seconds'));
  await app.db.orm.em.fork().execute('update wallets set balance = balance - 1 where id = ?', [user.walletId]);
  await untilScrape('the books to balance again', (s) => valueOf(s, 'ledger_check_mismatches') === 0);
});

describe('the scheduled ledger check, called directly (on a gateway whose own schedule is off)', () => {
  let quiet: TestApp;
  beforeAll(async () => {
    quiet = await startTestApp({ env: { LEDGER_CHECK_INTERVAL_SECONDS: '0' } });
  });
  afterAll(async () => {
    await quiet.close();
  });
  const em = () => quiet.db.orm.em.fork();

  test('runs when none ran within the interval, and records its result; not again within it', async () => {
    const first = await runScheduledLedgerCheck(em(), 3600);
    expect(first).toMatchObject({ ok: true, mismatches: [] });
    expect(await runScheduledLedgerCheck(em(), 3600)).toBeUndefined();
    const rows = await em().execute<Array<{ ok: boolean; mismatches: number }>>('select ok, mismatches from ledger_checks');
    expect(rows).toEqual([{ ok: true, mismatches: 0 }]);
  });

  describeOnServer('two instances at once', 'needs two connections holding transactions at the same time', () => {
    test('while another instance runs the check (holds its advisory lock), this one does not; afterwards it does', async () => {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const holding = new Promise<void>((r) => (locked = r));
      // Another instance's check in progress: a transaction holding the lock.
      const other = em().transactional(async (tem) => {
        await tem.execute('select pg_advisory_xact_lock(?)', [LEDGER_CHECK_LOCK_KEY]);
        locked();
        await released;
      });
      await holding;
      expect(await runScheduledLedgerCheck(em(), 0)).toBeUndefined();
      release();
      await other;
      expect(await runScheduledLedgerCheck(em(), 0)).toMatchObject({ ok: true });
    });
  });
});

test('no label carries a merchant, user, wallet, payment request or reference value', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1, { reference: 'order-label-check' });
  await http(app.baseUrl, `/api/v1/account/${user.phone}`, { token: dev.secretKey });
  const values = (await scrape()).flatMap((s) => Object.values(s.labels));
  const forbidden = [dev.developerId, user.userId, user.walletId, user.phone, user.username, id, 'order-label-check'];
  for (const v of values) for (const x of forbidden) expect(v).not.toContain(x);
  expect(values.some((v) => /[0-9a-f]{8}-[0-9a-f]{4}-|wlt_|we_|evt_/.test(v))).toBe(false);
});
