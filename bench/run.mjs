// `npm run bench`: the gateway and its baselines measured in the same run, interleaved
// (round-robin rounds, medians), printed as one table. Read the ratios: on a shared machine the
// absolute figures move, the ratios of one run much less.
//
// Systems, each measured at every point of every round:
//   gateway  — `node dist/src/main.js` (WEB_CONCURRENCY processes);
//   minimal  — bench/minimal-server.mjs: node:http + pg, the same SQL, the same number of processes;
//   sql      — pgbench -M prepared running the same SQL directly (for the create: the minimal
//              durable transaction, begin; insert request; insert event; commit), with as many
//              database connections as the servers' pools.
// Load comes from bench/load.mjs (autocannon) in a process of its own, 127.0.0.1 only, for
// BENCH_SECONDS per point. CPU per request and SQL round trips per request are read from the
// server processes themselves (bench/probe.mjs). Then bench/ws.mjs opens BENCH_SUBSCRIBERS idle
// graphql-ws subscribers (memory per subscriber from the servers' RSS) and measures delivery.
//
// The database: BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/bench_gateway),
// dropped and created afresh; its name must start with "bench".
import 'reflect-metadata';
import { spawn, execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir, cpus } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../dist/src/config.js';
import { resolveStartupKeys } from '../dist/src/startup-keys.js';
import { createLogger } from '../dist/src/logger.js';
import { openDatabase } from '../dist/src/db/database.js';
import { createServices } from '../dist/src/services.js';
import { issueSecretKey } from '../dist/src/auth/secret-keys.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 10_000);
const WORKERS = Number(process.env.WEB_CONCURRENCY ?? availableParallelism());
const POOL = Number(process.env.DB_POOL_MAX ?? 10);
const URL_ = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/bench_gateway';
const dbName = new URL(URL_).pathname.slice(1);
if (!/^bench/.test(dbName)) throw new Error(`BENCH_DATABASE_URL must name a database of its own starting with "bench" (got "${dbName}")`);
const execFileP = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- database: fresh, migrated, seeded -------------------------------------------------------
{
  const admin = new URL(URL_);
  admin.pathname = '/postgres';
  const c = new pg.Client({ connectionString: admin.toString() });
  await c.connect();
  await c.query(`drop database if exists "${dbName}" with (force)`);
  await c.query(`create database "${dbName}"`);
  await c.end();
}
const env = { APP_ENV: 'development', DATABASE_URL: URL_, LOG_LEVEL: 'warn' };
const config = resolveStartupKeys(loadConfig(env));
const db = await openDatabase({ url: URL_, poolMax: 2 });
const services = createServices(config, db, createLogger('silent'));
const em = () => services.works.begin();
const dev = await services.developers.create(em(), 'Bench');
const { secretKey } = await issueSecretKey(em(), config, dev.id);
const user = await services.accounts.createUser(em(), { username: `bench_${Date.now()}`, phone: '0911000000', balance: 1_000_000_000 });
await db.close();

// ---- processes -----------------------------------------------------------------------------
const probeDir = await mkdtemp(path.join(tmpdir(), 'bench-probe-'));
const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const children = [];
function start(args, extraEnv) {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, NODE_OPTIONS: `--import ${path.join(ROOT, 'bench/probe.mjs')}`, BENCH_PROBE_DIR: probeDir, ...extraEnv },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  return child;
}
async function waitUp(url) {
  for (let i = 0; i < 600; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`${url} did not come up`);
}
const gatewayPort = await freePort();
// BENCH_GATEWAY_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", to profile the gateway under this load.
const gatewayArgs = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(' ').filter(Boolean);
const gateway = start([...gatewayArgs, 'dist/src/main.js'], {
  PORT: String(gatewayPort),
  WEB_CONCURRENCY: String(WORKERS),
  DB_POOL_MAX: String(POOL),
  RATE_LIMIT_PER_SECOND: '1000000',
  LOOKUP_LIMIT_PER_MINUTE: '100000000',
  MAX_PENDING_PER_PAYER: '0', // one developer piles PENDING requests on one wallet (#24)
  WS_MAX_CONNECTIONS_PER_USER: '5',
});
const minimalPort = await freePort();
const minimal = start(['bench/minimal-server.mjs'], {
  PORT: String(minimalPort),
  BENCH_WORKERS: String(WORKERS),
  DB_POOL_MAX: String(POOL),
  BENCH_DEVELOPER_ID: dev.id,
  BENCH_WALLET_ID: user.walletId,
});
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGTERM')));
const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
const minimalUrl = `http://127.0.0.1:${minimalPort}`;
await waitUp(`${gatewayUrl}/healthz`);
await waitUp(minimalUrl);
await sleep(1000); // the workers of a cluster come up one after another
const headers = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' };
const createBody = JSON.stringify({ walletId: user.walletId, amount: 1, description: 'bench', merchantName: 'Bench' });
const created = await (await fetch(`${gatewayUrl}/api/v1/wallet/request-payment`, { method: 'POST', headers, body: createBody })).json();
if (!created.paymentRequestId) throw new Error(`create failed: ${JSON.stringify(created)}`);
const prId = created.paymentRequestId;

/** The process and its descendants (cluster workers). */
async function tree(rootPid) {
  const parents = new Map();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(entry), ppid);
    } catch {
      // gone
    }
  }
  const out = [rootPid];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parents) if (ppid === out[i]) out.push(pid);
  return out;
}
/** Sums the probes of a process tree: CPU µs, pg round trips, RSS and heap bytes. */
async function snapshot(rootPid) {
  const pids = await tree(rootPid);
  const asked = Date.now();
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  const sum = { cpuMicros: 0, queries: 0, rss: 0, heapUsed: 0, processes: pids.length };
  for (const pid of pids) {
    for (let i = 0; ; i++) {
      try {
        const p = JSON.parse(await readFile(`${probeDir}/${pid}.json`, 'utf8'));
        if (p.at >= asked) {
          for (const k of ['cpuMicros', 'queries', 'rss', 'heapUsed']) sum[k] += p[k];
          break;
        }
      } catch {
        // not written yet
      }
      if (i > 200) throw new Error(`process ${pid} did not report`);
      await sleep(10);
    }
  }
  return sum;
}

function runChild(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`${args[0]} exited ${code}`))));
  });
}

async function httpPoint(rootPid, url, point) {
  const before = await snapshot(rootPid);
  const r = await runChild([
    'bench/load.mjs',
    JSON.stringify({ url: `${url}${point.path}`, method: point.method, connections: point.connections, seconds: SECONDS, headers, body: point.body, idempotency: point.idempotency }),
  ]);
  const after = await snapshot(rootPid);
  const n = r.ok + r.failed;
  return { ...r, cpuMs: (after.cpuMicros - before.cpuMicros) / 1000 / n, trips: (after.queries - before.queries) / n };
}

const SQL = {
  read: `select id, status, amount, currency, description, merchant_name, created_at, expires_at, updated_at, transaction_id, reference, metadata
           from payment_requests where id = '${prId}' and developer_id = '${dev.id}';\n`,
  create: `begin;
insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at)
  values (gen_random_uuid(), '${dev.id}', '${user.walletId}', 1, 'IRR', 'bench', 'Bench', 'PENDING', now(), now() + interval '5 minutes', now())
  returning id \\gset
insert into events (id, type, developer_id, subject_id, payment_request_id, sequence, payload, created_at)
  values ('evt_' || md5(random()::text), 'payment_request.created', '${dev.id}', :id, :id, 1, '{}'::jsonb, now());
commit;\n`,
};
const scriptDir = await mkdtemp(path.join(tmpdir(), 'bench-sql-'));
await writeFile(`${scriptDir}/read.sql`, SQL.read);
await writeFile(`${scriptDir}/create.sql`, SQL.create);

async function sqlPoint(kind) {
  const logDir = await mkdtemp(path.join(scriptDir, 'log-'));
  const clients = Math.min(POOL * WORKERS, 40);
  const { stdout } = await execFileP(
    'pgbench',
    ['-n', '-M', 'prepared', '-c', String(clients), '-j', '2', '-T', String(SECONDS), '-f', `${scriptDir}/${kind}.sql`, '-l', '--log-prefix', `${logDir}/pgb`, URL_],
    { maxBuffer: 1 << 24 },
  );
  const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1]);
  const lat = [];
  for (const f of await readdir(logDir)) {
    for (const line of (await readFile(`${logDir}/${f}`, 'utf8')).split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (line && Number.isFinite(us)) lat.push(us / 1000);
    }
  }
  await rm(logDir, { recursive: true });
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
  return { rps: tps, p50: pct(50), p99: pct(99), cpuMs: NaN, trips: kind === 'read' ? 1 : 4, clients };
}

const ALL_POINTS = [
  { name: 'status read, 16 conn.', kind: 'read', method: 'GET', path: `/api/v1/wallet/payment-request/${prId}`, connections: 16 },
  { name: 'status read, 50 conn.', kind: 'read', method: 'GET', path: `/api/v1/wallet/payment-request/${prId}`, connections: 50 },
  { name: 'create, 16 conn.', kind: 'create', method: 'POST', path: '/api/v1/wallet/request-payment', connections: 16, body: createBody },
  // BENCH_POINTS=create+key: the same create, each with an Idempotency-Key of its own (not in the default run).
  { name: 'create+key, 16 conn.', kind: 'create', method: 'POST', path: '/api/v1/wallet/request-payment', connections: 16, body: createBody, idempotency: true, optional: true },
];
// BENCH_POINTS=status|create (a prefix of the point names, comma-separated) and
// BENCH_SYSTEMS=gateway,minimal,sql narrow a run while iterating (e.g. with a profile).
const POINTS = ALL_POINTS.filter((p) => (process.env.BENCH_POINTS ? process.env.BENCH_POINTS.split(',').some((x) => p.name.startsWith(x)) : !p.optional));
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'gateway,minimal,sql').split(',');
const results = new Map(); // `${point}|${system}` → runs
const record = (point, system, r) => {
  const key = `${point.name}|${system}`;
  results.set(key, [...(results.get(key) ?? []), r]);
};
console.error(`bench: ${ROUNDS} rounds × ${POINTS.length} points × 3 systems, ${SECONDS} s each; ${WORKERS} server process(es); database ${dbName}`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const point of POINTS) {
    // Rotate the order so no system is always measured first after a switch.
    const order = [['gateway', gateway.pid, gatewayUrl], ['minimal', minimal.pid, minimalUrl], ['sql']];
    for (let i = 0; i < (round - 1) % 3; i++) order.push(order.shift());
    for (const [system, pid, url] of order.filter(([system]) => SYSTEMS.includes(system))) {
      const r = system === 'sql' ? await sqlPoint(point.kind) : await httpPoint(pid, url, point);
      record(point, system, r);
      console.error(`  round ${round} ${point.name.padEnd(22)} ${system.padEnd(8)} ${Math.round(r.rps)} req/s p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms${r.failed ? ` FAILED ${r.failed}` : ''}`);
    }
  }
}

// ---- WebSocket ------------------------------------------------------------------------------
async function wsFigures() {
  const before = await snapshot(gateway.pid);
  const child = spawn(
    process.execPath,
    [
      'bench/ws.mjs',
      JSON.stringify({ wsUrl: `ws://127.0.0.1:${gatewayPort}/graphql`, baseUrl: gatewayUrl, subscribers: SUBSCRIBERS, userId: user.userId, apiKey: secretKey, walletId: user.walletId, events: 200 }),
    ],
    { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let out = '';
  const line = () =>
    new Promise((resolve, reject) => {
      const check = () => {
        const i = out.indexOf('\n');
        if (i >= 0) {
          const l = out.slice(0, i);
          out = out.slice(i + 1);
          child.stdout.off('data', onData);
          resolve(l);
          return true;
        }
        return false;
      };
      const onData = (d) => {
        out += d;
        check();
      };
      if (!check()) child.stdout.on('data', onData);
      child.once('exit', (code) => code !== 0 && reject(new Error(`ws.mjs exited ${code}`)));
    });
  if ((await line()) !== 'subscribed') throw new Error('ws.mjs did not subscribe');
  await sleep(2000);
  const after = await snapshot(gateway.pid);
  child.stdin.write('go\n');
  const lat = JSON.parse(await line());
  return { kbRss: (after.rss - before.rss) / 1024 / SUBSCRIBERS, kbHeap: (after.heapUsed - before.heapUsed) / 1024 / SUBSCRIBERS, ...lat };
}
const ws = SUBSCRIBERS > 0 ? await wsFigures() : { kbRss: NaN, kbHeap: NaN, p50: NaN, p99: NaN, delivered: 0, sent: 0 };

// ---- table ----------------------------------------------------------------------------------
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const med = (point, system) => {
  const runs = results.get(`${point.name}|${system}`) ?? [];
  return Object.fromEntries(['rps', 'p50', 'p99', 'cpuMs', 'trips', 'failed'].map((k) => [k, median(runs.map((r) => r[k]))]));
};
const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '—');
const TARGETS = {
  'status read, 16 conn.': (g) => [`CPU ≤ 0.5 ms`, g.cpuMs <= 0.5],
  'status read, 50 conn.': (g, m) => [`≥ 0.5× minimal, p99 ≤ 20 ms, CPU ≤ 0.5 ms`, g.rps >= 0.5 * m.rps && g.p99 <= 20 && g.cpuMs <= 0.5],
  'create, 16 conn.': (g, _m, s) => [`≥ 0.8× SQL, p99 ≤ 50 ms, CPU ≤ 1.5 ms`, g.rps >= 0.8 * s.rps && g.p99 <= 50 && g.cpuMs <= 1.5],
  'create+key, 16 conn.': (g, _m, s) => [`≥ 0.8× SQL, p99 ≤ 50 ms, CPU ≤ 1.5 ms`, g.rps >= 0.8 * s.rps && g.p99 <= 50 && g.cpuMs <= 1.5],
};
const rows = [];
rows.push('| work | system | req/s | p50 ms | p99 ms | CPU ms/req | SQL round trips/req | ratio | target | verdict |');
rows.push('|---|---|---:|---:|---:|---:|---:|---:|---|---|');
for (const point of POINTS) {
  const g = med(point, 'gateway');
  const m = med(point, 'minimal');
  const s = med(point, 'sql');
  const [target, met] = TARGETS[point.name](g, m, s);
  rows.push(`| ${point.name} | gateway (${WORKERS} proc.) | ${f(g.rps, 0)} | ${f(g.p50)} | ${f(g.p99)} | ${f(g.cpuMs, 2)} | ${f(g.trips, 2)} | | ${target} | ${met ? 'met' : 'missed'} |`);
  rows.push(`| | minimal node:http + pg (${WORKERS} proc.) | ${f(m.rps, 0)} | ${f(m.p50)} | ${f(m.p99)} | ${f(m.cpuMs, 2)} | ${f(m.trips, 2)} | ${f(g.rps / m.rps, 2)} | | |`);
  rows.push(`| | SQL direct (pgbench -M prepared, ${Math.min(POOL * WORKERS, 40)} conn.) | ${f(s.rps, 0)} | ${f(s.p50)} | ${f(s.p99)} | — | ${f(s.trips, 0)} | ${f(g.rps / s.rps, 2)} | | |`);
}
const wsMet = ws.kbRss <= 30 && ws.p99 <= 20;
rows.push('');
rows.push('| WebSocket | figure | target | verdict |');
rows.push('|---|---|---|---|');
rows.push(`| ${SUBSCRIBERS} idle graphql-ws subscribers | ${f(ws.kbRss)} KB RSS (${f(ws.kbHeap)} KB heap) per subscriber | ≤ 30 KB | ${ws.kbRss <= 30 ? 'met' : 'missed'} |`);
rows.push(`| REST response → subscriber (${ws.delivered}/${ws.sent} delivered, beside the idle ones) | p50 ${f(ws.p50)} ms, p99 ${f(ws.p99)} ms | p99 ≤ 20 ms | ${ws.p99 <= 20 ? 'met' : 'missed'} |`);
const failures = [...results.values()].flat().reduce((n, r) => n + (r.failed ?? 0), 0);
console.log(`\n${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), Node ${process.version}, ${ROUNDS} rounds × ${SECONDS} s, medians; ${failures} failed requests; ratio = gateway ÷ that row\n`);
console.log(rows.join('\n'));
void wsMet;
for (const c of children) c.kill('SIGTERM');
await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
await rm(probeDir, { recursive: true, force: true });
await rm(scriptDir, { recursive: true, force: true });
process.exit(0);
