import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { openDatabase, type Database } from '../../src/db/database.js';
import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { migratedSnapshot } from '../helpers/db.js';
import { withDeadline, poll } from '../helpers/expect.js';

// A PostgreSQL this test controls: PGlite (PostgreSQL compiled to WebAssembly) behind its
// wire-protocol server on a fixed loopback port. Stopping the server cuts every connection and
// refuses new ones, as a database outage does; starting it again on the same port brings it back.
let pglite: PGlite;
let server: PGLiteSocketServer;
let port: number;
let db: Database;
let app: TestApp;

async function startServer(): Promise<void> {
  server = new PGLiteSocketServer({ db: pglite, host: '127.0.0.1', port, maxConnections: 30 });
  await server.start();
  port = Number(server.getServerConn().split(':')[1]);
}

beforeAll(async () => {
  pglite = await PGlite.create({ dataDir: 'memory://', loadDataDir: await migratedSnapshot() });
  port = 0;
  await startServer();
  // One connection: PGlite is one session (see src/db/database.ts).
  db = await openDatabase({ url: `postgresql://postgres@127.0.0.1:${port}/postgres`, poolMax: 1 });
  app = await startTestApp({ database: { db, url: undefined, close: async () => undefined } });
});

afterAll(async () => {
  await app?.close();
  await db?.close();
  await server?.stop();
  await pglite?.close();
});

test('while PostgreSQL is down requests answer 503 quickly and the process stays up; it recovers by itself', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  expect((await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey })).status).toBe(200);

  await server.stop();

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

  await startServer();

  const ready = await poll('/readyz 200 after the database is back', async () => (await http(app.baseUrl, '/readyz')).status, (s) => s === 200, 10_000, 100);
  expect(ready).toBe(200);
  const after = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: dev.secretKey });
  expect(after.status).toBe(200);
  expect(after.body.id).toBe(id);
  expect(app.logs.some((l) => l.includes('"database unavailable"'))).toBe(true);
  expect(app.logs.every((l) => !l.includes('"level":50'))).toBe(true);
});
