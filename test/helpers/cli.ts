import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli as runCliCommand } from '../../src/cli/cli.js';
import { testConfig } from './app.js';
import { buildDist } from './build.js';
import type { TestDatabase } from './db.js';

/** The repository root (the CLI runs from there, like `npx wallet-gateway`). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The environment a CLI run gets: nothing from the test runner (no NODE_OPTIONS, no
 * TEST_DATABASE_URL), development, and the test secrets, so its keys and tokens are valid on a
 * gateway started by `startTestApp`. `db` is `{ DATABASE_URL }` or `{ DATA_DIR }`.
 */
export function cliEnv(db: Record<string, string>): NodeJS.ProcessEnv {
  const c = testConfig();
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    APP_ENV: 'development',
    KEY_SIGNING_SECRET: c.keySigningSecret,
    USER_TOKEN_SECRET: c.userTokenSecret,
    ADMIN_TOKEN: c.adminToken,
    CONSENT_SIGNING_KEY: c.consentSigningKey,
    PIN_PEPPER: c.pinPepper,
    USER_RATE_LIMIT_PER_SECOND: String(c.userRateLimitPerSecond),
    PAY_PAGE_LIMIT_PER_MINUTE: String(c.payPageLimitPerMinute),
    ...db,
  };
}

/**
 * What the CLI needs to reach a test database: its URL, on a server or on the embedded one
 * (whose socket the gateway under test serves in this process).
 */
export function cliDatabaseEnv(database: TestDatabase): NodeJS.ProcessEnv {
  return cliEnv({ DATABASE_URL: database.url ?? database.db.url });
}

/**
 * Runs a CLI command in this process (the same `runCli` that `bin/wallet-gateway.js` runs, with
 * this environment and captured output): the command's behaviour without the cost of a Node
 * process per call. `spawnCli` runs the real executable.
 */
export async function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCliCommand(args, {
    env,
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, signal: null, stdout, stderr };
}

/** Runs `node bin/wallet-gateway.js ...args` (dist/, built first if this run has not) and collects its exit and output. */
export async function spawnCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliResult> {
  await buildDist();
  return new Promise((resolve) => {
    execFile(process.execPath, ['bin/wallet-gateway.js', ...args], { cwd: ROOT, env, timeout: timeoutMs }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: unknown; signal?: NodeJS.Signals | null }) | null;
      resolve({
        code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
        signal: e?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}
