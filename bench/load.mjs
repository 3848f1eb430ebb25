// The bench's load generator, a process of its own: one autocannon run against a loopback URL
// for a bounded duration; prints its result as one JSON line. Arguments: a JSON object
// {url, method, connections, seconds, headers, body, idempotency}; with idempotency, every
// request carries an Idempotency-Key of its own.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

const opts = JSON.parse(process.argv[2]);
if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(opts.url)) throw new Error('the bench only loads 127.0.0.1');
const result = await autocannon({
  url: opts.url,
  method: opts.method,
  connections: opts.connections,
  duration: opts.seconds,
  headers: opts.headers,
  body: opts.body,
  timeout: 10,
  ...(opts.idempotency
    ? { requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': randomUUID() } }) }] }
    : {}),
});
process.stdout.write(
  `${JSON.stringify({
    ok: result['2xx'],
    failed: result.non2xx + result.errors + result.timeouts,
    seconds: result.duration,
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
  })}\n`,
);
