// Approvals per second and gateway CPU per approval at the production PIN settings, before and
// after the keyed PIN hash (issue 30), measured in the same run, rounds alternating:
//   before — the gateway as built at BENCH_BEFORE (default f657006, the last commit that hashed PINs
//            with scrypt), PIN_HASH_COST=15 (N = 2^15, 32 MiB: what production insisted on);
//   after  — this checkout's build (dist/, `npm run build` first): HMAC-SHA-256 under PIN_PEPPER.
// Each side: its own database and gateway (WEB_CONCURRENCY as in the environment: one worker per
// core by default), BENCH_USERS users with the PIN, PENDING requests written straight into the
// table; wrk sends approvePaymentRequest with the PIN (bench/approval.lua), BENCH_CONNECTIONS at a
// time, each request a PENDING request of its own. Gateway CPU per approval is utime+stime of the
// gateway's process group (/proc) over the approvals it made. Figures are medians over rounds;
// quote the ratios (the machine is shared).
// Run: npm run build && node bench/approvals.mjs   (needs wrk, psql; PostgreSQL at BENCH_PG_URL)
// Knobs: BENCH_SECONDS=10 BENCH_ROUNDS=3 BENCH_CONNECTIONS=8 BENCH_USERS=8 BENCH_BEFORE=f657006
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAt } from './lib/build-at.mjs';
import { insertPendingRequests, startGateway } from './lib/gateway.mjs';
import { CLK_TCK, gatewayTicks, median, run } from './lib/proc.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pg = createRequire(path.join(ROOT, 'package.json'))('pg');
const E = process.env;
const SECONDS = Number(E.BENCH_SECONDS ?? 10);
const ROUNDS = Number(E.BENCH_ROUNDS ?? 3);
const CONNS = Number(E.BENCH_CONNECTIONS ?? 8);
const USERS = Number(E.BENCH_USERS ?? 8);
const BEFORE = E.BENCH_BEFORE ?? 'f657006';
const PIN = '135790';
const PG_BASE = (E.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const OUT = mkdtempSync(path.join(tmpdir(), 'bench-approvals-'));
const STAMP = Date.now().toString(36);
const log = (s) => process.stderr.write(`[approvals] ${s}\n`);
const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

const sides = [
  { name: 'before', dir: buildAt(ROOT, BEFORE, log), env: { PIN_HASH_COST: '15' }, requests: 6000 },
  { name: 'after', dir: ROOT, env: { PIN_PEPPER: randomBytes(32).toString('hex') }, requests: 40000 },
];
for (const side of sides) {
  side.gateway = await startGateway({ root: ROOT, dir: side.dir, pgBase: PG_BASE, db: `bench_approvals_${side.name}_${STAMP}`, env: side.env });
  const dev = await side.gateway.developer('Bench approvals');
  const users = [];
  for (let i = 0; i < USERS; i++) users.push(await side.gateway.user(`bench_${side.name}_${i}`, PIN));
  const client = new pg.Client({ connectionString: side.gateway.url });
  await client.connect();
  side.approvals = [];
  for (const u of users) {
    const ids = await insertPendingRequests(client, dev.id, u.walletId, Math.ceil(side.requests / USERS));
    for (const id of ids) side.approvals.push(`${u.token}\t${id}`);
  }
  await client.query('analyze');
  const [{ form }] = (await client.query("select split_part(pin_hash, '$', 1) as form from wallet_pins limit 1")).rows;
  await client.end();
  // Shuffled: consecutive approvals are of different wallets, as people's are.
  for (let i = side.approvals.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [side.approvals[i], side.approvals[j]] = [side.approvals[j], side.approvals[i]];
  }
  side.used = 0;
  log(`${side.name}: ${side.dir === ROOT ? 'this build' : BEFORE}, PINs stored as ${form}, ${side.approvals.length} PENDING requests`);
}

async function round(side) {
  const list = path.join(OUT, `${side.name}.tsv`);
  writeFileSync(list, side.approvals.slice(side.used).join('\n') + '\n');
  const g0 = gatewayTicks(side.gateway.pid);
  const r = await run('wrk', ['-t1', `-c${CONNS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', path.join(ROOT, 'bench/approval.lua'), side.gateway.base], { WRK_APPROVALS: list, WRK_PIN: PIN });
  const g1 = gatewayTicks(side.gateway.pid);
  const m = /WRK (\{.*\})/.exec(r.out);
  if (!m) throw new Error(`wrk: ${r.out.slice(-400)}`);
  const j = JSON.parse(m[1]);
  side.used += j.requests;
  if (side.used > side.approvals.length) throw new Error(`${side.name} ran out of PENDING requests: raise its seed`);
  const good = j.requests - j.bad - j.errors;
  return { rps: good / (j.duration_us / 1e6), p50: j.p50_us / 1000, p99: j.p99_us / 1000, cpuMs: (((g1 - g0) / CLK_TCK) * 1000) / Math.max(1, good), bad: j.bad + j.errors };
}

for (const side of sides) await round(side); // warm-up: JIT, caches
const rows = [];
for (let i = 1; i <= ROUNDS; i++) {
  for (const side of i % 2 ? sides : [...sides].reverse()) {
    const r = { side: side.name, round: i, ...(await round(side)) };
    rows.push(r);
    log(`round ${i} ${side.name.padEnd(6)} ${f(r.rps, 1)} approvals/s  p50 ${f(r.p50, 1)} p99 ${f(r.p99, 1)} ms  gateway CPU ${f(r.cpuMs)} ms per approval  bad ${r.bad}`);
  }
}
for (const side of sides) {
  side.gateway.stop();
  side.gateway.drop();
}
const of = (side, key) => median(rows.filter((r) => r.side === side).map((r) => r[key]));
const ratio = (key) => median([...Array(ROUNDS).keys()].map((i) => rows.find((r) => r.side === 'after' && r.round === i + 1)[key] / rows.find((r) => r.side === 'before' && r.round === i + 1)[key]));
const summary = {
  rounds: ROUNDS,
  seconds: SECONDS,
  connections: CONNS,
  users: USERS,
  before: { build: BEFORE, pinHash: 'scrypt N=2^15', approvalsPerSecond: of('before', 'rps'), p50: of('before', 'p50'), p99: of('before', 'p99'), gatewayCpuMs: of('before', 'cpuMs') },
  after: { build: 'this', pinHash: 'HMAC-SHA-256 under PIN_PEPPER', approvalsPerSecond: of('after', 'rps'), p50: of('after', 'p50'), p99: of('after', 'p99'), gatewayCpuMs: of('after', 'cpuMs') },
  ratios: { throughput: ratio('rps'), gatewayCpuPerApproval: ratio('cpuMs'), p99: ratio('p99') },
};
console.log(
  `approvals: before ${f(summary.before.approvalsPerSecond, 1)}/s at ${f(summary.before.gatewayCpuMs)} ms gateway CPU each; ` +
    `after ${f(summary.after.approvalsPerSecond, 1)}/s at ${f(summary.after.gatewayCpuMs)} ms; ` +
    `throughput ${f(summary.ratios.throughput)}x, CPU per approval ${f(summary.ratios.gatewayCpuPerApproval)}x, p99 ${f(summary.ratios.p99)}x`,
);
console.log(JSON.stringify(summary));
process.exit(0);
