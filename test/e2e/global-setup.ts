import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Browser tests' globalSetup: what `npm run build` does — dist/ from the sources, then the
 * pages' bundles in dist/web (src/sandbox/build-web.mjs) that the gateway serves.
 */
export default function globalSetup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  for (const args of [[tsc, '-p', 'tsconfig.build.json'], ['src/sandbox/build-web.mjs']]) {
    const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
    if (result.error) throw result.error;
    if (result.status !== 0) throw new Error(`[e2e global-setup] ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
    process.stderr.write(result.stdout);
  }
}
