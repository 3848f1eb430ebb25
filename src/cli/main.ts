import { runCli } from './cli.js';
import { assertSupportedNode } from '../runtime.js';

assertSupportedNode();

// The `wallet-gateway` command (bin/wallet-gateway.js): the process's own environment and
// streams; exit as soon as the command is done (nothing else keeps it alive).
const code = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
process.exit(code);
