import net from 'node:net';
import { openDatabase, type Database } from '../../src/db/database.js';
import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { createTestDatabase, ON_SERVER, type TestDatabase } from '../helpers/db.js';
import { withDeadline, poll } from '../helpers/expect.js';

// The gateway reaches the file's database (the server's under TEST_DATABASE_URL, else the
// worker's embedded one) through a TCP relay on a fixed loopback port that this test controls.
// Stopping the relay cuts every connection and refuses new ones, as a database outage does;
// starting it again on the same port brings the database back.
let database: TestDatabase;
let relay: net.Server | undefined;
const sockets = new Set<net.Socket>();
let port = 0;
let db: Database;
let app: TestApp;

async function startRelay(): Promise<void> {
  const target = new URL(database.url ?? database.db.url);
  relay = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve, reject) => {
    relay!.once('error', reject);
    relay!.listen(port, '127.0.0.1', () => resolve());
  });
  port = (relay.address() as net.AddressInfo).port;
}

async function stopRelay(): Promise<void> {
  const r = relay;
  if (!r) return;
  relay = undefined;
  const closed = new Promise((resolve) => r.close(resolve));
  for (const s of sockets) s.destroy();
  await closed;
}

beforeAll(async () => {
  database = await createTestDatabase();
  await startRelay();
  const url = new URL(database.url ?? database.db.url);
  url.host = `127.0.0.1:${port}`;
  // One connection on the embedded database: PGlite is one session (see src/db/database.ts).
  db = await openDatabase({ url: url.toString(), poolMax: ON_SERVER ? 10 : 1 });
  app = await startTestApp({ database: { db, url: undefined, close: async () => undefined } });
});

afterAll(async () => {
  await app?.close();
  await db?.close();
  await stopRelay();
  await database?.close();
});

test('while PostgreSQL is down requests answer 503 quickly and the process stays up; it recovers by itself', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  expect((await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey })).status).toBe(200);

  await stopRelay();

  // The request gives up on the database after the connection timeout (~2.5 s) instead of
  // hanging: a client with a 10 s deadline gets the 503.
  const down = await withDeadline(http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey }), 10_000, 'a read while the database is down');
  expect(down.status).toBe(503);
  expect(down.body).toEqual({ statusCode: 503, message: 'Service temporarily unavailable' });
  const create = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: dev.secretKey,
    body: { walletId: user.walletId, amount: 1, description: 'During outage', merchantName: 'Shop' },
  });
  expect(create.status).toBe(503);
  expect((await http(app.baseUrl, '/readyz')).status).toBe(503);
  expect((await http(app.baseUrl, '/healthz')).status).toBe(200);
  const graphql = await http(app.baseUrl, '/graphql', { token: user.token, body: { query: '{ myPendingPaymentRequests { id } }' } });
  expect(graphql.body.errors[0].extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', statusCode: 503 });

  await startRelay();

  const ready = await poll('/readyz 200 after the database is back', async () => (await http(app.baseUrl, '/readyz')).status, (s) => s === 200, 10_000, 100);
  expect(ready).toBe(200);
  const after = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey });
  expect(after.status).toBe(200);
  expect(after.body.id).toBe(id);
  expect(app.logs.some((l) => l.includes('"database unavailable"'))).toBe(true);
  expect(app.logs.every((l) => !l.includes('"level":50'))).toBe(true);
});
