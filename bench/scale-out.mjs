// Database cost per create as processes are added (#17): one gateway instance with 1, 2, 4 worker
// processes (WEB_CONCURRENCY) and two instances on one database, each measured with wrk (creates
// with a unique Idempotency-Key, 16 connections in all, split between the instances), rounds
// interleaved, medians printed as a Markdown table. PostgreSQL's CPU is every postgres process's
// (as the shared perf bar counts it); each point starts after a CHECKPOINT.
//
// Run from the project root after `npm run build`:  node bench/scale-out.mjs
// Env: SCALE_CONFIGS=1x1,1x2,1x4,2x1 (instances x workers; a leading `b` runs the checkout at
//      SCALE_BASELINE_ROOT instead, e.g. b1x4 for the code before a change, in the same rounds),
//      SCALE_SECONDS=10, SCALE_ROUNDS=3, SCALE_CONNECTIONS=16, SCALE_PG_URL=postgres://postgres@127.0.0.1:5432
//      (a scale_out_* database is created there and dropped at the end). Needs wrk and psql. Load
//      goes to 127.0.0.1 only. Also counts the database's transactions per create (pg_stat_database).
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const E = process.env;
const CONFIGS = (E.SCALE_CONFIGS ?? '1x1,1x2,1x4,2x1').split(',').map((c) => {
  const t = c.trim();
  const [i, w] = t.replace(/^b/, '').split('x').map(Number);
  return Object.assign([i, w], { baseline: t.startsWith('b'), label: t });
});
const BASELINE_ROOT = E.SCALE_BASELINE_ROOT ? path.resolve(E.SCALE_BASELINE_ROOT) : undefined;
const SECONDS = Number(E.SCALE_SECONDS ?? 10);
const ROUNDS = Number(E.SCALE_ROUNDS ?? 3);
const CONNECTIONS = Number(E.SCALE_CONNECTIONS ?? 16);
const PG = (E.SCALE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const DB = `scale_out_${Date.now().toString(36)}`;
const DB_URL = `${PG}/${DB}`;
const OUT = mkdtempSync(path.join(tmpdir(), 'scale-out-'));
const SECRETS = {
  KEY_SIGNING_SECRET: 'scale-key-signing-secret-000000000000000',
  USER_TOKEN_SECRET: 'scale-user-token-secret-0000000000000000',
  ADMIN_TOKEN: 'scale-admin-token-00000000000',
};
const GW_ENV = { ...SECRETS, DATABASE_URL: DB_URL, LOG_LEVEL: 'warn', APP_ENV: 'development', RATE_LIMIT_PER_SECOND: '1000000000',
  LOOKUP_LIMIT_PER_MINUTE: '1000000000', PAYMENT_REQUEST_TTL_SECONDS: '86400',
  // The bench piles PENDING requests of one developer on a few wallets: no per-payer cap (#24).
  MAX_PENDING_PER_PAYER: '0' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const u = new URL(PG);
const psql = (sql, db = 'postgres') =>
  execFileSync('psql', ['-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', '-d', db, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
const log = (s) => process.stderr.write(`[scale-out] ${s}\n`);
const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

/** CPU ticks of every process whose process group or name matches. */
function ticks(match) {
  let t = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      const x = s.slice(s.lastIndexOf(')') + 2).split(' ');
      if (match(s.slice(0, s.lastIndexOf(')') + 1), Number(x[2]))) t += Number(x[11]) + Number(x[12]) + Number(x[13]) + Number(x[14]);
    } catch { /* gone */ }
  }
  return t;
}
const pgTicks = () => ticks((name) => /\((postgres|postmaster)\)/.test(name));
const groupTicks = (pgids) => ticks((_name, pgrp) => pgids.includes(pgrp));

const gateways = [];
let nextPort = 30000 + Math.floor(Math.random() * 20000);
async function startGateway(workers, root = '.', db = DB) {
  const port = nextPort++;
  const child = spawn(path.resolve(root, 'node_modules/.bin/node'), ['dist/src/main.js'], { cwd: root, env: { ...E, ...GW_ENV, DATABASE_URL: `${PG}/${db}`, PORT: String(port), WEB_CONCURRENCY: String(workers) }, detached: true,
    stdio: ['ignore', 'ignore', 'inherit'] });
  const gw = { child, port, base: `http://127.0.0.1:${port}` };
  gateways.push(gw);
  for (let i = 0; i < 240; i++) {
    try { if ((await fetch(`${gw.base}/healthz`)).ok) return gw; } catch { /* not yet */ }
    await sleep(250);
  }
  throw new Error(`gateway on ${port} did not start`);
}
async function stopGateway(gw) {
  try { process.kill(-gw.child.pid, 'SIGTERM'); } catch { return; }
  for (let i = 0; i < 100 && gw.child.exitCode === null && gw.child.signalCode === null; i++) await sleep(100);
  try { process.kill(-gw.child.pid, 'SIGKILL'); } catch { /* gone */ }
  gateways.splice(gateways.indexOf(gw), 1);
}

async function seed(base) {
  const gql = async (query, variables) => {
    const res = await (await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${SECRETS.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }) })).json();
    if (res.errors) throw new Error(res.errors[0].message);
    return Object.values(res.data)[0];
  };
  const dev = await gql('mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: 'Scale out' });
  const key = await gql('mutation($d: ID!) { issueSecretKey(developerId: $d) { secretKey } }', { d: dev.id });
  const wallets = [];
  for (let i = 0; i < 16; i++) {
    const user = await gql('mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId } }',
      { i: { username: `scale_${DB.slice(-6)}_${i}`, phone: `09${String(10_000_000 + ((Date.now() + i) % 89_999_999))}`, balance: 1_000_000 } });
    wallets.push(user.walletId);
  }
  // (The development sandbox's test wallets subscribe, so the outbox readers do read: as with a live app.)
  return { secretKey: key.secretKey, wallets };
}

function wrk(base, conns, seconds, seedData, tag) {
  return new Promise((resolve) => {
    const p = spawn('wrk', ['-t1', `-c${conns}`, `-d${seconds}s`, '--timeout', '10s', '-s', path.join(HERE, 'wrk-create.lua'), `${base}/api/v1/wallet/request-payment`],
      { env: { ...E, WRK_AUTH: `Bearer ${seedData.secretKey}`, WRK_WALLETS: seedData.wallets.join(','), WRK_RUN: tag }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), (seconds + 20) * 1000);
    p.on('exit', () => { clearTimeout(timer); const m = /WRK (\{.*\})/.exec(out); resolve(m ? JSON.parse(m[1]) : { requests: 0, non2xx: 1, errors: 1 }); });
  });
}

/** The baseline's database (its own schema: the baseline code migrates it). */
const BASE_DB = `${DB}_b`;
const xacts = (db) => Number(psql(`select xact_commit + xact_rollback from pg_stat_database where datname = '${db}'`).trim());

async function point(config, seeds, round) {
  const [instances, workers] = config;
  if (config.baseline && !BASELINE_ROOT) throw new Error(`${config.label} needs SCALE_BASELINE_ROOT`);
  const db = config.baseline ? BASE_DB : DB;
  const seedData = config.baseline ? seeds.baseline : seeds.current;
  const gws = [];
  for (let i = 0; i < instances; i++) gws.push(await startGateway(workers, config.baseline ? BASELINE_ROOT : '.', db));
  const per = Math.max(1, Math.floor(CONNECTIONS / instances));
  await Promise.all(gws.map((gw, i) => wrk(gw.base, per, 4, seedData, `warm-${round}-${i}-${Date.now()}`)));
  psql('analyze', db);
  psql('checkpoint', db);
  const x0 = xacts(db), pg0 = pgTicks(), gw0 = groupTicks(gws.map((g) => g.child.pid)), t0 = Date.now();
  const results = await Promise.all(gws.map((gw, i) => wrk(gw.base, per, SECONDS, seedData, `r${round}-${i}-${Date.now()}`)));
  const secs = (Date.now() - t0) / 1000;
  const pg1 = pgTicks(), gw1 = groupTicks(gws.map((g) => g.child.pid));
  await sleep(1200); // backends flush their statistics at most once a second
  const x1 = xacts(db);
  for (const gw of gws) await stopGateway(gw);
  const requests = results.reduce((a, r) => a + r.requests, 0);
  const bad = results.reduce((a, r) => a + r.non2xx + r.errors, 0);
  const hz = 100;
  return { rps: requests / secs, xact: (x1 - x0) / requests, pgMs: ((pg1 - pg0) / hz) * 1000 / requests, gwMs: ((gw1 - gw0) / hz) * 1000 / requests,
    p99: Math.max(...results.map((r) => r.p99_us / 1000)), bad };
}

async function main() {
  psql(`create database ${DB}`);
  const baseline = CONFIGS.some((c) => c.baseline);
  if (baseline) psql(`create database ${BASE_DB}`);
  log(`database ${DB}${baseline ? ` (baseline: ${BASE_DB})` : ''}; configs ${CONFIGS.map((c) => c.label).join(', ')}; ${ROUNDS} rounds x ${SECONDS} s; ${CONNECTIONS} connections`);
  const seeds = {};
  for (const [key, root, db] of [['current', '.', DB], ...(baseline ? [['baseline', BASELINE_ROOT, BASE_DB]] : [])]) {
    const first = await startGateway(1, root, db);
    seeds[key] = await seed(first.base);
    await stopGateway(first);
    for (const t of psql("select tablename from pg_tables where schemaname = 'public'", db).trim().split('\n').filter(Boolean)) {
      try { psql(`alter table "${t}" set (autovacuum_enabled = false)`, db); } catch { /* a partitioned parent */ }
    }
  }
  const rows = new Map(CONFIGS.map((c) => [c.label, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? CONFIGS : [...CONFIGS].reverse();
    for (const c of order) {
      const r = await point(c, seeds, round);
      rows.get(c.label).push(r);
      log(`round ${round} ${c.label}: ${c[0]} instance(s) x ${c[1]} worker(s)${c.baseline ? ' (baseline)' : ''}: ${r.rps.toFixed(0)} creates/s, ${r.xact.toFixed(2)} transactions/create, PostgreSQL ${r.pgMs.toFixed(2)} ms/create, gateway ${r.gwMs.toFixed(2)} ms/create, p99 ${r.p99.toFixed(1)} ms${r.bad ? `, ${r.bad} errors` : ''}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`);
    }
  }
  const base = med(rows.get(CONFIGS[0].label).map((r) => r.pgMs));
  const baseX = med(rows.get(CONFIGS[0].label).map((r) => r.xact));
  const lines = ['| instances x workers | creates/s | PostgreSQL CPU per create | vs first row | transactions per create | vs first row | gateway CPU per create | p99 |', '|---|---|---|---|---|---|---|---|'];
  for (const [k, rs] of rows) {
    const pgMs = med(rs.map((r) => r.pgMs));
    const xact = med(rs.map((r) => r.xact));
    lines.push(`| ${k} | ${med(rs.map((r) => r.rps)).toFixed(0)} | ${pgMs.toFixed(2)} ms | ${(pgMs / base).toFixed(2)}x | ${xact.toFixed(2)} | ${(xact / baseX).toFixed(2)}x | ${med(rs.map((r) => r.gwMs)).toFixed(2)} ms | ${med(rs.map((r) => r.p99)).toFixed(1)} ms |`);
  }
  writeFileSync(path.join(OUT, 'scale-out.json'), JSON.stringify(Object.fromEntries(rows), null, 1));
  process.stdout.write(`${lines.join('\n')}\n(${ROUNDS} rounds, medians; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}; raw: ${OUT})\n`);
}

const cleanup = async () => {
  for (const gw of [...gateways]) await stopGateway(gw);
  for (const db of [DB, BASE_DB]) {
    try { psql(`drop database if exists ${db} with (force)`); } catch { /* left for the operator */ }
  }
};
process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
main().then(cleanup, async (err) => { log(String(err?.stack ?? err)); await cleanup(); process.exit(1); });
