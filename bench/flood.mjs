// One user's flood of PIN verifications against everyone else (issue 30, item 3), before and after,
// in the same run. Each side: its own database and gateway (WEB_CONCURRENCY as in the environment,
// DB_POOL_MAX default), a flooder, another payer with PENDING requests and a merchant. First the
// baseline: the other payer approves BENCH_SAMPLES requests one after another while the merchant
// reads a status BENCH_SAMPLES times; then the same while the flooder keeps BENCH_FLOOD (32)
// `changeTransactionPin` calls with her right PIN in flight. Reported: median and p90 latency of
// the other payer's approval and of the merchant's read, as ratios flood/baseline, and how many
// answers were SERVICE_UNAVAILABLE or failed otherwise (the flooder's RATE_LIMITED are counted apart).
//   before — the gateway as built at BENCH_BEFORE (default f657006: scrypt N = 2^15 held under a row
//            lock and a pooled connection, no user limit);
//   after  — this build with the default USER_RATE_LIMIT_PER_SECOND (10);
//   after, no user limit — this build with the limit out of the way: the verification alone.
// Run: npm run build && node bench/flood.mjs   (needs psql; PostgreSQL at BENCH_PG_URL)
// Knobs: BENCH_SAMPLES=30 BENCH_FLOOD=32 BENCH_PACE_MS=200 (the other payer's pace) BENCH_BEFORE=f657006
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAt } from './lib/build-at.mjs';
import { startGateway } from './lib/gateway.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const E = process.env;
const SAMPLES = Number(E.BENCH_SAMPLES ?? 30);
const FLOOD = Number(E.BENCH_FLOOD ?? 32);
const PACE_MS = Number(E.BENCH_PACE_MS ?? 200);
const BEFORE = E.BENCH_BEFORE ?? 'f657006';
const PIN = '135790';
const PG_BASE = (E.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const STAMP = Date.now().toString(36);
const log = (s) => process.stderr.write(`[flood] ${s}\n`);
const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

async function post(base, token, query, variables) {
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
    const body = await res.json();
    return { ms: performance.now() - t0, code: body.errors?.[0]?.extensions?.code ?? 'ok' };
  } catch {
    return { ms: performance.now() - t0, code: 'NETWORK' };
  }
}
async function read(base, secretKey, id) {
  const t0 = performance.now();
  try {
    const res = await fetch(`${base}/api/v1/wallet/payment-request/${id}`, { headers: { authorization: `Bearer ${secretKey}` } });
    const body = await res.json();
    return { ms: performance.now() - t0, code: res.status === 200 ? 'ok' : (body.code ?? `HTTP ${res.status}`) };
  } catch {
    return { ms: performance.now() - t0, code: 'NETWORK' };
  }
}
const APPROVE = 'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { status } }';
const CHANGE = 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }';

if (process.argv[2] === '--flood') {
  const [, , , base, token] = process.argv;
  let flooding = true;
  const answers = [];
  process.on('message', () => (flooding = false));
  const flooder = async () => {
    while (flooding) answers.push(await post(base, token, CHANGE, { c: PIN, n: PIN }));
  };
  await Promise.all(Array.from({ length: FLOOD }, flooder));
  process.send(answers.map(({ code }) => ({ code })));
  process.exit(0);
}

const pepper = randomBytes(32).toString('hex');
const sides = [
  { name: 'before', dir: buildAt(ROOT, BEFORE, log), env: { PIN_HASH_COST: '15' } },
  { name: 'after', dir: ROOT, env: { PIN_PEPPER: pepper, USER_RATE_LIMIT_PER_SECOND: '10' } },
  { name: 'after, no user limit', dir: ROOT, env: { PIN_PEPPER: pepper } },
];


/** The other payer's approvals and the merchant's reads, one after another, each SAMPLES times. */
async function others(side, ids) {
  const approvals = [];
  const reads = [];
  for (let i = 0; i < SAMPLES; i++) {
    const next = performance.now() + PACE_MS;
    approvals.push(await post(side.gateway.base, side.payer.token, APPROVE, { id: ids[i], pin: PIN }));
    reads.push(await read(side.gateway.base, side.dev.secretKey, ids[i]));
    // A person's pace (and within USER_RATE_LIMIT_PER_SECOND): one approval every PACE_MS.
    await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
  }
  return { approvals, reads };
}

const results = [];
for (const side of sides) {
  side.gateway = await startGateway({
    root: ROOT,
    dir: side.dir,
    pgBase: PG_BASE,
    db: `bench_flood_${side.name.replace(/\W+/g, '_')}_${STAMP}`,
    env: { ...side.env, USER_RATE_LIMIT_PER_SECOND: side.env.USER_RATE_LIMIT_PER_SECOND ?? '1000000' },
  });
  side.dev = await side.gateway.developer('Bench flood');
  side.payer = await side.gateway.user('bench_payer', PIN);
  side.flooder = await side.gateway.user('bench_flooder', PIN);
  const ids = [];
  for (let i = 0; i < 2 * SAMPLES + 2; i++) {
    const res = await fetch(`${side.gateway.base}/api/v1/wallet/request-payment`, {
      method: 'POST',
      headers: { authorization: `Bearer ${side.dev.secretKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ walletId: side.payer.walletId, amount: 1, description: 'Order', merchantName: 'Bench Shop' }),
    });
    ids.push((await res.json()).paymentRequestId);
  }
  await others(side, ids.slice(0, 2)); // warm-up
  const baseline = await others(side, ids.slice(2, 2 + SAMPLES));
  // The flood, from a process of its own (its event loop must not delay the measured calls'):
  // FLOOD calls in flight at all times until told to stop; it answers with the codes it got.
  const child = fork(fileURLToPath(import.meta.url), ['--flood', side.gateway.base, side.flooder.token], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const floodDone = new Promise((resolve) => child.once('message', resolve));
  await new Promise((r) => setTimeout(r, 500)); // the flood is under way
  const flood = await others(side, ids.slice(2 + SAMPLES));
  child.send('stop');
  const floodAnswers = await floodDone;
  side.gateway.stop();
  side.gateway.drop();
  const med = (xs) => pct(xs.map((x) => x.ms), 50);
  const p90 = (xs) => pct(xs.map((x) => x.ms), 90);
  const failed = (xs) => xs.filter((x) => x.code !== 'ok').map((x) => x.code);
  const count = (xs, code) => xs.filter((x) => x.code === code).length;
  const r = {
    side: side.name,
    baselineFailed: [...failed(baseline.approvals), ...failed(baseline.reads)],
    approval: { baselineMs: med(baseline.approvals), floodMs: med(flood.approvals), ratio: med(flood.approvals) / med(baseline.approvals), p90Ratio: p90(flood.approvals) / p90(baseline.approvals), failed: failed(flood.approvals) },
    read: { baselineMs: med(baseline.reads), floodMs: med(flood.reads), ratio: med(flood.reads) / med(baseline.reads), p90Ratio: p90(flood.reads) / p90(baseline.reads), failed: failed(flood.reads) },
    flood: { calls: floodAnswers.length, ok: count(floodAnswers, 'ok'), rateLimited: count(floodAnswers, 'RATE_LIMITED'), serviceUnavailable: count(floodAnswers, 'SERVICE_UNAVAILABLE'), other: floodAnswers.length - count(floodAnswers, 'ok') - count(floodAnswers, 'RATE_LIMITED') - count(floodAnswers, 'SERVICE_UNAVAILABLE') },
  };
  results.push(r);
  log(
    `${side.name}: other payer's approval ${f(r.approval.baselineMs, 1)} → ${f(r.approval.floodMs, 1)} ms (${f(r.approval.ratio)}x, p90 ${f(r.approval.p90Ratio)}x, failed: ${r.approval.failed.join(' ') || 'none'}), ` +
      `merchant's read ${f(r.read.baselineMs, 1)} → ${f(r.read.floodMs, 1)} ms (${f(r.read.ratio)}x, p90 ${f(r.read.p90Ratio)}x, failed: ${r.read.failed.join(' ') || 'none'}); ` +
      `baseline failures ${r.baselineFailed.length}; flood ${r.flood.calls} calls: ${r.flood.ok} ok, ${r.flood.rateLimited} RATE_LIMITED, ${r.flood.serviceUnavailable} SERVICE_UNAVAILABLE, ${r.flood.other} other`,
  );
}
console.log(JSON.stringify({ samples: SAMPLES, flood: FLOOD, results }));
process.exit(0);
