import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/ (what `npm start` and `bin/wallet-gateway.js` run) is built only for the files that start
// such a process, once per run: the first of them compiles it (`tsc`, incremental), under a lock
// so that two workers never compile at once, and the others find it done. A run of files that
// start no process compiles nothing (test/helpers/global-setup.ts builds only the merchant's client).

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CACHE = path.join(ROOT, 'node_modules', '.cache', 'wallet-gateway-tests');
/** Set by test/helpers/global-setup.ts: this run's id. */
const RUN = process.env.WG_TEST_RUN ?? `${process.pid}`;

let built: Promise<void> | undefined;

/** Builds dist/ unless this run already has (call it before spawning `dist/src/main.js` or the CLI). */
export function buildDist(): Promise<void> {
  built ??= buildOnce().catch((err: unknown) => {
    built = undefined;
    throw err;
  });
  return built;
}

async function buildOnce(): Promise<void> {
  const done = path.join(CACHE, `dist-built-${RUN}`);
  if (existsSync(done)) return;
  await mkdir(CACHE, { recursive: true });
  const lock = path.join(CACHE, 'dist-build.lock');
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Taken: by a live process (wait for it), or left by one that died (take it over).
      const owner = Number(await readFile(path.join(lock, 'pid'), 'utf8').catch(() => '0'));
      if (owner > 0 && !alive(owner)) await rm(lock, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    await writeFile(path.join(lock, 'pid'), String(process.pid));
    if (existsSync(done)) return;
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const result = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (out += c.toString('utf8')));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, out }));
    });
    // Type errors are reported and tsc still emits; `npm run typecheck` is their gate.
    if (result.code !== 0) process.stderr.write(`\n[build] tsc -p tsconfig.build.json reported errors (it still emitted):\n${result.out}\n`);
    for (const entry of ['dist/src/main.js', 'dist/src/cli/main.js']) {
      if (!existsSync(path.join(ROOT, entry))) throw new Error(`[build] the build did not produce ${entry}`);
    }
    await writeFile(done, '');
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
