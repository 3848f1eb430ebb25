// The windows of the shared rate limits (src/rate-limit.ts, LeasedLimiter) on an injected clock,
// against the real `rate_limits` table: what a window admits, its end (Retry-After), the lease
// rollover into the next window, the in-memory fallback when the store fails, and the
// maintenance pass removing old counters. No test here depends on how fast it runs.
import { pino } from 'pino';
import { LeasedLimiter, leaseSize } from '../src/rate-limit.js';
import { Maintenance } from '../src/maintenance.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.close();
});

class FakeClock {
  t = Date.UTC(2030, 0, 1);
  now(): number {
    return this.t;
  }
}

let prefixes = 0;
/** A limiter on the test database under a prefix of its own (its rows are this test's only). */
function limiter(points: number, durationSeconds: number, clock: FakeClock, prefix = `t${++prefixes}`) {
  return new LeasedLimiter(database.db.orm.em.getKnex(), prefix, points, durationSeconds, clock);
}

/** Consumes `n` points one after the other; the verdicts. */
async function consumeN(l: LeasedLimiter, key: string, n: number) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await l.consume(key));
  return out;
}

const admitted = (verdicts: Array<object>) => verdicts.filter((v) => 'remaining' in v).length;

test('a 1 s window: exactly `points` admitted, then refused until the window ends; Retry-After comes from the window end; the next window starts afresh', async () => {
  const clock = new FakeClock();
  const t0 = clock.t;
  const l = limiter(5, 1, clock);
  expect(await consumeN(l, 'k', 5)).toEqual([4, 3, 2, 1, 0].map((remaining) => ({ remaining, msBeforeNext: 1000 })));
  expect(await l.consume('k')).toEqual({ refusedForMs: 1000 });
  clock.t = t0 + 999;
  expect(await l.consume('k')).toEqual({ refusedForMs: 1 });
  // The window's end: a new window of its own length, counted from this request.
  clock.t = t0 + 1000;
  expect(await l.consume('k')).toEqual({ remaining: 4, msBeforeNext: 1000 });
  const [row] = await database.db.orm.em.fork().execute<Array<{ points: number; expire: string }>>('select points, expire from rate_limits where key = ?', [`t${prefixes}:k`]);
  expect({ points: Number(row!.points), expire: Number(row!.expire) }).toEqual({ points: 1, expire: t0 + 2000 });
  // Another key has a window of its own.
  expect(await l.consume('other')).toEqual({ remaining: 4, msBeforeNext: 1000 });
});

test('lease rollover: two instances share a window exactly; leased points left at the window end are not carried into the next', async () => {
  const clock = new FakeClock();
  const t0 = clock.t;
  const prefix = `t${++prefixes}`;
  const a = limiter(100, 1, clock, prefix);
  const b = limiter(100, 1, clock, prefix);
  expect(leaseSize(100)).toBe(10);
  // A leases 10 and spends 3; B takes what the store has left (90) and is refused after it.
  expect(admitted(await consumeN(a, 'k', 3))).toBe(3);
  expect(admitted(await consumeN(b, 'k', 100))).toBe(90);
  expect(await b.consume('k')).toEqual({ refusedForMs: 1000 });
  // Half-way through the window nothing changes: B is refused for the rest of it.
  clock.t = t0 + 500;
  expect(await b.consume('k')).toEqual({ refusedForMs: 500 });
  // A's 7 unspent points end with the window. In the next one A leases afresh (10, spends 1)
  // and B gets the rest (90): A has 9 left, not 9 + 7.
  clock.t = t0 + 1000;
  expect(admitted(await consumeN(a, 'k', 1))).toBe(1);
  expect(admitted(await consumeN(b, 'k', 200))).toBe(90);
  expect(admitted(await consumeN(a, 'k', 30))).toBe(9);
  const [row] = await database.db.orm.em.fork().execute<Array<{ points: number; expire: string }>>('select points, expire from rate_limits where key = ?', [`${prefix}:k`]);
  expect(Number(row!.expire)).toBe(t0 + 2000);
  expect(Number(row!.points)).toBeGreaterThanOrEqual(100); // handed out (refused leases count too), never admitted beyond 100
});

test('the store failing: a limiter of the same size in memory takes over (it refuses past the limit, it does not let everything through)', async () => {
  const broken = await createTestDatabase(1);
  const knex = broken.db.orm.em.getKnex();
  await broken.close(); // the pool is gone: every statement of the store now fails
  await expect(knex.raw('select 1')).rejects.toThrow();
  const l = new LeasedLimiter(knex, 'broken', 5, 60, new FakeClock());
  const verdicts = await consumeN(l, 'k', 8);
  expect(verdicts.slice(0, 5).map((v) => ('remaining' in v ? v.remaining : 'refused'))).toEqual([4, 3, 2, 1, 0]);
  for (const v of verdicts.slice(5)) {
    expect(v).toEqual({ refusedForMs: expect.any(Number) });
    expect((v as { refusedForMs: number }).refusedForMs).toBeGreaterThan(0);
  }
});

test('maintenance removes rate-limit counters whose window ended over a minute ago, and only those', async () => {
  const em = database.db.orm.em.fork();
  const now = Date.now();
  // Margins of minutes around the one-minute grace: the pass below cannot straddle them.
  const rows: Array<[string, number | null]> = [
    ['old:ended-an-hour-ago', now - 3_600_000],
    ['old:ended-5-minutes-ago', now - 300_000],
    ['keep:ended-just-now', now - 1_000],
    ['keep:running', now + 60_000],
    ['keep:no-expiry', null],
  ];
  for (const [key, expire] of rows) await em.execute('insert into rate_limits (key, points, expire) values (?, 1, ?)', [key, expire]);
  const maintenance = new Maintenance(() => database.db.orm.em.fork(), pino({ level: 'silent' }), {
    eventRetentionDays: 30,
    webhookDeliveryRetentionDays: 30,
    idempotencyRetentionHours: 48,
  });
  const removed = await maintenance.run();
  expect(removed.rateLimits).toBe(2); // the other tests' windows are in 2030
  const left = await em.execute<Array<{ key: string }>>(`select key from rate_limits where key like 'old:%' or key like 'keep:%' order by key`);
  expect(left.map((r) => r.key)).toEqual(['keep:ended-just-now', 'keep:no-expiry', 'keep:running']);
  expect((await maintenance.run()).rateLimits).toBe(0);
});
