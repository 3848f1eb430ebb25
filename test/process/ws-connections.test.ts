import WebSocket from 'ws';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { seed, spawnGateway, type GatewayProcess } from './gateway-process.js';

// #18 finding 1 (SPEC §14): WS_MAX_CONNECTIONS_PER_USER holds per user across every process on
// the database. Two real gateway processes on one PostgreSQL database: a user's sockets are
// counted together, the one over the limit is closed with 4429 on either process, and a closed,
// cut or crashed (kill -9) socket gives its place back.
const MAX = 3;
const LEASE_SECONDS = 2;

describeOnServer('the per-user WebSocket limit across two gateway processes', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let token: string;
  const sockets: WebSocket[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
    const env = { WS_MAX_CONNECTIONS_PER_USER: String(MAX), WS_CONNECTION_LEASE_SECONDS: String(LEASE_SECONDS), SANDBOX_TEST_WALLETS: 'false' };
    [a, b] = await Promise.all([spawnGateway(database.url!, env), spawnGateway(database.url!, env)]);
    token = (await seed(database.db, { developers: 0, users: 1, balance: 0 })).users[0]!.token;
  });
  afterAll(async () => {
    for (const s of sockets) s.terminate();
    for (const p of [a, b]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all([a?.exited, b?.exited]);
    await database.close();
  });

  /** A graphql-transport-ws socket: resolves 'ack' once acknowledged, or the close code if it is closed first. */
  function connect(p: GatewayProcess): { socket: WebSocket; outcome: Promise<'ack' | number>; closed: Promise<number> } {
    const socket = new WebSocket(`${p.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    sockets.push(socket);
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    const outcome = new Promise<'ack' | number>((resolve) => {
      socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })));
      socket.on('message', (data) => {
        if ((JSON.parse(String(data)) as { type?: string }).type === 'connection_ack') resolve('ack');
      });
      void closed.then(resolve);
      socket.once('error', () => undefined);
    });
    return { socket, outcome: deadline(outcome, 10_000, 'connection_ack or close'), closed };
  }

  function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)))]).finally(() =>
      clearTimeout(timer),
    );
  }

  /** Places the database counts for the user (the state that decides the next connection). */
  async function places(): Promise<number> {
    const [row] = await database.db.orm.em.fork().execute<Array<{ n: number }>>('select count(*)::int as n from ws_connections where expires_at >= now()');
    return row!.n;
  }

  /** Waits (bounded) until the database counts `n` places for the user. */
  async function untilPlaces(n: number, ms = 15_000): Promise<void> {
    const end = Date.now() + ms;
    while ((await places()) !== n) {
      if (Date.now() > end) throw new Error(`the database still counts ${await places()} places, not ${n}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  test(`${MAX} sockets over two processes are the limit: the next is closed with 4429 on either process`, async () => {
    const held = [connect(a), connect(a), connect(b)];
    for (const c of held) expect(await c.outcome).toBe('ack');
    expect(await connect(a).outcome).toBe(4429);
    expect(await connect(b).outcome).toBe(4429);
    expect(await places()).toBe(MAX);

    // Closed cleanly on A: the place comes back, and B admits one socket more, then no more.
    held[0]!.socket.close(1000);
    await held[0]!.closed;
    await untilPlaces(MAX - 1);
    const onB = connect(b);
    expect(await onB.outcome).toBe('ack');
    expect(await connect(b).outcome).toBe(4429);

    // Cut without a close frame: the place comes back too.
    onB.socket.terminate();
    await untilPlaces(MAX - 1);
    expect(await connect(a).outcome).toBe('ack');
    expect(await places()).toBe(MAX);
    for (const s of sockets) s.close(1000);
    await untilPlaces(0);
  });

  test('sockets opened all at once on both processes: exactly the limit is admitted', async () => {
    await untilPlaces(0);
    const burst = Array.from({ length: 8 }, (_, i) => connect(i % 2 ? a : b));
    const outcomes = await Promise.all(burst.map((c) => c.outcome));
    expect(outcomes.filter((o) => o === 'ack')).toHaveLength(MAX);
    expect(outcomes.filter((o) => o !== 'ack')).toEqual(Array(8 - MAX).fill(4429));
    for (const c of burst) c.socket.close(1000);
    await untilPlaces(0);
  });

  test('a process killed with SIGKILL gives its places back once their leases run out', async () => {
    await untilPlaces(0);
    const onA = [connect(a), connect(a)];
    for (const c of onA) expect(await c.outcome).toBe('ack');
    const onB = connect(b);
    expect(await onB.outcome).toBe('ack');
    expect(await connect(b).outcome).toBe(4429);
    a.child.kill('SIGKILL');
    await a.exited;
    // A never released its two places: they stop counting when their leases expire (B's is renewed).
    await untilPlaces(1);
    const again = [connect(b), connect(b)];
    for (const c of again) expect(await c.outcome).toBe('ack');
    expect(await connect(b).outcome).toBe(4429);
  });
});
