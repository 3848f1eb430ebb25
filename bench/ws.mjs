// The bench's WebSocket client, a process of its own. Phase 1: opens N idle graphql-ws
// subscribers (each its own user, `paymentRequested`), says "subscribed" on stdout and waits for
// a line on stdin. Phase 2: one subscriber of the bench wallet's owner; creates payment requests
// through REST one after another and measures, for each, the time from the REST response
// (the commit is before it) to the subscriber's message (0 when the message came first).
// Prints {"p50","p99","delivered","sent"} and closes everything. Arguments: one JSON object.
import { createInterface } from 'node:readline';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { loadConfig } from '../dist/src/config.js';
import { mintUserToken } from '../dist/src/auth/user-tokens.js';
import { randomUUID } from 'node:crypto';

const opts = JSON.parse(process.argv[2]);
const config = loadConfig({ APP_ENV: 'development', USER_TOKEN_SECRET: process.env.USER_TOKEN_SECRET });
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

function subscriber(userId, onMessage) {
  return new Promise((resolve, reject) => {
    mintUserToken(config, userId, 3600).then((token) => {
      const client = createClient({
        url: opts.wsUrl,
        webSocketImpl: WebSocket,
        lazy: false,
        retryAttempts: 0,
        connectionParams: { authorization: `Bearer ${token}` },
        on: { error: reject },
      });
      client.subscribe({ query: 'subscription { paymentRequested { id } }' }, {
        next: (msg) => onMessage?.(msg),
        error: reject,
        complete: () => undefined,
      });
      // graphql-ws sends "subscribe" right after the ack; a ping round trip after it proves the server has it.
      client.on('connected', (socket) => {
        socket.once('pong', () => resolve(client));
        setTimeout(() => socket.ping(), 0);
      });
    }, reject);
  });
}

const idle = [];
for (let i = 0; i < opts.subscribers; i += 200) {
  const batch = Array.from({ length: Math.min(200, opts.subscribers - i) }, () => subscriber(randomUUID()));
  idle.push(...(await Promise.all(batch)));
}
process.stdout.write('subscribed\n');
await nextLine();

const waiting = new Map();
const lat = [];
const client = await subscriber(opts.userId, (msg) => {
  const id = msg.data?.paymentRequested?.id;
  const at = performance.now();
  const w = waiting.get(id);
  if (w?.respondedAt !== undefined) lat.push(at - w.respondedAt);
  else waiting.set(id, { receivedAt: at });
});
for (let i = 0; i < opts.events; i++) {
  const res = await fetch(`${opts.baseUrl}/api/v1/wallet/request-payment`, {
    method: 'POST',
    headers: { authorization: `Bearer ${opts.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ walletId: opts.walletId, amount: 1, description: 'bench ws', merchantName: 'Bench' }),
  });
  const body = await res.json();
  const at = performance.now();
  const w = waiting.get(body.paymentRequestId);
  if (w?.receivedAt !== undefined) lat.push(0);
  else waiting.set(body.paymentRequestId, { respondedAt: at });
  await new Promise((r) => setTimeout(r, 20));
}
// Late messages: wait until all arrived or 2 s passed.
const deadline = performance.now() + 2000;
while (lat.length < opts.events && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] : NaN);
process.stdout.write(`${JSON.stringify({ p50: pct(50), p99: pct(99), delivered: lat.length, sent: opts.events })}\n`);
// The sockets end with this process (closing 10,000 of them one by one only takes longer).
void client;
void idle;
process.exit(0);
