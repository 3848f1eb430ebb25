// The webhook retry schedule itself (src/webhooks/delivery-worker.ts): which delay follows which
// attempt, the ±20 % jitter, the default schedule, a send that times out, and a slow send whose
// lease lapsed being taken over by another worker. Every wait is for a state (a row, a request
// at the receiver) with a deadline; no delay is measured on the wall clock: a retry's delay is
// read from the database, where the worker's transaction wrote it.
import { startTestApp, startSecondInstance, factories, http, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { until } from '../helpers/expect.js';
import { loadConfig } from '../../src/config.js';
import { retryDelaySeconds, verdictOf } from '../../src/webhooks/delivery-worker.js';
import { startReceiver, type Receiver } from './receiver.js';

const README_DEFAULT = [5, 300, 1800, 7200, 18000, 36000, 36000, 43200, 43200, 43200, 43200];

describe('retryDelaySeconds', () => {
  test('retry n (1-based) waits schedule[n-1]; past the schedule there is no retry', () => {
    const schedule = [5, 300, 1800];
    const none = () => 0.5; // no jitter: 0.8 + 0.4 × 0.5 = 1
    expect([1, 2, 3].map((n) => retryDelaySeconds(schedule, n, none))).toEqual([5, 300, 1800]);
    expect(retryDelaySeconds(schedule, 4, none)).toBeUndefined();
    expect(retryDelaySeconds([], 1, none)).toBeUndefined();
  });

  test('the jitter spans exactly [0.8, 1.2) of the scheduled delay', () => {
    expect(retryDelaySeconds([100], 1, () => 0)).toBeCloseTo(80, 10);
    expect(retryDelaySeconds([100], 1, () => 0.999999)).toBeCloseTo(119.99996, 10);
    expect(retryDelaySeconds([100], 1, () => 0.25)).toBeCloseTo(90, 10);
    // Math.random's whole range stays inside the bounds.
    for (let i = 0; i < 1000; i++) {
      const d = retryDelaySeconds([300], 1)!;
      expect(d).toBeGreaterThanOrEqual(240);
      expect(d).toBeLessThan(360);
    }
  });

  test('the default schedule is the README\'s: 11 retries from 5 s to 12 h', () => {
    expect(loadConfig({}).webhookRetrySchedule).toEqual(README_DEFAULT);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: ' 1, 2 ,3' }).webhookRetrySchedule).toEqual([1, 2, 3]);
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1,,2' })).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
  });
});

/** A new developer's endpoint at `url` for payment_request.created, then one payment request to a new user: one delivery to follow. */
async function deliveryTo(app: TestApp, url: string): Promise<string> {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url, events: ['payment_request.created'] } });
  expect(res.status).toBe(200);
  await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  return res.body.id as string;
}

interface DeliveryState {
  status: string;
  attempts: number;
  /** Seconds from the recording transaction's now() to next_attempt_at (the retry's delay). */
  delay: number;
  lease: boolean;
  lastError: string | null;
}

/** The endpoint's one delivery; the delay is next_attempt_at less the endpoint's updated_at, both now() of the transaction that recorded the last failed attempt. */
async function delivery(app: TestApp, endpointId: string): Promise<DeliveryState> {
  const rows = await app.db.orm.em.fork().execute<Array<{ status: string; attempts: number; delay: string; lease: boolean; last_error: string | null }>>(
    `select d.status, d.attempts, extract(epoch from d.next_attempt_at - ep.updated_at)::text as delay, d.lease_token is not null as lease, d.last_error
       from webhook_deliveries d join webhook_endpoints ep on ep.id = d.endpoint_id where d.endpoint_id = ?`,
    [endpointId],
  );
  expect(rows).toHaveLength(1);
  const r = rows[0]!;
  return { status: r.status, attempts: r.attempts, delay: Number(r.delay), lease: r.lease, lastError: r.last_error };
}

describe('verdictOf: what a send makes of the delivery', () => {
  const answered = (status: number) => ({ phase: 'answered', delivered: status >= 200 && status < 300, status, durationMs: 5 }) as const;
  test('a 2xx is delivered; any other answer or none is retried while the schedule lasts, then failed', () => {
    expect(verdictOf(answered(204), 1, [10])).toEqual({ outcome: 'delivered', status: 'DELIVERED', error: null, delay: 0 });
    const retry = verdictOf(answered(301), 1, [10]);
    expect(retry).toMatchObject({ outcome: 'retrying', status: 'PENDING', error: 'HTTP 301' });
    expect(retry.delay).toBeGreaterThanOrEqual(8);
    expect(retry.delay).toBeLessThan(12);
    expect(verdictOf({ phase: 'unanswered', delivered: false, error: 'timeout after 5 ms', durationMs: 5 }, 2, [10])).toEqual({
      outcome: 'failed',
      status: 'FAILED',
      error: 'timeout after 5 ms',
      delay: 0,
    });
  });
});

describe('a failing endpoint on a real gateway', () => {
  let app: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    // Delays long enough that no retry comes by itself; the test makes each one due.
    app = await startTestApp({ env: { WEBHOOK_RETRY_SCHEDULE: '100,200', WEBHOOK_POLL_INTERVAL_MS: '60000', SANDBOX_TEST_WALLETS: 'false' } });
    receiver = await startReceiver({ respond: () => 500 });
  });
  afterAll(async () => {
    await receiver?.close();
    await app?.close();
  });

  test('attempt 1 fails → retry after 100 s ±20 %; attempt 2 fails → 200 s ±20 %; attempt 3 fails → FAILED, no retry', async () => {
    const endpointId = await deliveryTo(app, receiver.url);
    const settled = async (attempts: number) => {
      let state!: DeliveryState;
      await until(async () => {
        state = await delivery(app, endpointId);
        return state.attempts === attempts && !state.lease;
      }, 15_000, `attempt ${attempts} recorded`);
      return state;
    };
    const first = await settled(1);
    expect(first).toMatchObject({ status: 'PENDING', lastError: 'HTTP 500' });
    expect(first.delay).toBeGreaterThanOrEqual(80);
    expect(first.delay).toBeLessThan(120);

    const makeDue = async () => {
      await app.db.orm.em.fork().execute(`update webhook_deliveries set next_attempt_at = now() where endpoint_id = ?`, [endpointId]);
      expect(await app.gateway.services.deliveries.runOnce()).toBe(1);
    };
    await makeDue();
    const second = await settled(2);
    expect(second).toMatchObject({ status: 'PENDING', lastError: 'HTTP 500' });
    expect(second.delay).toBeGreaterThanOrEqual(160);
    expect(second.delay).toBeLessThan(240);

    await makeDue();
    const third = await settled(3);
    expect(third).toMatchObject({ status: 'FAILED', lastError: 'HTTP 500' });
    expect(third.delay).toBe(0);
    expect(await app.gateway.services.deliveries.runOnce()).toBe(0); // nothing due any more
    expect(receiver.received.filter((r) => r.json.type === 'payment_request.created')).toHaveLength(3);
    // Each failed attempt is a warning naming the endpoint and the attempt (never the body or a secret).
    const attemptLines = () =>
      app.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'webhook attempt' && l.endpointId === endpointId);
    await until(() => attemptLines().length === 3, 5000, 'three attempt lines');
    expect(attemptLines().map((l) => [l.level, l.attempt, l.httpStatus])).toEqual([
      [40, 1, 500],
      [40, 2, 500],
      [40, 3, 500],
    ]);
    expect(JSON.stringify(attemptLines())).not.toMatch(/whsec_|payment_request\.created/);
  });
});

describe('a send that times out', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { WEBHOOK_TIMEOUT_MS: '300', WEBHOOK_RETRY_SCHEDULE: '100', WEBHOOK_POLL_INTERVAL_MS: '60000', SANDBOX_TEST_WALLETS: 'false' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  test('a receiver that never answers: the attempt is recorded as a timeout (no status) and the retry is scheduled', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived = 0;
    const receiver = await startReceiver({
      respond: async () => {
        arrived++;
        await held;
        return 200;
      },
    });
    try {
      const endpointId = await deliveryTo(app, receiver.url);
      let state!: DeliveryState;
      await until(async () => {
        state = await delivery(app, endpointId);
        return state.attempts === 1 && !state.lease;
      }, 15_000, 'the timed-out attempt recorded');
      expect(arrived).toBe(1); // the request reached the receiver, which has not answered
      expect(state).toMatchObject({ status: 'PENDING', lastError: 'timeout after 300 ms' });
      expect(state.delay).toBeGreaterThanOrEqual(80);
      expect(state.delay).toBeLessThan(120);
      const [attempt] = await app.db.orm.em
        .fork()
        .execute<Array<{ http_status: number | null; error: string }>>('select http_status, error from webhook_attempts where endpoint_id = ?', [endpointId]);
      expect(attempt).toEqual({ http_status: null, error: 'timeout after 300 ms' });
      const metrics = await (await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${app.config.adminToken}` } })).text();
      expect(metrics).toMatch(/webhook_attempts_total\{[^}]*result="timeout"[^}]*\} 1/);
    } finally {
      release();
      await receiver.close();
    }
  });
});

describe('a slow send whose lease lapsed', () => {
  let app: TestApp;
  let other: TestApp;
  beforeAll(async () => {
    const env = { WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_RETRY_SCHEDULE: '100', WEBHOOK_POLL_INTERVAL_MS: '60000', SANDBOX_TEST_WALLETS: 'false' };
    app = await startTestApp({ env });
    other = await startSecondInstance(app, env);
  });
  afterAll(async () => {
    await other?.close();
    await app?.close();
  });

  test('another worker takes the delivery over with the same webhook-id; the first worker\'s late answer changes nothing', async () => {
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const arrivals: string[] = [];
    const receiver = await startReceiver({
      respond: async (r, i) => {
        arrivals.push(r.id);
        if (i === 0) {
          await firstHeld;
          return 500; // the first send, answered late, fails
        }
        return 200;
      },
    });
    try {
      const endpointId = await deliveryTo(app, receiver.url);
      // The first instance's worker (woken by the commit) claimed it and is sending.
      await until(() => arrivals.length === 1, 15_000, 'the first send reaching the receiver');
      const em = app.db.orm.em.fork();
      const [claim] = await em.execute<Array<{ lease_token: string; attempts: number }>>('select lease_token, attempts from webhook_deliveries where endpoint_id = ?', [endpointId]);
      expect(claim).toMatchObject({ attempts: 1, lease_token: expect.any(String) });
      // While the lease holds, no other worker may take it.
      expect(await other.gateway.services.deliveries.runOnce()).toBe(0);
      // The lease lapses (as after a crash or a stall longer than twice the timeout).
      await em.execute(`update webhook_deliveries set lease_until = now() - interval '1 second' where endpoint_id = ?`, [endpointId]);
      expect(await other.gateway.services.deliveries.runOnce()).toBe(1);
      expect(arrivals).toHaveLength(2);
      expect(arrivals[1]).toBe(arrivals[0]); // the same webhook-id: the merchant can de-duplicate
      expect(await delivery(app, endpointId)).toMatchObject({ status: 'DELIVERED', attempts: 2, lease: false, lastError: null });
      // The first send now gets its (failed) answer: its record must not undo the delivery.
      releaseFirst();
      await until(
        async () => (await em.execute<Array<{ n: number }>>('select count(*)::int as n from webhook_attempts where endpoint_id = ?', [endpointId]))[0]!.n === 2,
        15_000,
        'the first send\'s attempt recorded',
      );
      expect(await delivery(app, endpointId)).toMatchObject({ status: 'DELIVERED', attempts: 2, lease: false, lastError: null });
      const attempts = await em.execute<Array<{ http_status: number | null }>>('select http_status from webhook_attempts where endpoint_id = ? order by id', [endpointId]);
      expect(attempts.map((a) => a.http_status).sort()).toEqual([200, 500]);
    } finally {
      releaseFirst();
      await receiver.close();
    }
  });
});
