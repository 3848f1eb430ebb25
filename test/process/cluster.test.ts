import http from 'node:http';
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { subscribe } from '../helpers/ws.js';
import { seed, spawnGateway } from './gateway-process.js';
import { poll } from '../helpers/expect.js';

// #10, #32: `npm start` with WEB_CONCURRENCY=2 runs two workers on one port (node:cluster), each a
// whole instance; the primary only supervises. Workers are told apart by X-Worker (development
// only). A subscriber on one worker receives the event of a create made through the other;
// SIGTERM to the primary drains both and exits 0; a primary killed leaves no worker behind and no
// stack trace; a worker killed is replaced, and the leadership stays with one of them.
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
      // Each worker is an instance: its own leadership connection (no outbox reader or LISTEN
      // connection in a primary: the primary holds no database connection), and one of them leads.
      const sessions = await database.db.orm.em.fork().execute<Array<{ name: string; n: number }>>(
        `select application_name as name, count(*)::int as n from pg_stat_activity
          where datname = current_database() and application_name like 'wallet-gateway-%' group by 1 order by 1`,
      );
      expect(sessions).toEqual([{ name: 'wallet-gateway-leadership', n: 2 }]);
      expect(gateway.lines.filter((l) => l.includes('"elected leader')).length).toBe(1);

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

  /** Every line the processes wrote is a JSON log line (no stack trace, no plain-text crash). */
  const allJson = (lines: string[]) =>
    lines.filter((l) => {
      try {
        JSON.parse(l);
        return false;
      } catch {
        return l.trim() !== '';
      }
    });

  test('the primary killed: its workers drain and exit on their own, without a stack trace; the leadership is let go', async () => {
    const gateway = await spawnGateway(database.url!, { WEB_CONCURRENCY: '2', LOG_LEVEL: 'info' });
    const workers = () => gateway.lines.flatMap((l) => (l.includes('"wallet gateway listening"') ? [JSON.parse(l).pid as number] : []));
    try {
      await until('both workers listening', () => (workers().length >= 2 ? true : undefined));
      await until('a leader', () => (gateway.lines.some((l) => l.includes('"elected leader')) ? true : undefined));
      gateway.child.kill('SIGKILL');
      await gateway.exited;
      for (const pid of workers()) await until(`worker ${pid} gone`, () => (alive(pid) ? undefined : true));
      await gateway.outputEnded; // the workers' last lines read
      expect(gateway.lines.filter((l) => l.includes('the cluster primary is gone; draining and exiting')).length).toBe(2);
      expect(allJson(gateway.lines)).toEqual([]);
      expect(gateway.lines.filter((l) => JSON.parse(l).level >= 50)).toEqual([]);
      // Their sessions ended with them (the server notices a closed socket at once; pg_stat_activity
      // may show it a moment longer): the advisory lock is free for the next instance.
      const sessions = async () =>
        (
          await database.db.orm.em
            .fork()
            .execute<Array<{ n: number }>>(`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'wallet-gateway-leadership'`)
        )[0]!.n;
      await until('the leadership sessions gone', async () => ((await sessions()) === 0 ? true : undefined));
    } finally {
      for (const pid of workers()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 120_000);

  test('a worker killed is replaced; exactly one worker leads before and after, and the survivor goes on serving', async () => {
    const gateway = await spawnGateway(database.url!, { WEB_CONCURRENCY: '2', LOG_LEVEL: 'info', LEADER_ELECT_INTERVAL_MS: '300' });
    const leaders = async () =>
      (
        await database.db.orm.em.fork().execute<Array<{ pid: number }>>(
          `select a.pid from pg_locks l join pg_stat_activity a on a.pid = l.pid
            where l.locktype = 'advisory' and l.granted and a.datname = current_database() and a.application_name = 'wallet-gateway-leadership'`,
        )
      ).length;
    const listening = () => gateway.lines.flatMap((l) => (l.includes('"wallet gateway listening"') ? [JSON.parse(l).pid as number] : []));
    const electedPids = () => gateway.lines.flatMap((l) => (l.includes('"elected leader') ? [JSON.parse(l).pid as number] : []));
    try {
      await until('both workers listening', () => (listening().length >= 2 ? true : undefined));
      await until('one leader', async () => ((await leaders()) === 1 ? true : undefined));
      const leader = electedPids()[0]!;
      process.kill(leader, 'SIGKILL');
      await until('a replacement worker listening', () => (listening().length >= 3 ? true : undefined));
      await until('a new leader', () => (electedPids().length >= 2 ? true : undefined));
      expect(electedPids()[1]).not.toBe(leader);
      expect(await leaders()).toBe(1);
      expect((await fetch(`${gateway.baseUrl}/readyz`)).status).toBe(200);
      expect(gateway.lines.some((l) => l.includes('worker exited unexpectedly; restarting'))).toBe(true);
      expect(allJson(gateway.lines)).toEqual([]);
      gateway.child.kill('SIGTERM');
      expect((await gateway.exited).code).toBe(0);
    } finally {
      if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    }
  }, 120_000);
});
