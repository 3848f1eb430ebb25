// The approval (the other half of every payment) beside the minimal durable SQL of an approval,
// measured in the same run, round after round:
//   gateway — `dist/src/main.js` (as shipped; WEB_CONCURRENCY as in the environment): wrk sends
//             approvePaymentRequest over GraphQL with the wallet's PIN, each request a PENDING
//             payment request of its own (bench/approval.lua), BENCH_CONNECTIONS at a time;
//   sql     — pgbench -M prepared running bench/approval-min.sql: lock the request (the
//             conditional update, with the consent receipt), debit the wallet, the transaction,
//             the developer's balance, both ledger entries, the event, ONE commit.
// For each: approvals per second, p50/p99, gateway CPU per approval (utime+stime of the gateway's
// process tree, /proc), PostgreSQL CPU per approval (every postgres process, exited backends
// included) and database transactions per approval (pg_stat_database). Ratios are per round, the
// figures medians. Run after `npm run build`:   node bench/approval.mjs
// Needs wrk, pgbench and psql; PostgreSQL at BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432),
// where it creates and drops a database named bench_approval_*.
// Knobs: BENCH_SECONDS=10 BENCH_ROUNDS=3 BENCH_CONNECTIONS=8 BENCH_USERS=16
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { insertPendingRequests, startGateway } from './lib/gateway.mjs';
import { CLK_TCK, gatewayTicks, median, postgresTicks, run } from './lib/proc.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const req = createRequire(path.join(ROOT, 'package.json'));
const pg = req('pg');
const E = process.env;
const SECONDS = Number(E.BENCH_SECONDS ?? 10);
const ROUNDS = Number(E.BENCH_ROUNDS ?? 3);
const CONNS = Number(E.BENCH_CONNECTIONS ?? 8);
const USERS = Number(E.BENCH_USERS ?? 16);
const PIN = '135790';
const PG_BASE = (E.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const DB = `bench_approval_${Date.now().toString(36)}`;
const DB_URL = `${PG_BASE}/${DB}`;
const OUT = mkdtempSync(path.join(tmpdir(), 'bench-approval-'));
const log = (s) => process.stderr.write(`[approval] ${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const pgUrl = new URL(PG_BASE);
const PSQL = ['-h', pgUrl.hostname, '-p', pgUrl.port || '5432', '-U', decodeURIComponent(pgUrl.username || 'postgres')];
const psql = (sql, db = 'postgres') => execFileSync('psql', [...PSQL, '-d', db, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });

const transactions = () => Number(psql(`select xact_commit + xact_rollback from pg_stat_database where datname = '${DB}'`).trim());

async function measure(kind, load, gatewayPid) {
  const g0 = gatewayPid ? gatewayTicks(gatewayPid) : 0;
  const p0 = postgresTicks();
  const x0 = transactions();
  const r = await load();
  const g1 = gatewayPid ? gatewayTicks(gatewayPid) : 0;
  const p1 = postgresTicks();
  await sleep(1200); // backends flush their statistics at most once a second
  const x1 = transactions();
  const n = r.count;
  return {
    kind,
    rps: n / r.seconds,
    p50: r.p50,
    p99: r.p99,
    bad: r.bad,
    gatewayMs: gatewayPid ? ((g1 - g0) / CLK_TCK) * 1000 / n : NaN,
    postgresMs: ((p1 - p0) / CLK_TCK) * 1000 / n,
    xact: (x1 - x0) / n,
  };
}

// ---- database, gateway, seed ----
const gateway = await startGateway({ root: ROOT, dir: ROOT, pgBase: PG_BASE, db: DB });
const { base, stop } = gateway;
const dev = await gateway.developer('Bench approvals');
const users = [];
for (let i = 0; i < USERS; i++) users.push(await gateway.user(`bench_a${i}`, PIN));
// PENDING requests written straight into the table (a request's own creation is not what is measured):
// one list for the gateway, one queue for pgbench.
const client = new pg.Client({ connectionString: DB_URL });
await client.connect();
const perUser = Math.ceil(60_000 / USERS);
await client.query(`create table bench_queue (n bigserial primary key, id uuid not null)`);
await client.query(`create sequence bench_queue_n`);
const approvals = [];
for (const u of users) {
  const ids = await insertPendingRequests(client, dev.id, u.walletId, perUser * 2);
  ids.slice(0, perUser).forEach((id) => approvals.push(`${u.token}\t${id}`));
  await client.query('insert into bench_queue (id) select unnest($1::uuid[])', [ids.slice(perUser)]);
}
await client.query('analyze');
await client.end();
// Shuffled, so that consecutive approvals are of different wallets (as people's are).
for (let i = approvals.length - 1; i > 0; i--) {
  const j = Math.floor(Math.random() * (i + 1));
  [approvals[i], approvals[j]] = [approvals[j], approvals[i]];
}
const listFile = path.join(OUT, 'approvals.tsv');
log(`seeded ${USERS} users, ${approvals.length} requests for the gateway and as many for pgbench; database ${DB}`);

// The event's payload as the gateway writes it (its size matters to the database's work).
const payload = JSON.stringify({
  id: 'evt_0000000000000xxxxxxxxxxxxxxxxxxxxxxxx',
  type: 'payment_request.approved',
  createdAt: new Date().toISOString(),
  data: {
    paymentRequest: { id: '00000000-0000-0000-0000-000000000000', status: 'APPROVED', amount: 1.5, currency: 'ETB', description: 'Order', merchantName: 'Bench Shop', createdAt: '', expiresAt: '', updatedAt: '', transactionId: '', reference: null, metadata: null, consentReceipt: 'x'.repeat(420), paymentUrl: 'http://localhost:3000/pay/xxxxxxxxxxxxxxxxxxxxxxxx' },
    transaction: { id: '', amount: 1.5, currency: 'ETB', status: 'COMPLETED', type: 'WALLET_PAYMENT', description: 'Order', createdAt: '', updatedAt: '', paymentProvider: 'WALLET', paymentReference: 'WPAY000000000001-XXXXXX', consentReceipt: 'x'.repeat(420), refundedAmount: 0, capturedAmount: 1.5 },
  },
});
const script = path.join(OUT, 'approval-min.sql');
writeFileSync(script, readFileSync(path.join(ROOT, 'bench/approval-min.sql'), 'utf8'));

let used = 0;
const gatewayLoad = async () => {
  // Each round takes requests no earlier round used.
  writeFileSync(listFile, approvals.slice(used).join('\n') + '\n');
  const r = await run('wrk', ['-t1', `-c${CONNS}`, `-d${SECONDS}s`, '--timeout', '10s', '-s', path.join(ROOT, 'bench/approval.lua'), base], { WRK_APPROVALS: listFile, WRK_PIN: PIN });
  const m = /WRK (\{.*\})/.exec(r.out);
  if (!m) throw new Error(`wrk: ${r.out.slice(-400)}`);
  const j = JSON.parse(m[1]);
  used += j.requests;
  if (used > approvals.length) throw new Error('ran out of PENDING requests: raise the seed');
  return { count: j.requests, seconds: j.duration_us / 1e6, p50: j.p50_us / 1000, p99: j.p99_us / 1000, bad: j.bad + j.errors };
};
const sqlLoad = async () => {
  const prefix = path.join(OUT, `pgb${Date.now()}`);
  const r = await run('pgbench', [...PSQL, '-n', '-M', 'prepared', '-c', String(CONNS), '-j', '2', '-T', String(SECONDS), '-l', `--log-prefix=${prefix}`, '-D', `payload=${payload}`, '-D', `receipt=${'x'.repeat(420)}`, '-f', script, DB]);
  const tps = /tps = ([0-9.]+) \(without initial connection time\)/.exec(r.out);
  const failed = /number of failed transactions: (\d+)/.exec(r.out);
  if (!tps) throw new Error(`pgbench: ${r.out.slice(-600)}`);
  const lat = [];
  for (const x of readdirSync(OUT)) {
    if (!x.startsWith(path.basename(prefix))) continue;
    for (const line of readFileSync(path.join(OUT, x), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (line && Number.isFinite(us)) lat.push(us / 1000);
    }
  }
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
  return { count: lat.length, seconds: lat.length / Number(tps[1]), p50: pct(50), p99: pct(99), bad: Number(failed?.[1] ?? 0) };
};

// Warm-up: the gateway's JIT and both sides' caches.
await measure('warm-up', async () => {
  const r = await gatewayLoad();
  return r;
}, gateway.pid);
const rows = [];
for (let round = 1; round <= ROUNDS; round++) {
  const order = round % 2 ? ['gateway', 'sql'] : ['sql', 'gateway'];
  for (const kind of order) {
    const r = kind === 'gateway' ? await measure(kind, gatewayLoad, gateway.pid) : await measure(kind, sqlLoad, null);
    r.round = round;
    rows.push(r);
    log(`round ${round} ${kind.padEnd(7)} ${f(r.rps, 0)} approvals/s  p50 ${f(r.p50, 1)} p99 ${f(r.p99, 1)} ms  gateway CPU ${f(r.gatewayMs)} ms  PostgreSQL CPU ${f(r.postgresMs)} ms  ${f(r.xact)} transactions per approval  bad ${r.bad}`);
  }
}
stop();
const of = (kind, key) => median(rows.filter((r) => r.kind === kind).map((r) => r[key]));
const ratio = (key) => median([...Array(ROUNDS).keys()].map((i) => rows.find((r) => r.kind === 'gateway' && r.round === i + 1)[key] / rows.find((r) => r.kind === 'sql' && r.round === i + 1)[key]));
const summary = {
  rounds: ROUNDS,
  seconds: SECONDS,
  connections: CONNS,
  gateway: { approvalsPerSecond: of('gateway', 'rps'), p50: of('gateway', 'p50'), p99: of('gateway', 'p99'), gatewayCpuMs: of('gateway', 'gatewayMs'), postgresCpuMs: of('gateway', 'postgresMs'), transactions: of('gateway', 'xact'), bad: rows.filter((r) => r.kind === 'gateway').reduce((a, r) => a + r.bad, 0) },
  minimalSql: { approvalsPerSecond: of('sql', 'rps'), p50: of('sql', 'p50'), p99: of('sql', 'p99'), postgresCpuMs: of('sql', 'postgresMs'), transactions: of('sql', 'xact') },
  ratios: { throughput: ratio('rps'), postgresCpu: ratio('postgresMs') },
};
console.log(
  `approval: gateway ${f(summary.gateway.approvalsPerSecond, 0)}/s (p99 ${f(summary.gateway.p99, 1)} ms), gateway CPU ${f(summary.gateway.gatewayCpuMs)} ms per approval, ` +
    `PostgreSQL CPU ${f(summary.gateway.postgresCpuMs)} ms vs ${f(summary.minimalSql.postgresCpuMs)} ms for the minimal SQL (${f(summary.ratios.postgresCpu)}x), ` +
    `${f(summary.gateway.transactions)} vs ${f(summary.minimalSql.transactions)} transactions per approval; throughput ${f(summary.ratios.throughput)}x the minimal SQL`,
);
console.log(JSON.stringify(summary));
try {
  psql(`drop database ${DB} with (force)`);
} catch {
  // left for inspection
}
process.exit(0);
