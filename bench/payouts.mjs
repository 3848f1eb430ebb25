#!/usr/bin/env node
// A payout of 1,000,000 balance transactions and its CSV report (issue 34, item 6): time and the
// gateway's peak memory for the run and for the streamed report, and the report checked (one
// line per item, Σ net = the payout's amount).
//
//   npm run build && node bench/payouts.mjs [--items 1000000] [--loop SECONDS] [--reuse] [--heap MiB]
//
// It makes its own database (`wg_bench_payouts` on BENCH_PG_URL, default
// postgres://postgres@127.0.0.1:5432; never `test`), loads one developer's paid payment requests,
// transactions and `payment` balance transactions (with consent receipts, spread over the last
// 23 hours) in batches of SQL, starts the gateway as shipped (dist/src/main.js, one process,
// PAYOUT_CHECK_INTERVAL_SECONDS=0) and runs `runPayouts` and GET /api/v1/payouts/{id}/report over
// HTTP. Peak memory is the gateway process's VmHWM (/proc) before and after each phase. With
// `--loop S` it then repeats the run and the report for S seconds (each time undoing the payout in
// SQL), so the shared perf bar can be measured while a large payout is being made and read.
// `--loop-report` reads the report in each round too (by default only the run is repeated).
// `--reuse` keeps the database a previous run loaded (its payouts undone); `--heap MiB` starts the
// gateway with V8's old space capped there, which the report must then fit in.
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const ITEMS = Number(opt('items', '1000000'));
const LOOP_S = Number(opt('loop', '0'));
const REUSE = args.includes('--reuse');
/** With --loop: read the whole report in each round too (else only the payout run is repeated). */
const LOOP_REPORT = args.includes('--loop-report');
const HEAP = opt('heap', undefined);
const BATCH = 50_000;
const base = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
const dbName = 'wg_bench_payouts';
const url = `${base}/${dbName}`;
const node = path.join(root, 'node_modules/.bin/node');
const log = (...a) => console.log(new Date().toISOString().slice(11, 19), ...a);
const env = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  APP_ENV: 'development',
  DATABASE_URL: url,
  WEB_CONCURRENCY: '1',
  LOG_LEVEL: 'warn',
  PAYOUT_CHECK_INTERVAL_SECONDS: '0',
  LEDGER_CHECK_INTERVAL_SECONDS: '0',
  SANDBOX_TEST_WALLETS: 'false',
  RATE_LIMIT_PER_SECOND: '100000',
  DATA_DIR: path.join(root, '.data-bench'),
};

const cli = (...argv) => JSON.parse(execFileSync(node, [path.join(root, 'dist/src/cli/main.js'), ...argv], { env, encoding: 'utf8' }));

async function freePort() {
  const s = net.createServer().listen(0, '127.0.0.1');
  await once(s, 'listening');
  const { port } = s.address();
  s.close();
  return port;
}

/** The process's peak and current resident memory (MiB), from /proc. */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { peakMiB: Math.round(kb('VmHWM') / 1024), rssMiB: Math.round(kb('VmRSS') / 1024) };
}

// A consent receipt's size (a compact EdDSA JWS of the claims: ~560 characters).
const RECEIPT = `eyJhbGciOiJFZERTQSIsImtpZCI6InU1ZEZTbnVYc2VCRTNKNC1BX0pPY3A5b2xKODlWOWcxOU1iakJ5eDRueU0iLCJ0eXAiOiJjb25zZW50K2p3dCJ9.${'eyJwYXltZW50UmVxdWVzdElkIjoiM2YxYzJhOWUtN2I0ZC00YzFlLTlhNTMtMmQ4ZjZiMGU0YTE3IiwidHJhbnNhY3Rpb25JZCI6IjhkMmU2ZjFhLTRjM2ItNGY3ZS05YjEwLTVhNmM3ZDhlOWYwMSIsImFtb3VudCI6IjEyLjUwIiwiY3VycmVuY3kiOiJFVEIiLCJtZXJjaGFudE5hbWUiOiJDb3JuZXIgQ2Fmw6kiLCJ2ZXJpZmljYXRpb24iOiJwaW4iLCJpYXQiOjE3OTUzNzA0NDF9'}.-fHmmhmN65n1vTCMQO21CdDCA2zH0cWPe4n0fzAvBEHf4G9N6Bws91hWUFpIuqzYNSZwXC8ohyYkCTL9UhnTBA`;

let developerId;
let secretKey;
const db = new pg.Client({ connectionString: url });
if (REUSE) {
  await db.connect();
  [{ developerId }] = (await db.query(`select developer_id as "developerId" from developer_balances order by balance desc limit 1`)).rows;
  ({ secretKey } = cli('key:issue', '--developer', developerId));
  for (const { id } of (await db.query('select id from payouts where developer_id = $1', [developerId])).rows) await undo(id);
  await db.query('vacuum analyze balance_transactions');
  log(`reusing ${dbName}: ${(await db.query('select count(*)::int as n from balance_transactions where developer_id = $1', [developerId])).rows[0].n} balance transactions`);
} else {
  const admin = new pg.Client({ connectionString: `${base}/postgres` });
  await admin.connect();
  await admin.query(`drop database if exists ${dbName} with (force)`);
  await admin.query(`create database ${dbName}`);
  await admin.end();
  cli('migrate');
  ({ developerId } = cli('developer:create', '--name', 'Bench Merchant'));
  ({ secretKey } = cli('key:issue', '--developer', developerId));
  const { walletId } = cli('user:create', '--username', 'bench_payer', '--phone', '0911999999', '--balance', '1');

  await db.connect();
  log(`loading ${ITEMS.toLocaleString('en-US')} paid payment requests, transactions and balance transactions`);
  const loadStarted = performance.now();
  for (let from = 1; from <= ITEMS; from += BATCH) {
    const to = Math.min(ITEMS, from + BATCH - 1);
    await db.query(
      `with g as (
         select i, gen_random_uuid() as pr, gen_random_uuid() as tx, gen_random_uuid() as bt,
                (100 + (i % 9900))::numeric / 100 as amount,
                now() - interval '23 hours' + (i * (interval '23 hours' / $3)) as at
           from generate_series($1::int, $2::int) i),
       f as (select g.*, least(amount, round(amount * 2.9 / 100, 2) + 0.30) as fee from g),
       pr as (
         insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at,
                                       expires_at, updated_at, transaction_id, reference, consent_receipt, code, payment_url)
         select pr, $4, $5, amount, 'ETB', 'Bench order', 'Bench Shop', 'APPROVED', at, at + interval '5 minutes', at, tx,
                'order-' || i, $6 || i, replace(pr::text, '-', ''), 'http://localhost:3000/pay/' || replace(pr::text, '-', '')
           from f returning 1),
       t as (
         insert into transactions (id, payment_request_id, wallet_id, developer_id, amount, captured_amount, currency, status, type,
                                   description, payment_provider, payment_reference, created_at, updated_at)
         select tx, pr, $5, $4, amount, amount, 'ETB', 'COMPLETED', 'WALLET_PAYMENT', 'Bench order', 'WALLET',
                'WPAY' || lpad(i::text, 12, '0') || '-BENCH1', at, at
           from f returning 1)
       insert into balance_transactions (id, developer_id, type, amount, fee, net, currency, transaction_id, payment_request_id, reference, created_at)
       select bt, $4, 'payment', amount, fee, amount - fee, 'ETB', tx, pr, 'order-' || i, at from f`,
      [from, to, ITEMS, developerId, walletId, RECEIPT],
    );
    if (to % 200_000 === 0 || to === ITEMS) log(`  ${to.toLocaleString('en-US')}`);
  }
  const [{ available }] = (
    await db.query(
      `insert into developer_balances (developer_id, currency, balance)
       select $1, 'ETB', sum(net) from balance_transactions where developer_id = $1
       returning balance::text as available`,
      [developerId],
    )
  ).rows;
  await db.query('vacuum analyze balance_transactions');
  await db.query('vacuum analyze payment_requests');
  log(`loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s; available ${available} ETB`);
}

const port = await freePort();
const gateway = spawn(node, [...(HEAP ? [`--max-old-space-size=${HEAP}`] : []), path.join(root, 'dist/src/main.js')], {
  env: { ...env, PORT: String(port) },
  stdio: ['ignore', 'inherit', 'inherit'],
});
const baseUrl = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${baseUrl}/readyz`)).ok) break;
  } catch {
    /* not yet */
  }
  if (i > 300) throw new Error('the gateway did not start');
  await new Promise((r) => setTimeout(r, 100));
}
const adminToken = 'dev-admin-token';
const graphql = async (query) => {
  const res = await fetch(`${baseUrl}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = await res.json();
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
};
// Warm up: one of each request on a small scale, so the peak below is the work's, not the start's.
await fetch(`${baseUrl}/api/v1/balance`, { headers: { authorization: `Bearer ${secretKey}` } }).then((r) => r.text());
const idle = memoryOf(gateway.pid);
log(`gateway up (pid ${gateway.pid}); memory: ${JSON.stringify(idle)}`);

/** One payout run and (unless `report` is false) one full report; returns the figures. */
async function runAndReport(report = true) {
  let started = performance.now();
  const { runPayouts } = await graphql('mutation { runPayouts }');
  const runMs = performance.now() - started;
  const afterRun = memoryOf(gateway.pid);
  const [payout] = (await db.query(`select id, amount::text as amount, item_count from payouts where developer_id = $1 and status = 'PENDING'`, [developerId])).rows;
  if (!report) return { payouts: runPayouts, items: payout.item_count, runMs: Math.round(runMs), afterRun, payoutId: payout.id };
  started = performance.now();
  const res = await fetch(`${baseUrl}/api/v1/payouts/${payout.id}/report`, { headers: { authorization: `Bearer ${secretKey}` } });
  if (res.status !== 200) throw new Error(`report answered ${res.status}`);
  let bytes = 0;
  let lines = -1; // the header
  let netCents = 0n;
  let rest = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    bytes += chunk.length;
    const text = rest + decoder.decode(chunk, { stream: true });
    const parts = text.split('\r\n');
    rest = parts.pop();
    for (const line of parts) {
      lines++;
      if (lines === 0) continue;
      const net = line.split(',')[9]; // no field before `net` is quoted in this data
      const [whole, frac = '0'] = net.replace('-', '').split('.');
      const cents = BigInt(whole) * 100n + BigInt(frac.padEnd(2, '0'));
      netCents += net.startsWith('-') ? -cents : cents;
    }
  }
  const reportMs = performance.now() - started;
  const afterReport = memoryOf(gateway.pid);
  const [whole, frac] = payout.amount.split('.');
  const ok = lines === payout.item_count && netCents === BigInt(whole) * 100n + BigInt(frac);
  return { payouts: runPayouts, items: payout.item_count, amount: payout.amount, runMs: Math.round(runMs), afterRun, reportMs: Math.round(reportMs), reportMiB: Math.round(bytes / 1048576), lines, sumOfNetEqualsAmount: ok, afterReport, payoutId: payout.id };
}

/** Takes the payout back (SQL), so the next run makes it again. */
async function undo(payoutId) {
  await db.query('begin');
  await db.query(`delete from events where payout_id = $1`, [payoutId]);
  await db.query(`delete from ledger_entries where payout_id = $1`, [payoutId]);
  await db.query(`delete from balance_transactions where payout_id = $1`, [payoutId]);
  await db.query(`update developer_balances b set balance = b.balance + p.amount, in_payouts = b.in_payouts - p.amount from payouts p where p.id = $1 and b.developer_id = p.developer_id and b.currency = p.currency`, [payoutId]);
  await db.query(`delete from payouts where id = $1`, [payoutId]);
  await db.query(`update payout_accounts set paid_out_until = null where developer_id = $1`, [developerId]);
  await db.query('commit');
}

try {
  const first = await runAndReport();
  log(`runPayouts: ${first.payouts} payout of ${first.items.toLocaleString('en-US')} items (${first.amount} ETB) in ${(first.runMs / 1000).toFixed(2)} s; gateway peak ${first.afterRun.peakMiB} MiB (idle peak ${idle.peakMiB} MiB)`);
  log(`report: ${first.lines.toLocaleString('en-US')} lines, ${first.reportMiB} MiB of CSV in ${(first.reportMs / 1000).toFixed(1)} s (${Math.round(first.lines / (first.reportMs / 1000)).toLocaleString('en-US')} lines/s); Σ net = amount: ${first.sumOfNetEqualsAmount}; gateway peak ${first.afterReport.peakMiB} MiB, resident ${first.afterReport.rssMiB} MiB`);
  console.log(JSON.stringify({ items: ITEMS, idle, ...first }));
  if (LOOP_S > 0) {
    const until = Date.now() + LOOP_S * 1000;
    let rounds = 0;
    let payoutId = first.payoutId;
    while (Date.now() < until) {
      await undo(payoutId);
      const r = await runAndReport(LOOP_REPORT);
      payoutId = r.payoutId;
      rounds++;
      if (LOOP_REPORT) log(`loop ${rounds}: run ${(r.runMs / 1000).toFixed(2)} s, report ${(r.reportMs / 1000).toFixed(1)} s, Σ net = amount: ${r.sumOfNetEqualsAmount}, gateway peak ${r.afterReport.peakMiB} MiB`);
      else if (rounds % 20 === 0) log(`loop ${rounds}: runs of ${r.items.toLocaleString('en-US')} items, the last in ${(r.runMs / 1000).toFixed(2)} s`);
    }
  }
} finally {
  gateway.kill('SIGTERM');
  await once(gateway, 'exit');
  await db.end();
}
