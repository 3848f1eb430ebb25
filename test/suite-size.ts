import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Size and seed of a property suite (fuzz, model): CI (on PostgreSQL, TEST_DATABASE_URL) runs
 * `count`; `npm test` on the embedded database runs `embedded` (a newcomer's quick run: the same
 * properties over fewer cases, a different seed each run); `npm run test:fuzz -- --count N`,
 * `npm run test:model -- --runs N` and `--seed S` reach here through the environment (SUITE_COUNT,
 * SUITE_SEED) set by test/run-suite.mjs. The seed is printed so a failure replays.
 */
export function suiteSize(suite: string, defaults: { count: number; embedded: number }): { count: number; seed: number } {
  const onServer = Boolean(process.env.TEST_DATABASE_URL);
  const count = Number(process.env.SUITE_COUNT) || (onServer ? defaults.count : defaults.embedded);
  const seed = process.env.SUITE_SEED ? Number(process.env.SUITE_SEED) : Date.now() ^ (Math.random() * 0x100000000);
  const note = process.env.SUITE_COUNT || onServer || count === defaults.count ? '' : ` (${defaults.count} on a PostgreSQL server, as CI runs it)`;
  process.stderr.write(`[${suite}] seed ${seed}, ${count} cases${note}\n`);
  return { count, seed };
}

/** Figures of one run, written under PROOF_DIR (when set) for `npm run test:proof`'s table. */
export function recordSuite(suite: string, part: string, figures: { cases: number; failures: number; seed: number; counterexample?: string | undefined }): void {
  const dir = process.env.PROOF_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${suite}-${part}.json`), JSON.stringify({ suite, part, ...figures }));
}
