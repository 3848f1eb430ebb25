#!/usr/bin/env node
// Runs the property and fault suites at a chosen size (see docs/testing.md, "Robustness and the proof suites"):
//   npm run test:fuzz   -- [--count N] [--seed S]   test/fuzz       (N cases per door)
//   npm run test:model  -- [--runs N]  [--seed S]   test/model      (N command sequences)
//   npm run test:faults                              test/process    (the real process: SIGTERM, kill -9, outage, locks)
//   npm run test:proof  -- [--count N] [--runs N]    all three at full size, then a table of cases, failures and seeds
// TEST_DATABASE_URL must point at a PostgreSQL server that answers (each test file creates its own
// database); without one, or with a test skipped, the run fails.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [suite = 'proof', ...rest] = process.argv.slice(2);
const opt = (name) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 ? rest[i + 1] : undefined;
};
const FULL = { fuzz: 5000, model: 200 };
const SUITES = {
  fuzz: { dir: 'test/fuzz', count: opt('count') },
  model: { dir: 'test/model', count: opt('runs') },
  faults: { dir: 'test/process', count: undefined },
};
const chosen = suite === 'proof' ? ['fuzz', 'model', 'faults'] : [suite];
if (!chosen.every((s) => SUITES[s])) {
  process.stderr.write(`unknown suite ${suite}: fuzz, model, faults or proof\n`);
  process.exit(2);
}
// The suites prove what they are named after only on a PostgreSQL server: on the embedded
// database the races and the process-level faults are skipped. So no server is an error here.
const databaseUrl = process.env.TEST_DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('TEST_DATABASE_URL must point at a PostgreSQL server (e.g. postgresql://postgres@127.0.0.1:5432/test): the proof suites do not run on the embedded database\n');
  process.exit(2);
}
const probe = spawnSync(
  path.join(root, 'node_modules', '.bin', 'node'),
  [
    '-e',
    `const pg = require('pg'); const c = new pg.Client({ connectionString: process.argv[1], connectionTimeoutMillis: 5000 });
     c.connect().then(() => c.query('select 1')).then(() => c.end()).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); });`,
    databaseUrl,
  ],
  { cwd: root, encoding: 'utf8' },
);
if (probe.status !== 0) {
  process.stderr.write(`no PostgreSQL server answers at TEST_DATABASE_URL=${databaseUrl}: ${(probe.stderr || probe.error?.message || '').trim()}\n`);
  process.exit(2);
}

const proofDir = path.join(root, '.proof', new Date().toISOString().replace(/[:.]/g, '-'));
mkdirSync(proofDir, { recursive: true });
const jest = path.join(root, 'node_modules', 'jest', 'bin', 'jest.js');
let failed = false;
const jestResults = {};
for (const name of chosen) {
  const s = SUITES[name];
  const count = s.count ?? (suite === 'proof' ? FULL[name] : undefined);
  const env = { ...process.env, NODE_OPTIONS: '--experimental-vm-modules', PROOF_DIR: proofDir };
  if (count) env.SUITE_COUNT = String(count);
  if (opt('seed')) env.SUITE_SEED = opt('seed');
  const out = path.join(proofDir, `jest-${name}.json`);
  const r = spawnSync(process.execPath, [jest, '--runInBand', '--testTimeout=3600000', '--json', `--outputFile=${out}`, s.dir], { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) failed = true;
  try {
    jestResults[name] = JSON.parse(readFileSync(out, 'utf8'));
  } catch {
    jestResults[name] = undefined;
    failed = true;
  }
  // A skipped test proved nothing: in a proof run it is a failure, named.
  const skipped = (jestResults[name]?.testResults ?? []).flatMap((t) => t.assertionResults.filter((a) => a.status === 'pending' || a.status === 'todo').map((a) => a.fullName));
  if (skipped.length > 0) {
    failed = true;
    process.stderr.write(`\n${name}: ${skipped.length} test(s) skipped, which a proof run does not allow:\n${skipped.map((t) => `  ${t}`).join('\n')}\n`);
  }
  if ((jestResults[name]?.numTotalTests ?? 0) === 0) {
    failed = true;
    process.stderr.write(`\n${name}: no test ran\n`);
  }
}

// The table: one row per property (cases and seed from the suite) or per fault test (pass/fail).
const rows = [];
for (const file of readdirSync(proofDir).filter((f) => !f.startsWith('jest-') && f.endsWith('.json'))) {
  const r = JSON.parse(readFileSync(path.join(proofDir, file), 'utf8'));
  rows.push([`${r.suite} ${r.part}`, String(r.cases), String(r.failures), String(r.seed)]);
}
const faults = jestResults.faults;
for (const t of faults?.testResults ?? []) {
  for (const a of t.assertionResults) rows.push([`faults ${path.basename(t.name, '.test.ts')}: ${a.title}`.slice(0, 90), '1', a.status === 'passed' ? '0' : '1', '-']);
}
const head = ['suite', 'cases', 'failures', 'seed'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
process.stdout.write(`\n${line(head)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${rows.map(line).join('\n')}\n\nfigures in ${path.relative(root, proofDir)}\n`);
process.exit(failed ? 1 : 0);
