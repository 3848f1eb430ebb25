// The per-user WebSocket limit's places in the database (src/ws/connection-slots.ts): what an
// instance does when its places' rows are gone (the lease ran out while the database was
// unreachable, or the UNLOGGED table was emptied by a crash of PostgreSQL). Two processes on one
// database: test/process/ws-connections.test.ts.
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { startTestApp, factories, type TestApp } from '../helpers/app.js';

let app: TestApp;
beforeAll(async () => {
  // Renewals only when the test calls them.
  app = await startTestApp({ env: { WS_MAX_CONNECTIONS_PER_USER: '2', WS_CONNECTION_LEASE_SECONDS: '3600' } });
});
afterAll(async () => {
  await app.close();
});

function connect(token: string) {
  const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  const acked = new Promise<void>((resolve, reject) => {
    socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
    socket.on('message', (d) => (JSON.parse(String(d)).type === 'connection_ack' ? resolve() : undefined));
    void closed.then((code) => reject(new Error(`closed with ${code} before connection_ack`)));
  });
  return { socket, acked, closed };
}

const rows = async (userId: string) =>
  (await app.db.orm.em.fork().execute<Array<{ instance: string }>>('select instance_id as instance from ws_connections where user_id = ? order by instance_id', [userId])).map(
    (r) => r.instance,
  );

test('an acknowledged socket holds one row; rows gone are claimed again at the next renewal', async () => {
  const user = await factories(app).user();
  const sockets = [connect(user.token), connect(user.token)];
  await Promise.all(sockets.map((s) => s.acked));
  const me = app.gateway.ws.slots.instanceId;
  expect(await rows(user.userId)).toEqual([me, me]);
  await app.db.orm.em.fork().execute('delete from ws_connections where user_id = ?', [user.userId]);
  await app.gateway.ws.slots.renew();
  expect(await rows(user.userId)).toEqual([me, me]);
  for (const s of sockets) expect(s.socket.readyState).toBe(WebSocket.OPEN);
  for (const s of sockets) s.socket.close(1000);
  await Promise.all(sockets.map((s) => s.closed));
});

test('a socket whose place another instance took meanwhile is closed with 4429 at the renewal', async () => {
  const user = await factories(app).user();
  const sockets = [connect(user.token), connect(user.token)];
  await Promise.all(sockets.map((s) => s.acked));
  const other = randomUUID();
  const em = app.db.orm.em.fork();
  await em.execute('delete from ws_connections where user_id = ?', [user.userId]);
  await em.execute(`insert into ws_connections (id, user_id, instance_id, expires_at) values (?, ?, ?, now() + interval '1 hour')`, [randomUUID(), user.userId, other]);
  await app.gateway.ws.slots.renew();
  // One of the two got its place back, the other is over the limit now.
  const codes = await Promise.race([Promise.any(sockets.map((s) => s.closed)), new Promise<'none'>((r) => setTimeout(() => r('none'), 5000))]);
  expect(codes).toBe(4429);
  expect((await rows(user.userId)).sort()).toEqual([other, app.gateway.ws.slots.instanceId].sort());
  for (const s of sockets) s.socket.close(1000);
});

test('an expired place (of an instance that stopped renewing) does not count and is removed at a renewal', async () => {
  const user = await factories(app).user();
  const em = app.db.orm.em.fork();
  for (let i = 0; i < 2; i++) {
    await em.execute(`insert into ws_connections (id, user_id, instance_id, expires_at) values (?, ?, ?, now() - interval '1 second')`, [randomUUID(), user.userId, randomUUID()]);
  }
  const s = connect(user.token);
  await s.acked;
  await app.gateway.ws.slots.renew();
  expect(await rows(user.userId)).toEqual([app.gateway.ws.slots.instanceId]);
  s.socket.close(1000);
  await s.closed;
});
