#!/usr/bin/env node
// The wallet-gateway CLI. Runs the compiled sources (npm install builds them through `prepare`).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('wallet-gateway: not built yet; run `npm run build` first\n');
  process.exit(1);
}
await import(entry.href);
