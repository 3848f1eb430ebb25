#!/usr/bin/env node
// The wallet-gateway CLI. Runs the compiled sources (npm install builds them through `prepare`).
// The developer's commands (`listen`, `trigger`, `balance`, `payouts`, `payout:report`) only send
// HTTP requests to a running gateway: they load a small module (the typed client and Node's own
// modules), not the gateway's; every other command runs main.js.
import { existsSync } from 'node:fs';

const light = ['listen', 'trigger', 'balance', 'payouts', 'payout:report'].includes(process.argv[2]);
const entry = new URL(light ? '../dist/src/cli/merchant-main.js' : '../dist/src/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('wallet-gateway: not built yet; run `npm run build` first\n');
  process.exit(1);
}
await import(entry.href);
