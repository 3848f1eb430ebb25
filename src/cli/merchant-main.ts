import { assertSupportedNode } from '../runtime.js';
import { isMerchantCommand, runMerchantCli } from './merchant.js';

assertSupportedNode();

// `wallet-gateway listen|trigger|balance|payouts|payout:report` (bin/wallet-gateway.js sends these
// here): HTTP requests to a running gateway through the typed client, so this entry loads the
// client, the webhook signing and Node's own modules, not the gateway (no ORM, no schema, no
// database): it answers in about the time its requests take. The other commands go through main.ts.
const [command, ...args] = process.argv.slice(2);
if (!isMerchantCommand(command)) throw new Error(`merchant-main runs the developer commands, not ${command}`);
const stop = new AbortController();
if (command === 'listen') for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());
const code = await runMerchantCli(command, args, {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  signal: stop.signal,
});
process.exit(code);
