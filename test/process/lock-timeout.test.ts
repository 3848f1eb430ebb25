import http from 'node:http';
import pg from 'pg';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { APPROVE, seed, send, spawnGateway, type GatewayProcess } from './gateway-process.js';

// A transaction elsewhere holds a payment request's row lock: the approval of that request gives up
// after lock_timeout with a clear 503 (nothing changed), while other clients are served meanwhile.
describeOnServer('the real process behind a held row lock', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  let gateway: GatewayProcess | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    if (gateway && gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    await database.close();
  });

  test('a held row lock: the approval times out with a clear error, others are served, a retry succeeds', async () => {
    const { developers, users } = await seed(database.db, { developers: 1, users: 2, balance: 100 });
    gateway = await spawnGateway(database.url!);
    const agent = new http.Agent({ keepAlive: true });
    const create = (u: number) =>
      send(agent, gateway!.baseUrl, 'POST', '/api/v1/wallet/request-payment', {
        token: developers[0]!.secretKey,
        body: { walletId: users[u]!.walletId, amount: 5, description: 'Locked', merchantName: 'Lock' },
      });
    const created = await create(0);
    if (created.kind !== 'response' || created.status !== 200) throw new Error(JSON.stringify(created));
    const id = created.body.paymentRequestId as string;

    const holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select * from payment_requests where id = $1 for update', [id]);
      const approval = send(agent, gateway.baseUrl, 'POST', '/graphql', { token: users[0]!.token, body: { query: APPROVE, variables: { id } } });
      // While the approval waits on the lock, other clients are served.
      for (let i = 0; i < 5; i++) {
        const other = await create(1);
        expect(other.kind === 'response' && other.status).toBe(200);
      }
      const answer = await approval;
      expect(answer.kind).toBe('response');
      if (answer.kind !== 'response') return;
      expect(answer.body.errors[0]).toMatchObject({
        message: 'The database is busy (a lock or statement timed out); try again',
        extensions: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 },
      });
    } finally {
      await holder.query('rollback');
      await holder.end();
    }
    const [row] = (await database.db.orm.em.fork().execute<Array<{ status: string; balance: string }>>(
      'select p.status, w.balance from payment_requests p join wallets w on w.id = p.wallet_id where p.id = ?',
      [id],
    )) as Array<{ status: string; balance: string }>;
    expect(row).toEqual({ status: 'PENDING', balance: '100.00' });
    const retry = await send(agent, gateway.baseUrl, 'POST', '/graphql', { token: users[0]!.token, body: { query: APPROVE, variables: { id } } });
    expect(retry.kind === 'response' && retry.body.data.approvePaymentRequest.status).toBe('APPROVED');
    agent.destroy();
    expect(gateway.lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
    gateway.child.kill('SIGTERM');
    expect((await gateway.exited).code).toBe(0);
  }, 240_000);
});
