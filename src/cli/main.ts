import { runCli } from './cli.js';
import { assertSupportedNode } from '../runtime.js';

assertSupportedNode();

// The `wallet-gateway` command (bin/wallet-gateway.js): the process's own environment and
// streams; exit as soon as the command is done (nothing else keeps it alive).
// A long-running command (`listen`) stops cleanly on SIGINT/SIGTERM; the others end on their own.
const stop = new AbortController();
if (process.argv[2] === 'listen') for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  signal: stop.signal,
});
process.exit(code);
