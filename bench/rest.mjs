// Load benchmark of the REST door: `npm run bench` (DATABASE_URL to use a PostgreSQL server —
// give it a database of its own, the bench migrates it and adds rows — else an in-memory
// embedded one). Starts one gateway in this process on a loopback port, sends
// a bounded number of requests from a fixed number of concurrent clients, and prints throughput,
// latency percentiles, ORM statements per request (the rate-limit counter's one upsert per request
// goes around the ORM and is not counted) and memory. It stops by itself.
import 'reflect-metadata';
import { loadConfig } from '../dist/src/config.js';
import { createLogger } from '../dist/src/logger.js';
import { openDatabase } from '../dist/src/db/database.js';
import { createGateway } from '../dist/src/server.js';
import { issueSecretKey } from '../dist/src/auth/secret-keys.js';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);

const config = loadConfig({
  ...process.env,
  LOG_LEVEL: 'silent',
  RATE_LIMIT_PER_SECOND: '1000000',
  LOOKUP_LIMIT_PER_MINUTE: '100000000',
});
const db = await openDatabase({ url: config.databaseUrl, dataDir: 'memory://', poolMax: config.dbPoolMax });
const gateway = await createGateway({ config, db, logger: createLogger('silent') });
const base = await gateway.listen(0, '127.0.0.1');
const s = gateway.services;
const em = () => db.orm.em.fork();
const dev = await s.developers.create(em(), 'Bench');
const { secretKey } = await issueSecretKey(em(), config, dev.id);
const user = await s.accounts.createUser(em(), { username: `bench_${Date.now()}`, phone: `09${Date.now().toString().slice(-8)}`, balance: 1_000_000 });
const headers = { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' };
const created = await (await fetch(`${base}/api/v1/wallet/request-payment`, {
  method: 'POST', headers,
  body: JSON.stringify({ walletId: user.walletId, amount: 1, description: 'bench', merchantName: 'Bench' }),
})).json();

let statements = 0;
db.orm.em.getKnex().on('query', () => statements++);

async function run(name, makeRequest) {
  const latencies = [];
  let next = 0;
  let failures = 0;
  statements = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (next < REQUESTS) {
      next++;
      const t = performance.now();
      const res = await makeRequest();
      await res.arrayBuffer();
      if (res.status !== 200) failures++;
      latencies.push(performance.now() - t);
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  console.log(
    `${name.padEnd(34)} ${String(Math.round(latencies.length / seconds)).padStart(6)} req/s  p50 ${pct(50)} ms  p99 ${pct(99)} ms  ` +
      `${(statements / latencies.length).toFixed(2)} ORM statements/request  failures ${failures}`,
  );
}

console.log(`database: ${config.databaseUrl ? 'PostgreSQL server' : 'embedded (PGlite, in memory)'}; ${CONNECTIONS} connections, ${REQUESTS} requests per scenario`);
await run('GET payment-request status', () => fetch(`${base}/api/v1/wallet/payment-request/${created.paymentRequestId}`, { headers }));
await run('POST request-payment', () =>
  fetch(`${base}/api/v1/wallet/request-payment`, {
    method: 'POST', headers,
    body: JSON.stringify({ walletId: user.walletId, amount: 1, description: 'bench', merchantName: 'Bench' }),
  }));
// The same read with the shared rate-limit counter bypassed, to show what the counter costs.
const limited = s.limits.request;
s.limits.request = async () => ({ limit: 0, remaining: 0, reset: 0 });
await run('GET status, rate-limit store bypassed', () => fetch(`${base}/api/v1/wallet/payment-request/${created.paymentRequestId}`, { headers }));
s.limits.request = limited;
await run('401 (bad key, no database)', () => fetch(`${base}/api/v1/wallet/payment-request/${created.paymentRequestId}`, { headers: { authorization: 'Bearer sk_test_x.y.z' } }));
const mem = process.memoryUsage();
console.log(`memory: rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB, heap used ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB`);
await gateway.dispose();
await db.close();
process.exit(0);
