// Fan-out of events as instances are added (#32): N gateway instances (separate processes,
// WEB_CONCURRENCY=1 each) on one database, with and without NATS (NATS_URL), under the same create
// load (wrk, creates with a unique Idempotency-Key, FANOUT_CONNECTIONS in all, split between the
// instances). Every wallet user has a graphql-ws subscriber (`paymentRequested`) on one of the
// instances (user i on instance i mod N), so every create is an event some instance must deliver,
// most of them committed on another instance than the subscriber's. Per point it counts:
//   - transactions per create (pg_stat_database xact_commit + xact_rollback of the database),
//   - outbox reads per second and per create (outbox_reads_total of every instance's /metrics),
//   - deliveries: each create's event received once by its subscriber, the delivery time from the
//     event's createdAt (the gateway's clock, the same machine) to its arrival, p50 and p99,
//     missing and duplicated events,
//   - PostgreSQL CPU per create (every postgres process, as the shared perf bar counts it).
// Rounds are interleaved, medians printed as a Markdown table.
//
// Run from the project root after `npm run build`:  node bench/fanout.mjs
// Env: FANOUT_INSTANCES=1,2,4,8  FANOUT_NATS=off,on  FANOUT_SECONDS=10  FANOUT_ROUNDS=2
//      FANOUT_CONNECTIONS=16  FANOUT_USERS=32  FANOUT_RATE=0 (creates per second in all, through
//      wrk's per-request delay; 0: as fast as it goes)  FANOUT_PG_URL=postgres://postgres@127.0.0.1:5432  FANOUT_NATS_URL=nats://127.0.0.1:4222
//      FANOUT_POOL=4 (DB_POOL_MAX per instance: 8 instances stay under max_connections)
// Needs wrk and psql. Load goes to 127.0.0.1 only; a fanout_* database is created and dropped.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { createClient } = require('graphql-ws');
const WebSocket = require('ws');
const HERE = path.dirname(fileURLToPath(import.meta.url));
const E = process.env;
const INSTANCES = (E.FANOUT_INSTANCES ?? '1,2,4,8').split(',').map(Number);
const NATS_MODES = (E.FANOUT_NATS ?? 'off,on').split(',').map((m) => m.trim() === 'on');
const SECONDS = Number(E.FANOUT_SECONDS ?? 10);
const ROUNDS = Number(E.FANOUT_ROUNDS ?? 2);
const CONNECTIONS = Number(E.FANOUT_CONNECTIONS ?? 16);
const USERS = Number(E.FANOUT_USERS ?? 32);
const RATE = Number(E.FANOUT_RATE ?? 0);
const POOL = Number(E.FANOUT_POOL ?? 4);
const NATS_URL = E.FANOUT_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG = (E.FANOUT_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const DB = `fanout_${Date.now().toString(36)}`;
const DB_URL = `${PG}/${DB}`;
const SECRETS = {
  KEY_SIGNING_SECRET: 'fanout-key-signing-secret-00000000000000',
  USER_TOKEN_SECRET: 'fanout-user-token-secret-000000000000000',
  ADMIN_TOKEN: 'fanout-admin-token-0000000000',
};
const GW_ENV = {
  ...SECRETS, DATABASE_URL: DB_URL, LOG_LEVEL: 'warn', APP_ENV: 'development', RATE_LIMIT_PER_SECOND: '1000000000',
  LOOKUP_LIMIT_PER_MINUTE: '1000000000', PAYMENT_REQUEST_TTL_SECONDS: '86400', MAX_PENDING_PER_PAYER: '0',
  SANDBOX_TEST_WALLETS: 'false', WEB_CONCURRENCY: '1', DB_POOL_MAX: String(POOL), WS_MAX_CONNECTIONS_PER_USER: '100',
};
const NODE = path.resolve('node_modules/.bin/node');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const u = new URL(PG);
const psql = (sql, db = 'postgres') =>
  execFileSync('psql', ['-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', '-d', db, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
const log = (s) => process.stderr.write(`[fanout] ${s}\n`);
const med = (a) => { const s = [...a].filter(Number.isFinite).sort((x, y) => x - y); if (!s.length) return NaN; const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };

function pgTicks() {
  let t = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (!/\((postgres|postmaster)\)/.test(s.slice(0, s.lastIndexOf(')') + 1))) continue;
      const x = s.slice(s.lastIndexOf(')') + 2).split(' ');
      t += Number(x[11]) + Number(x[12]) + Number(x[13]) + Number(x[14]);
    } catch { /* gone */ }
  }
  return t;
}
const xacts = () => Number(psql(`select xact_commit + xact_rollback from pg_stat_database where datname = '${DB}'`).trim());

let nextPort = 31000 + Math.floor(Math.random() * 15000);
async function startGateway(env) {
  const port = nextPort++;
  const child = spawn(NODE, ['dist/src/main.js'], { env: { ...E, ...GW_ENV, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  const gw = { child, port, base: `http://127.0.0.1:${port}` };
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new Error(`gateway on ${port} exited`);
    try { if ((await fetch(`${gw.base}/healthz`)).ok) return gw; } catch { /* not yet */ }
    await sleep(250);
  }
  throw new Error(`gateway on ${port} did not start`);
}
async function stopGateway(gw) {
  try { gw.child.kill('SIGTERM'); } catch { return; }
  for (let i = 0; i < 150 && gw.child.exitCode === null && gw.child.signalCode === null; i++) await sleep(100);
  try { gw.child.kill('SIGKILL'); } catch { /* gone */ }
}

async function gql(base, query, variables, token = SECRETS.ADMIN_TOKEN) {
  const res = await (await fetch(`${base}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) })).json();
  if (res.errors) throw new Error(res.errors[0].message);
  return Object.values(res.data)[0];
}

async function seed(base) {
  const dev = await gql(base, 'mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: 'Fan-out' });
  const key = await gql(base, 'mutation($d: ID!) { issueSecretKey(developerId: $d) { secretKey } }', { d: dev.id });
  const users = [];
  for (let i = 0; i < USERS; i++) {
    const user = await gql(base, 'mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId } }',
      { i: { username: `fan_${DB.slice(-6)}_${i}`, phone: `09${String(10_000_000 + ((Date.now() + i * 7919) % 89_999_999))}`, balance: 1_000_000 } });
    users.push(user);
  }
  const { mintUserToken } = await import(path.resolve('dist/src/auth/user-tokens.js'));
  for (const user of users) user.token = await mintUserToken({ userTokenSecret: SECRETS.USER_TOKEN_SECRET }, user.userId, 86_400);
  return { secretKey: key.secretKey, users };
}

/** One subscriber per user on its instance; records each event's arrival. */
async function subscribers(gws, users) {
  const got = new Map(); // request id -> [delivery ms, ...]
  const clients = [];
  let ready = 0;
  for (const [i, user] of users.entries()) {
    const gw = gws[i % gws.length];
    const client = createClient({ url: `${gw.base.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0, lazy: false, onNonLazyError: () => undefined });
    clients.push(client);
    await new Promise((resolve, reject) => {
      let first = true;
      client.subscribe({ query: 'subscription { paymentRequested { id createdAt } }' }, {
        next: ({ data }) => {
          const at = Date.now();
          const e = data.paymentRequested;
          const list = got.get(e.id) ?? [];
          list.push(at - Date.parse(e.createdAt));
          got.set(e.id, list);
        },
        error: (err) => { if (first) reject(err instanceof Error ? err : new Error(JSON.stringify(err))); },
        complete: () => undefined,
      });
      // The subscription is live once the server acknowledged it: wait for the socket's connected event, then a moment.
      client.on('connected', () => { first = false; ready++; resolve(); });
    });
  }
  // Let every instance register its subscribers with its feed.
  await sleep(1500);
  return { got, close: () => Promise.all(clients.map((c) => c.dispose())), ready };
}

function wrk(base, conns, seconds, seedData, tag, rate) {
  return new Promise((resolve) => {
    const args = ['-t1', `-c${conns}`, `-d${seconds}s`, '--timeout', '10s', '-s', path.join(HERE, 'wrk-create.lua'), `${base}/api/v1/wallet/request-payment`];
    const delay = rate > 0 ? Math.round((conns * 1000) / rate) : 0;
    const p = spawn('wrk', args, { env: { ...E, WRK_AUTH: `Bearer ${seedData.secretKey}`, WRK_WALLETS: seedData.users.map((x) => x.walletId).join(','), WRK_RUN: tag, WRK_DELAY_MS: String(delay) }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), (seconds + 20) * 1000);
    p.on('exit', () => { clearTimeout(timer); const m = /WRK (\{.*\})/.exec(out); resolve(m ? JSON.parse(m[1]) : { requests: 0, non2xx: 1, errors: 1 }); });
  });
}

async function outboxReads(gws) {
  let n = 0;
  for (const gw of gws) {
    try {
      const text = await (await fetch(`${gw.base}/metrics`)).text();
      for (const m of text.matchAll(/^outbox_reads_total\{reader="(\w+)"\} (\d+)/gm)) n += Number(m[2]);
    } catch { /* gone */ }
  }
  return n;
}

/** Removes a point's stream from the NATS server (it is the machine's). */
async function deleteStream(stream) {
  const { connect } = require('@nats-io/transport-node');
  const { jetstreamManager } = require('@nats-io/jetstream');
  const nc = await connect({ servers: NATS_URL });
  try {
    await (await jetstreamManager(nc)).streams.delete(stream);
  } catch { /* not there */ }
  await nc.close();
}

async function createdIds(since) {
  return new Set(psql(`select id from payment_requests where created_at >= '${since}'`, DB).trim().split('\n').filter(Boolean));
}

async function point(instances, nats, seedData, round) {
  const stream = `FANOUT_${DB.slice(-6).toUpperCase()}_${instances}_${round}`;
  const env = nats ? { NATS_URL, NATS_STREAM: stream } : {};
  const gws = [];
  for (let i = 0; i < instances; i++) gws.push(await startGateway(env));
  const subs = await subscribers(gws, seedData.users);
  const per = Math.max(1, Math.floor(CONNECTIONS / instances));
  const rate = RATE > 0 ? Math.max(1, Math.floor(RATE / instances)) : 0;
  await Promise.all(gws.map((gw, i) => wrk(gw.base, per, 3, seedData, `warm-${round}-${instances}-${i}-${Date.now()}`, rate)));
  await sleep(1000);
  subs.got.clear();
  psql('checkpoint', DB);
  const since = psql('select now()', DB).trim();
  const r0 = await outboxReads(gws), x0 = xacts(), pg0 = pgTicks(), t0 = Date.now();
  const results = await Promise.all(gws.map((gw, i) => wrk(gw.base, per, SECONDS, seedData, `r${round}-${instances}-${i}-${Date.now()}`, rate)));
  const secs = (Date.now() - t0) / 1000;
  const pg1 = pgTicks();
  await sleep(2000); // the last events arrive; statistics flush
  const x1 = xacts(), r1 = await outboxReads(gws);
  const ids = await createdIds(since);
  const lat = [];
  let missing = 0, duplicated = 0;
  for (const id of ids) {
    const l = subs.got.get(id);
    if (!l) missing++;
    else { if (l.length > 1) duplicated++; lat.push(l[0]); }
  }
  await subs.close();
  for (const gw of gws) await stopGateway(gw);
  if (nats) await deleteStream(stream);
  const creates = results.reduce((a, r) => a + r.requests, 0);
  const bad = results.reduce((a, r) => a + r.non2xx + r.errors, 0);
  return { creates: creates / secs, xactPerCreate: (x1 - x0) / creates, readsPerSecond: (r1 - r0) / secs, readsPerCreate: (r1 - r0) / creates,
    p50: pct(lat, 0.5), p99: pct(lat, 0.99), missing, duplicated, pgMs: ((pg1 - pg0) / 100) * 1000 / creates, bad, events: ids.size };
}

async function main() {
  psql(`create database ${DB}`);
  log(`database ${DB}; instances ${INSTANCES.join(',')}; NATS ${NATS_MODES.map((m) => (m ? 'on' : 'off')).join(',')}; ${ROUNDS} rounds x ${SECONDS} s; ${CONNECTIONS} connections; ${USERS} subscribed users`);
  try {
    const first = await startGateway({});
    const seedData = await seed(first.base);
    await stopGateway(first);
    const configs = NATS_MODES.flatMap((nats) => INSTANCES.map((n) => [n, nats]));
    const rows = new Map(configs.map((c) => [c.join(':'), []]));
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 ? configs : [...configs].reverse();
      for (const [n, nats] of order) {
        psql('analyze', DB);
        const r = await point(n, nats, seedData, round);
        rows.get(`${n}:${nats}`).push(r);
        log(`round ${round} ${n} instance(s) NATS ${nats ? 'on' : 'off'}: ${r.creates.toFixed(0)} creates/s, ${r.xactPerCreate.toFixed(2)} transactions/create, ${r.readsPerSecond.toFixed(0)} outbox reads/s (${r.readsPerCreate.toFixed(3)}/create), delivery p50 ${r.p50} ms p99 ${r.p99} ms, ${r.missing} missing, ${r.duplicated} duplicated of ${r.events}, PostgreSQL ${r.pgMs.toFixed(2)} ms/create${r.bad ? `, ${r.bad} errors` : ''}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}`);
      }
    }
    const lines = ['| instances | NATS | creates/s | transactions per create | outbox reads/s | outbox reads per create | delivery p50 | delivery p99 | missing / duplicated | PostgreSQL CPU per create |', '|---|---|---|---|---|---|---|---|---|---|'];
    for (const [k, rs] of rows) {
      const [n, nats] = k.split(':');
      const m = (f) => med(rs.map(f));
      lines.push(`| ${n} | ${nats === 'true' ? 'yes' : 'no'} | ${m((r) => r.creates).toFixed(0)} | ${m((r) => r.xactPerCreate).toFixed(2)} | ${m((r) => r.readsPerSecond).toFixed(0)} | ${m((r) => r.readsPerCreate).toFixed(3)} | ${m((r) => r.p50).toFixed(0)} ms | ${m((r) => r.p99).toFixed(0)} ms | ${rs.reduce((a, r) => a + r.missing, 0)} / ${rs.reduce((a, r) => a + r.duplicated, 0)} | ${m((r) => r.pgMs).toFixed(2)} ms |`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    psql(`drop database if exists ${DB} with (force)`);
  }
}

main().catch((err) => { log(err.stack ?? String(err)); process.exit(1); });
