import http from 'node:http';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { seed, send, spawnGateway, type GatewayProcess, type Outcome } from './gateway-process.js';
import { until } from '../helpers/expect.js';
import { startTcpProxy, viaProxy, type TcpProxy } from './tcp-proxy.js';
import { sleep } from '../helpers/expect.js';

// The database goes away under load and comes back: the real process answers 503 while it is
// gone (never another 5xx, never a non-JSON log line), serves every request sent after its return,
// and every create it acknowledged is in the database, once.
describeOnServer('the real process through a database outage', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let gateway: GatewayProcess | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    const target = new URL(database.url!);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  });
  afterAll(async () => {
    if (gateway && gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    await proxy.close();
    await database.close();
  });


  test('database outage under load: 503 while down, every request sent after its return served, nothing acknowledged lost', async () => {
    const { developers, users } = await seed(database.db, { developers: 1, users: 2, balance: 1000 });
    gateway = await spawnGateway(viaProxy(database.url!, proxy), { DB_POOL_MAX: '4' });
    const g = gateway;
    const calls: Array<{ description: string; outcome: Outcome; sentAfterRestore: boolean }> = [];
    let stop = false;
    let restored = false;
    const worker = async (w: number) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; !stop && i < 5000; i++) {
        const description = `o${w}-${i}`;
        const sentAfterRestore = restored;
        const outcome = await send(agent, g.baseUrl, 'POST', '/api/v1/wallet/request-payment', {
          token: developers[0]!.secretKey,
          headers: { 'Idempotency-Key': description },
          body: { walletId: users[w % users.length]!.walletId, amount: 1, description, merchantName: 'Outage' },
        });
        calls.push({ description, outcome, sentAfterRestore });
        if (outcome.kind === 'response' && outcome.status !== 200) await sleep(50);
      }
      agent.destroy();
    };
    const workers = Promise.all([0, 1, 2, 3].map(worker));
    const answered = (status: number) => calls.filter((c) => c.outcome.kind === 'response' && c.outcome.status === status).length;
    // Each wait has a deadline against a hang; none is a measurement.
    await until(() => answered(200) >= 20, 30_000, 'the first 20 creates answered 200 before the outage');

    await proxy.cut();
    const cutAt = calls.length;
    await until(() => answered(503) >= 8, 30_000, '8 answers 503 during the outage');
    await proxy.restore();
    restored = true;
    // Serving again is not a matter of time: the gateway holds no broken connection and no
    // back-off, so every request sent once the database is back is answered 200 (checked below).
    const after = answered(200);
    await until(() => answered(200) >= after + 20, 30_000, '20 more creates answered 200 after the database came back');
    stop = true;
    await workers;

    expect(g.lines.filter((l) => !l.startsWith('{'))).toEqual([]);
    expect(g.lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    const statuses = new Set(calls.map((c) => (c.outcome.kind === 'response' ? c.outcome.status : c.outcome.code)));
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 503]));
    expect(calls.filter((c) => c.outcome.kind === 'error' || ![200, 503].includes(c.outcome.status)).map((c) => c.outcome)).toEqual([]);
    expect(calls.slice(cutAt).some((c) => c.outcome.kind === 'response' && c.outcome.status === 503)).toBe(true);
    const afterRestore = calls.filter((c) => c.sentAfterRestore);
    expect(afterRestore.length).toBeGreaterThanOrEqual(20);
    expect(afterRestore.filter((c) => c.outcome.kind !== 'response' || c.outcome.status !== 200).map((c) => c.outcome)).toEqual([]);

    const rows = await database.db.orm.em
      .fork()
      .execute<Array<{ id: string; description: string }>>(`select id, description from payment_requests where merchant_name = 'Outage'`);
    const byDescription = new Map<string, string[]>();
    for (const r of rows) byDescription.set(r.description, [...(byDescription.get(r.description) ?? []), r.id]);
    for (const c of calls) {
      if (c.outcome.kind === 'response' && c.outcome.status === 200) expect(byDescription.get(c.description)).toEqual([c.outcome.body.paymentRequestId]);
    }
    expect([...byDescription.values()].filter((ids) => ids.length > 1)).toEqual([]);
    g.child.kill('SIGTERM');
    expect((await g.exited).code).toBe(0);
  }, 90_000);
});
