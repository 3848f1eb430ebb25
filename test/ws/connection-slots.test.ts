// The per-user WebSocket limit's places in the database (src/ws/connection-slots.ts): what an
// instance does when its places' rows are gone (the lease ran out while the database was
// unreachable, or the UNLOGGED table was emptied by a crash of PostgreSQL). Two processes on one
// database: test/process/ws-connections.test.ts.
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { LEADERSHIP_APPLICATION_NAME } from '../../src/background/leadership.js';
import { describeOnServer } from '../helpers/db.js';
import { until } from '../helpers/expect.js';

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

test('an expired place (of an instance that stopped renewing) does not count and is removed by the maintenance pass', async () => {
  const user = await factories(app).user();
  const em = app.db.orm.em.fork();
  for (let i = 0; i < 2; i++) {
    await em.execute(`insert into ws_connections (id, user_id, instance_id, expires_at) values (?, ?, ?, now() - interval '1 second')`, [randomUUID(), user.userId, randomUUID()]);
  }
  const s = connect(user.token);
  await s.acked;
  expect((await app.gateway.maintenance.run()).wsConnections).toBe(2);
  expect(await rows(user.userId)).toEqual([app.gateway.ws.slots.instanceId]);
  s.socket.close(1000);
  await s.closed;
});

describeOnServer('a place given back while the app reconnects', 'it holds locks on other connections (the embedded database is one session)', () => {
  /** A transaction of the test that takes `lock` and holds it until `release()`. */
  function hold(lock: string, values: unknown[]) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const holding = new Promise<void>((r) => (locked = r));
    const done = app.db.orm.em.fork().transactional(async (tem) => {
      await tem.execute(lock, values);
      locked();
      await released;
    });
    return { holding, release: () => (release(), done) };
  }
  const activity = async (where: string): Promise<number> =>
    (await app.db.orm.em.fork().execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and ${where}`))[0]!.n;
  const advisoryLocks = async (): Promise<number> =>
    (await app.db.orm.em.fork().execute<Array<{ n: number }>>(
      // (Not the session lock that makes an instance the leader: src/background/leadership.ts.)
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())
          and pid not in (select pid from pg_stat_activity where application_name = '${LEADERSHIP_APPLICATION_NAME}')`,
    ))[0]!.n;

  test('a socket opened right after one of the user closed gets the place that close gives back, not 4429', async () => {
    const user = await factories(app).user();
    const sockets = [connect(user.token), connect(user.token)];
    await Promise.all(sockets.map((s) => s.acked));
    // 1. The user's rows held elsewhere: the closing socket's release (its delete) waits.
    const rowsHeld = hold('select id from ws_connections where user_id = ? for update', [user.userId]);
    await rowsHeld.holding;
    sockets[0]!.socket.close(1000);
    await sockets[0]!.closed;
    await until(async () => (await activity(`wait_event_type = 'Lock' and query like 'delete from ws_connections%'`)) === 1, 10_000, 'the release to wait');
    // 2. The new socket's claim is made to wait at the user's advisory lock, then let through:
    //    it counts two rows (one on its way out) while the release still waits.
    const turn = hold('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`ws_connections:${user.userId}`]);
    await turn.holding;
    const again = connect(user.token);
    await until(async () => (await activity(`wait_event_type = 'Lock' and query like 'select pg_advisory_xact_lock%'`)) === 1, 10_000, 'the claim to wait for its turn');
    await turn.release();
    await until(async () => (await advisoryLocks()) === 0, 10_000, 'the claim to have counted the places');
    // 3. The release completes: the waiting claim takes the place (it was refused 4429 before).
    await rowsHeld.release();
    await expect(again.acked).resolves.toBeUndefined();
    expect(await rows(user.userId)).toHaveLength(2);
    for (const s of [sockets[1]!, again]) s.socket.close(1000);
    await Promise.all([sockets[1]!.closed, again.closed]);
  });
});
