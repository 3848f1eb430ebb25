import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Size and seed of a property suite (fuzz, model): CI runs the defaults; `npm run test:fuzz --
 * --count N`, `npm run test:model -- --runs N` and `--seed S` reach here through the environment
 * (SUITE_COUNT, SUITE_SEED) set by test/run-suite.mjs. The seed is printed so a failure replays.
 */
export function suiteSize(suite: string, defaults: { count: number }): { count: number; seed: number } {
  const count = Number(process.env.SUITE_COUNT) || defaults.count;
  const seed = process.env.SUITE_SEED ? Number(process.env.SUITE_SEED) : Date.now() ^ (Math.random() * 0x100000000);
  process.stderr.write(`[${suite}] seed ${seed}, ${count} cases\n`);
  return { count, seed };
}

/** Figures of one run, written under PROOF_DIR (when set) for `npm run test:proof`'s table. */
export function recordSuite(suite: string, part: string, figures: { cases: number; failures: number; seed: number; counterexample?: string | undefined }): void {
  const dir = process.env.PROOF_DIR;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${suite}-${part}.json`), JSON.stringify({ suite, part, ...figures }));
}
