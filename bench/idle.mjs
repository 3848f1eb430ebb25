// The idle gateway's database work (#32): `npm start`'s process (dist/src/main.js) with
// WEB_CONCURRENCY=N on a fresh database, development settings (the test wallets subscribe and
// answer, as after `npm start`), no requests; transactions per second counted from
// pg_stat_database (xact_commit + xact_rollback of its database) over IDLE_SECONDS after a settle.
//
// Run from the project root after `npm run build`:  node bench/idle.mjs
// Env: IDLE_WORKERS=1,4  IDLE_SECONDS=60  IDLE_SETTLE=15  IDLE_PG_URL=postgres://postgres@127.0.0.1:5432
//      IDLE_ROOT=<another checkout to measure, e.g. the code before #32> (its dist/ and node_modules)
import { spawn, execFileSync } from 'node:child_process';
import path from 'node:path';

const E = process.env;
const WORKERS = (E.IDLE_WORKERS ?? '1,4').split(',').map(Number);
const SECONDS = Number(E.IDLE_SECONDS ?? 60);
const SETTLE = Number(E.IDLE_SETTLE ?? 15);
const ROOT = path.resolve(E.IDLE_ROOT ?? '.');
const PG = (E.IDLE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');
const u = new URL(PG);
const psql = (sql, db = 'postgres') =>
  execFileSync('psql', ['-h', u.hostname, '-p', u.port || '5432', '-U', u.username || 'postgres', '-d', db, '-qAtX', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function measure(workers) {
  const db = `idle_${Date.now().toString(36)}_${workers}`;
  psql(`create database ${db}`);
  const port = 32000 + Math.floor(Math.random() * 10000);
  const child = spawn(path.join(ROOT, 'node_modules/.bin/node'), ['dist/src/main.js'], {
    cwd: ROOT,
    env: { ...E, DATABASE_URL: `${PG}/${db}`, WEB_CONCURRENCY: String(workers), PORT: String(port), LOG_LEVEL: 'warn', APP_ENV: 'development' },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  });
  try {
    for (let i = 0; i < 240; i++) {
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break; } catch { /* not yet */ }
      await sleep(250);
    }
    await sleep(SETTLE * 1000);
    const count = () => Number(psql(`select xact_commit + xact_rollback from pg_stat_database where datname = '${db}'`).trim());
    const a = count();
    await sleep(SECONDS * 1000);
    await sleep(1200); // statistics flush
    const b = count();
    return (b - a) / SECONDS;
  } finally {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    for (let i = 0; i < 100 && child.exitCode === null; i++) await sleep(100);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    psql(`drop database if exists ${db} with (force)`);
  }
}

const results = [];
for (const w of WORKERS) {
  const tps = await measure(w);
  results.push([w, tps]);
  process.stderr.write(`[idle] ${ROOT}: WEB_CONCURRENCY=${w}: ${tps.toFixed(2)} transactions/s over ${SECONDS} s\n`);
}
process.stdout.write(`| processes | idle transactions per second |\n|---|---|\n${results.map(([w, t]) => `| ${w} | ${t.toFixed(2)} |`).join('\n')}\n`);
