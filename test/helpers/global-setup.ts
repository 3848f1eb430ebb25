import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Jest globalSetup: compiles the sources into dist/ once before the suite, so the tests that
 * spawn the CLI (`bin/wallet-gateway.js`) or `dist/src/main.js` never run a stale build.
 * Type errors are reported (tsc still emits; `npm run typecheck` is the gate for them); a build
 * that produces no entry points fails the run.
 */
export default function globalSetup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const started = Date.now();
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    process.stderr.write(`\n[global-setup] tsc -p tsconfig.build.json reported errors (dist was still emitted):\n${result.stdout}${result.stderr}\n`);
  }
  for (const entry of ['dist/src/main.js', 'dist/src/cli/main.js']) {
    if (!existsSync(path.join(root, entry))) throw new Error(`[global-setup] the build did not produce ${entry}`);
  }
  process.stderr.write(`[global-setup] built dist/ in ${Date.now() - started} ms\n`);
}
