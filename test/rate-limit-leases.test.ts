// Rate limits leased in blocks (src/rate-limit.ts, LeasedLimiter): instances spend leased points
// from memory, so a busy key costs one upsert per lease instead of one per request, and across
// instances the limit is never exceeded; what is given up is bounded early refusal (points one
// instance leased and did not use: at most leaseSize − 1 per instance per window).
import { factories, startSecondInstance, startTestApp, type TestApp } from './helpers/app.js';
import { lookupAccount } from './helpers/rest.js';
import { leaseSize } from '../src/rate-limit.js';

/** Look-ups per minute: a 60 s window, so a burst surely falls into one window. */
const LIMIT = 100;
const LEASE = leaseSize(LIMIT);

let first: TestApp;
let second: TestApp;
beforeAll(async () => {
  const env = { RATE_LIMIT_PER_SECOND: '100000', LOOKUP_LIMIT_PER_MINUTE: String(LIMIT) };
  first = await startTestApp({ env });
  second = await startSecondInstance(first, env);
});
afterAll(async () => {
  await second?.close();
  await first?.close();
});

test('two instances together admit at most the limit, at least the limit less one unused lease each, with one upsert per lease', async () => {
  expect(LEASE).toBe(10);
  const f = factories(first);
  const dev = await f.developer();
  const user = await f.user();
  const upserts: string[] = [];
  const counted = (q: { sql: string; bindings?: unknown[] }) => {
    if (q.sql.includes('insert into rate_limits') && String(q.bindings?.[0]).startsWith('lookup:')) upserts.push(q.sql);
  };
  const knexes = [first.db.orm.em.getKnex(), second.db.orm.em.getKnex()];
  for (const k of new Set(knexes)) k.on('query', counted);
  const apps = [first, second];
  const results: number[] = [];
  try {
    // Waves of concurrent look-ups alternating between the instances, well past the limit.
    for (let wave = 0; wave < 13; wave++) {
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => lookupAccount(apps[i % 2]!, dev.secretKey, user.username)));
      results.push(...burst.map((r) => r.status));
    }
  } finally {
    for (const k of new Set(knexes)) k.removeListener('query', counted);
  }
  const ok = results.filter((s) => s === 200).length;
  expect(results.filter((s) => s !== 200 && s !== 429)).toEqual([]);
  expect(ok).toBeLessThanOrEqual(LIMIT);
  expect(ok).toBeGreaterThanOrEqual(LIMIT - 2 * (LEASE - 1));
  // Granted leases (LIMIT / LEASE) plus at most a refused one per instance, and one more per
  // instance for a lease granted in part.
  expect(upserts.length).toBeGreaterThanOrEqual(LIMIT / LEASE);
  expect(upserts.length).toBeLessThanOrEqual(LIMIT / LEASE + 4);
});
