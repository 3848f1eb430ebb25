import { spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { startDatabaseProcess } from './database-process.js';

// Jest loads this file outside the test module system (no moduleNameMapper), so it imports only
// Node built-ins, packages and plain JavaScript (./database-process.js), and runs the gateway's
// code from dist/ (built here when it needs it).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The variable through which the test files find the migrated template (see ./db.ts). */
const TEMPLATE_VAR = 'WG_TEST_EMBEDDED_TEMPLATE';

/** The variable through which each worker finds its database process (see ./environment.js). */
const CONTROL_VAR = 'WG_TEST_PGLITE_CONTROL';

/** This run's id, through which the files that need dist/ build it once (see ./build.ts). */
const RUN_VAR = 'WG_TEST_RUN';

/**
 * Jest globalSetup:
 * 1. compiles the merchant's client (clients/typescript/dist): the tests import it by its
 *    package name, as a merchant does, and the CLI's listen/trigger run on it. dist/ (what the
 *    tests that spawn `bin/wallet-gateway.js` or `dist/src/main.js` run) is built by those files
 *    when they start (./build.ts), and here only when the migrated template below must be made;
 * 2. provides a migrated embedded database once per run (cached between runs while the
 *    migrations do not change), so each test file (and each process test's DATA_DIR) starts
 *    from a copy instead of initialising PostgreSQL and migrating it again (~20 s a file);
 * 3. without TEST_DATABASE_URL, starts one database process per Jest worker slot
 *    (./pglite-server.js, which loads the template on its first use), stopped by
 *    ./global-teardown.js or when this process ends.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  const run = `${process.pid}-${Date.now()}`;
  process.env[RUN_VAR] = run;
  await forgetOldBuilds();
  compile('clients/typescript/tsconfig.json', ['clients/typescript/dist/index.js']);
  const template = await embeddedTemplate(run);
  process.env[TEMPLATE_VAR] = template;
  if (!process.env.TEST_DATABASE_URL) {
    const servers = await Promise.all(Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, () => startDatabaseProcess(template)));
    (globalThis as { __walletGatewayDatabases?: ChildProcess[] }).__walletGatewayDatabases = servers.map((s) => s.child);
    process.env[CONTROL_VAR] = servers.map((s) => s.port).join(',');
  }
}

/** `tsc -p project` (incremental); type errors are reported, tsc still emits (`npm run typecheck` is their gate). */
function compile(project: string, entries: string[]): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const started = Date.now();
  const result = spawnSync(process.execPath, [tsc, '-p', project], { cwd: ROOT, encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    process.stderr.write(`\n[global-setup] tsc -p ${project} reported errors (it still emitted):\n${result.stdout}${result.stderr}\n`);
  }
  for (const entry of entries) {
    if (!existsSync(path.join(ROOT, entry))) throw new Error(`[global-setup] the build did not produce ${entry}`);
  }
  process.stderr.write(`[global-setup] tsc -p ${project} in ${Date.now() - started} ms\n`);
}

/** Removes the marks of earlier runs' dist/ builds (./build.ts writes one per run). */
async function forgetOldBuilds(): Promise<void> {
  const cache = path.join(ROOT, 'node_modules', '.cache', 'wallet-gateway-tests');
  if (!existsSync(cache)) return;
  for (const f of await readdir(cache)) if (f.startsWith('dist-built-')) await rm(path.join(cache, f), { force: true });
}

/**
 * A directory holding `pg/` (a migrated PGlite data directory, for tests that give a process a
 * DATA_DIR) and `pg.tar` (the same as a `dumpDataDir` tarball, for in-process databases).
 * Created by the CLI's own `migrate` on an empty DATA_DIR, the way a first `npm start` does, and
 * kept under node_modules/.cache keyed by the migrations and the PGlite version.
 */
async function embeddedTemplate(run: string): Promise<string> {
  const cacheRoot = path.join(ROOT, 'node_modules', '.cache', 'wallet-gateway-tests');
  const dir = path.join(cacheRoot, `embedded-${templateKey()}`);
  if (existsSync(path.join(dir, 'pg.tar'))) {
    process.stderr.write(`[global-setup] migrated embedded database: reusing ${path.relative(ROOT, dir)}\n`);
    return dir;
  }
  // The CLI's `migrate` runs from dist/: built here, and marked built for this run (./build.ts).
  compile('tsconfig.build.json', ['dist/src/main.js', 'dist/src/cli/main.js']);
  const started = Date.now();
  await mkdir(cacheRoot, { recursive: true });
  await writeFile(path.join(cacheRoot, `dist-built-${run}`), '');
  const work = await mkdtemp(path.join(cacheRoot, 'tmp-'));
  try {
    const migrate = spawnSync(process.execPath, ['dist/src/cli/main.js', 'migrate'], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, APP_ENV: 'development', LOG_LEVEL: 'silent', DATA_DIR: work },
    });
    if (migrate.error) throw migrate.error;
    if (migrate.status !== 0) throw new Error(`[global-setup] migrate on an empty DATA_DIR failed (${migrate.status}):\n${migrate.stdout}${migrate.stderr}`);
    const pg = await PGlite.create(path.join(work, 'pg'));
    try {
      const dump = await pg.dumpDataDir('none');
      await writeFile(path.join(work, 'pg.tar'), Buffer.from(await dump.arrayBuffer()));
    } finally {
      await pg.close();
    }
    // Keep only the template of the current migrations; a concurrent run may have won the race.
    for (const old of await readdir(cacheRoot)) {
      if (old.startsWith('embedded-') && old !== path.basename(dir)) await rm(path.join(cacheRoot, old), { recursive: true, force: true });
    }
    await rename(work, dir).catch(async (err: NodeJS.ErrnoException) => {
      if (!existsSync(path.join(dir, 'pg.tar'))) throw err;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  process.stderr.write(`[global-setup] migrated embedded database: created ${path.relative(ROOT, dir)} in ${Date.now() - started} ms\n`);
  return dir;
}

/** Changes whenever a migration, the ORM settings or PGlite change. */
function templateKey(): string {
  const hash = createHash('sha256');
  const pglite = JSON.parse(readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string };
  hash.update(`pglite ${pglite.version}\n`);
  const files = ['mikro-orm.config.ts', ...readdirSync(path.join(ROOT, 'src/db/migrations')).sort().map((f) => `src/db/migrations/${f}`)];
  for (const file of files) hash.update(`${file}\n`).update(readFileSync(path.join(ROOT, file)));
  return hash.digest('hex').slice(0, 16);
}
