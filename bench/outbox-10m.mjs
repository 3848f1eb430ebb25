// The outbox at 10 million events (#17): the gateway's own code (dist/) measured on a nearly empty
// `events` table and again after seeding it to OUTBOX_ROWS rows (10,000,000 by default): the
// create (claim, request, event, record: one transaction), one outbox read of what one create
// committed, and three pages of the events API (first, middle, last) of a developer with a
// quarter of the rows; then retention's pass over the big table. Prints a Markdown table (mean
// and p99 wall time of sequential calls, one client) and the plans of the outbox read and the
// API page. Not part of `npm test`: seeding takes minutes.
//
// Run from the project root after `npm run build`:  node bench/outbox-10m.mjs
// Env: OUTBOX_ROWS=10000000, OUTBOX_SAMPLES=300, OUTBOX_PG_URL=postgres://postgres@127.0.0.1:5432 (an
//      outbox_10m_* database is created there and dropped at the end; OUTBOX_KEEP=1 keeps it).
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../dist/src/config.js';
import { openDatabase } from '../dist/src/db/database.js';
import { sql as statement } from '../dist/src/db/sql.js';
import { resolveStartupKeys } from '../dist/src/startup-keys.js';
import { createServices } from '../dist/src/services.js';
import { OutboxReader } from '../dist/src/events/outbox.js';
import { settledHorizon } from '../dist/src/events/event.service.js';
import { Maintenance } from '../dist/src/maintenance.js';

const E = process.env;
const ROWS = Number(E.OUTBOX_ROWS ?? 10_000_000);
const SAMPLES = Number(E.OUTBOX_SAMPLES ?? 300);
const PG = (E.OUTBOX_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const DB = `outbox_10m_${Date.now().toString(36)}`;
const URL_ = `${PG}/${DB}`;
const log = (s) => process.stderr.write(`[outbox-10m ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const silent = pino({ level: 'silent' });

const admin = new pg.Client({ connectionString: `${PG}/postgres` });
await admin.connect();
await admin.query(`create database ${DB}`);
const config = resolveStartupKeys(loadConfig({ ...E, DATABASE_URL: URL_, APP_ENV: 'development', LOG_LEVEL: 'silent', PAYMENT_REQUEST_TTL_SECONDS: '86400', MAX_PENDING_PER_PAYER: '0',
  KEY_SIGNING_SECRET: 'outbox-key-signing-secret-00000000000000', USER_TOKEN_SECRET: 'outbox-user-token-secret-000000000000000', ADMIN_TOKEN: 'outbox-admin-token-0000000000' }));
const db = await openDatabase({ url: URL_, poolMax: 4, logger: silent });
const services = createServices(config, db, silent);
const sql = (text, params = []) => db.orm.em.fork().execute(text, params);

// One developer measured (`dev`), three others sharing the bulk rows; one funded user and wallet.
const devs = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
for (const id of devs) await sql('insert into developers (id, name) values (?, ?)', [id, `Outbox ${id.slice(0, 8)}`]);
const dev = devs[0];
const userId = randomUUID();
const walletId = `wlt_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
await sql(`insert into users (id, username, phone) values (?, ?, ?)`, [userId, `outbox_${Date.now().toString(36)}`, String(900_000_000 + (Date.now() % 99_999_999))]);
await sql(`insert into wallets (id, user_id, status, balance, currency) values (?, ?, 'ACTIVE', 1000000, 'ETB')`, [walletId, userId]);

const stats = (ms) => { const s = [...ms].sort((a, b) => a - b); return { mean: s.reduce((a, b) => a + b, 0) / s.length, p99: s[Math.min(s.length - 1, Math.floor(0.99 * s.length))] }; };
async function timed(n, fn) { const out = []; for (let i = 0; i < n; i++) { const t = performance.now(); await fn(i); out.push(performance.now() - t); } return stats(out); }

let keyN = 0;
const create = () => services.payments.create(services.works.begin(), dev, { walletId, amount: 1.5, description: 'outbox bench', merchantName: 'Bench' },
  `k${++keyN}`, { key: `k${keyN}`, fingerprint: 'f'.repeat(64) });

async function measure(label) {
  log(`${label}: measuring (${SAMPLES} samples each)`);
  await create(); // warm the prepared statements
  const createT = await timed(SAMPLES, () => create());
  // The outbox read of what one create committed (a reader interested in everyone, as with many subscribers).
  let got = 0;
  const reader = new OutboxReader({
    query: (name, text, values) => db.sql.run(statement(name, text), values),
    log: silent,
    intervalMs: 60_000,
    interested: () => true,
    anyInterest: () => true,
    deliver: ({ rows }) => void (got += rows.length),
  });
  await reader.attach();
  const readT = { ms: [] };
  for (let i = 0; i < SAMPLES; i++) {
    await create();
    const t = performance.now();
    await reader.readOnce();
    readT.ms.push(performance.now() - t);
  }
  if (got < SAMPLES) throw new Error(`the reader handed over ${got} rows for ${SAMPLES} creates`);
  // Events API pages of the measured developer: first, middle, last.
  const [{ n }] = await sql('select count(*)::int as n from events where developer_id = ?', [dev]);
  const ids = await sql(`select id from events where developer_id = ? order by xid, position offset ? limit 1`, [dev, Math.floor(n / 2)]);
  const tail = await sql(`select id from events where developer_id = ? order by xid desc, position desc offset 60 limit 1`, [dev]);
  const page = (after) => () => services.eventLog.list(db.sql, dev, after, 50);
  const first = await timed(SAMPLES, page(null));
  const middle = await timed(SAMPLES, page(ids[0].id));
  const last = await timed(SAMPLES, page(tail[0].id));
  const [{ total }] = await sql('select count(*)::bigint as total from events');
  return { label, total: Number(total), developerRows: n, create: createT, read: stats(readT.ms), first, middle, last };
}

async function seed() {
  const client = new pg.Client({ connectionString: URL_ });
  await client.connect();
  // Bulk rows only: foreign keys point at rows that exist, so their checks are skipped here (replica role).
  await client.query(`set session_replication_role = replica`);
  const payload = JSON.stringify({ id: 'evt_x', type: 'payment_request.created', createdAt: new Date().toISOString(), data: { paymentRequest: {
    id: randomUUID(), status: 'APPROVED', amount: 1.5, currency: 'ETB', description: 'bulk order', merchantName: 'Bulk Shop', createdAt: new Date().toISOString(),
    expiresAt: new Date().toISOString(), updatedAt: new Date().toISOString(), transactionId: null, reference: null, metadata: null } } });
  const chunk = 125_000; // requests per statement, 4 events each
  const t0 = Date.now();
  for (let done = 0, i = 0; done < ROWS; i++) {
    const k = Math.min(chunk, Math.ceil((ROWS - done) / 4));
    await client.query(
      `with pr as (
         insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at)
         select gen_random_uuid(), $1, $2, 1.50, 'ETB', 'bulk order', 'Bulk Shop', 'EXPIRED', now() - interval '200 days', now(), now() - interval '200 days'
           from generate_series(1, $3::int)
         returning id)
       insert into events (id, type, developer_id, subject_id, payment_request_id, sequence, payload, created_at)
       select 'evt_' || md5(pr.id::text || s), (array['payment_request.created', 'payment_request.approved', 'transaction.refunded', 'transaction.refunded'])[s],
              $1, pr.id::text, pr.id, s, $4::jsonb, now() - interval '200 days' + s * interval '1 second'
         from pr, generate_series(1, 4) s`,
      [devs[i % devs.length], walletId, k, payload],
    );
    done += k * 4;
    if (i % 8 === 7 || done >= ROWS) log(`seeded ${done.toLocaleString()} events (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
  await client.query('analyze');
  await client.end();
  return (Date.now() - t0) / 1000;
}

async function plans() {
  const c = new pg.Client({ connectionString: URL_ });
  await c.connect();
  const [{ s }] = (await c.query('select pg_current_snapshot()::text as s')).rows;
  const [, xmax] = s.split(':');
  const text = (await import('../dist/src/events/outbox.js')).OUTBOX_BATCH_SQL;
  const out = [];
  if (text) {
    const p = await c.query(`explain (analyze, costs off, timing off, summary on) ${text.replaceAll('$1', `'${xmax}'`).replaceAll('$2', `'{}'`)
      .replaceAll('$3', 'null').replaceAll('$4', `'-1'`).replaceAll('$5', 'null').replaceAll('$6', `'0'`).replaceAll('$7', '1000')}`);
    out.push('outbox read:', ...p.rows.map((r) => `  ${r['QUERY PLAN']}`));
  }
  const horizon = await settledHorizon(db.sql);
  const p2 = await c.query(`explain (analyze, costs off, timing off, summary on) select payload from events
     where (developer_id, xid, position) > ($1::uuid, '0'::xid8, 0::bigint) and (developer_id, xid, position) < ($1::uuid, $2::xid8, 0)
     order by developer_id, xid, position limit 51`, [dev, horizon]);
  out.push('events API first page:', ...p2.rows.map((r) => `  ${r['QUERY PLAN']}`));
  await c.end();
  return out;
}

try {
  const small = await measure('empty');
  log(`seeding ${ROWS.toLocaleString()} events`);
  const seconds = await seed();
  const big = await measure(`${(ROWS / 1e6).toFixed(0)}M`);
  const plan = await plans();
  const maintenance = new Maintenance(services.forkEm, silent, { eventRetentionDays: 90, webhookDeliveryRetentionDays: 30, idempotencyRetentionHours: 24 });
  const t = performance.now();
  const removed = await maintenance.run();
  const retentionMs = performance.now() - t;
  const f = (x) => x.toFixed(2);
  const row = (name, a, b) => `| ${name} | ${f(a.mean)} / ${f(a.p99)} ms | ${f(b.mean)} / ${f(b.p99)} ms | ${f(b.mean / a.mean)}x |`;
  process.stdout.write([
    `| operation (mean / p99, one client) | events: ${small.total.toLocaleString()} | events: ${big.total.toLocaleString()} (${big.developerRows.toLocaleString()} of the developer's) | ratio |`,
    '|---|---|---|---|',
    row('create (claim, request, event, record; one commit)', small.create, big.create),
    row('outbox read of one create', small.read, big.read),
    row('events API, first page of 50', small.first, big.first),
    row('events API, a middle page', small.middle, big.middle),
    row('events API, the last page', small.last, big.last),
    '',
    `seeding: ${seconds.toFixed(0)} s; retention pass over the seeded table (90 days; rows 200 days old): ${retentionMs.toFixed(0)} ms, removed ${JSON.stringify(removed)}`,
    '',
    ...plan,
    '',
  ].join('\n'));
} finally {
  await db.close();
  if (E.OUTBOX_KEEP !== '1') await admin.query(`drop database if exists ${DB} with (force)`);
  await admin.end();
}
