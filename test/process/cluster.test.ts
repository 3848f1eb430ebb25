import http from 'node:http';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { subscribe } from '../helpers/ws.js';
import { seed, spawnGateway } from './gateway-process.js';
import { poll } from '../helpers/expect.js';

// #10: `npm start` with WEB_CONCURRENCY=2 runs two workers on one port (node:cluster). Workers are
// told apart by X-Worker (development only). A subscriber on one worker receives the event of a
// create made through the other; SIGTERM to the primary drains both and exits 0.
describeOnServer('the real process with two workers', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  interface Reply {
    status: number;
    worker: string | undefined;
    text: string;
  }

  /** One request on `agent` (keep-alive, one socket: the same worker every time). */
  function request(agent: http.Agent, url: string, opts: { method?: string; token?: string; body?: unknown } = {}): Promise<Reply> {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: opts.method ?? 'GET',
          agent,
          headers: {
            ...(payload ? { 'content-type': 'application/json' } : {}),
            ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, worker: res.headers['x-worker'] as string | undefined, text }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Polls `probe` until it yields a value (bounded). */
  async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
    return (await poll(what, probe, (value) => value !== undefined, 30_000, 25)) as T;
  }

  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  test('two workers: an event caused through one worker reaches a subscriber on the other; SIGTERM drains both, exit 0', async () => {
    const { developers, users } = await seed(database.db, { developers: 1, users: 1, balance: 1000 });
    const dev = developers[0]!;
    const user = users[0]!;
    const gateway = await spawnGateway(database.url!, { WEB_CONCURRENCY: '2', LOG_LEVEL: 'info' });
    const agents: http.Agent[] = [];
    try {
      await until('both workers listening', () => (gateway.lines.filter((l) => l.includes('"wallet gateway listening"')).length >= 2 ? true : undefined));
      // A connection to each worker: new connections until two different workers have answered.
      const byWorker = new Map<string, http.Agent>();
      for (let i = 0; i < 50 && byWorker.size < 2; i++) {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        agents.push(agent);
        const reply = await request(agent, `${gateway.baseUrl}/healthz`);
        expect(reply.status).toBe(200);
        expect(reply.worker).toMatch(/^\d+$/);
        if (!byWorker.has(reply.worker!)) byWorker.set(reply.worker!, agent);
      }
      expect(byWorker.size).toBe(2);

      let subscriberWorker: string | undefined;
      class TaggedWebSocket extends WebSocket {
        constructor(address: string, protocols?: string | string[]) {
          super(address, protocols);
          this.once('upgrade', (res: http.IncomingMessage) => (subscriberWorker = res.headers['x-worker'] as string | undefined));
        }
      }
      const client = createClient({
        url: `${gateway.baseUrl.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: TaggedWebSocket,
        connectionParams: { authorization: `Bearer ${user.token}` },
        retryAttempts: 0,
        lazy: false,
        onNonLazyError: () => undefined,
      });
      const openSubscriptions = async (agent: http.Agent): Promise<number> =>
        Number(/^graphql_open_subscriptions (\d+)$/m.exec((await request(agent, `${gateway.baseUrl}/metrics`)).text)?.[1]);
      const before = new Map<string, number>();
      for (const [worker, agent] of byWorker) before.set(worker, await openSubscriptions(agent));
      const sub = subscribe<{ paymentRequested: { id: string; description: string } }>(client, 'subscription { paymentRequested { id description } }');
      const sameWorker = await until('the subscriber connected', () => (subscriberWorker ? byWorker.get(subscriberWorker) : undefined));
      // The subscriber's worker has registered it (its own /metrics), so the event cannot be missed.
      await until('the subscription registered', async () => ((await openSubscriptions(sameWorker)) === before.get(subscriberWorker!)! + 1 ? true : undefined));
      const [otherWorker, other] = [...byWorker].find(([worker]) => worker !== subscriberWorker)!;
      const created = await request(other, `${gateway.baseUrl}/api/v1/wallet/request-payment`, {
        method: 'POST',
        token: dev.secretKey,
        body: { walletId: user.walletId, amount: 7, description: 'across workers', merchantName: 'Cluster' },
      });
      expect(created.status).toBe(200);
      expect(created.worker).toBe(otherWorker);
      expect(otherWorker).not.toBe(subscriberWorker);
      const event = await sub.next(10_000);
      expect(event.paymentRequested).toEqual({ id: JSON.parse(created.text).paymentRequestId, description: 'across workers' });
      expect(sub.errors).toEqual([]);
      // One outbox reader and one LISTEN connection for the instance, however many workers (#17): the primary reads for both.
      const readers = await database.db.orm.em.fork().execute<Array<{ name: string; n: number }>>(
        `select application_name as name, count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name in ('wallet-gateway-events', 'wallet-gateway-outbox') group by 1 order by 1`,
      );
      expect(readers).toEqual([
        { name: 'wallet-gateway-events', n: 1 },
        { name: 'wallet-gateway-outbox', n: 1 },
      ]);

      gateway.child.kill('SIGTERM');
      const { code } = await gateway.exited;
      expect(code).toBe(0);
      for (const worker of byWorker.keys()) expect(alive(Number(worker))).toBe(false);
      expect(gateway.lines.some((l) => l.includes('"workersClean":true'))).toBe(true);
      await client.dispose();
    } finally {
      if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
      for (const agent of agents) agent.destroy();
    }
  }, 240_000);
});
