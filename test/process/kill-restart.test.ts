import http from 'node:http';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { APPROVE, seed, send, spawnGateway, type GatewayProcess, type Outcome } from './gateway-process.js';

// kill -9 under load, then a restart on the same database: every create answered 2xx is there
// (once), every approval answered is there, nothing happened twice, and a retry with the same
// Idempotency-Key returns the original paymentRequestId (or, for a create that never committed,
// creates it once).
describeOnServer('the real process killed and restarted', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  const gateways: GatewayProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const g of gateways) if (g.child.exitCode === null) g.child.kill('SIGKILL');
    await database.close();
  });

  interface Create {
    key: string;
    body: Record<string, unknown>;
    dev: number;
    outcome: Outcome;
  }

  test('kill -9 under load and restart: nothing acknowledged lost, nothing twice, retries return the original id', async () => {
    const { developers, users } = await seed(database.db, { developers: 2, users: 4, balance: 1_000_000 });
    const first = await spawnGateway(database.url!);
    gateways.push(first);
    const creates: Create[] = [];
    const approvals: Array<{ id: string; outcome: Outcome }> = [];
    let answered = 0;
    let enough!: () => void;
    const reached = new Promise<void>((r) => (enough = r));
    const worker = async (w: number) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const dev = w % developers.length;
      const user = users[w % users.length]!;
      for (let i = 0; i < 10_000; i++) {
        const key = `k${w}-${i}`;
        const body = { walletId: user.walletId, amount: 1, description: key, merchantName: 'Crash' };
        const outcome = await send(agent, first.baseUrl, 'POST', '/api/v1/wallet/request-payment', { token: developers[dev]!.secretKey, headers: { 'Idempotency-Key': key }, body });
        creates.push({ key, body, dev, outcome });
        if (outcome.kind === 'error') break;
        if (outcome.status !== 200) continue;
        const id = outcome.body.paymentRequestId as string;
        const approval = await send(agent, first.baseUrl, 'POST', '/graphql', { token: user.token, body: { query: APPROVE, variables: { id } } });
        approvals.push({ id, outcome: approval });
        if (approval.kind === 'error') break;
        if (++answered === 40) enough();
      }
      agent.destroy();
    };
    const workers = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    await reached;
    first.child.kill('SIGKILL');
    await Promise.all([first.exited, workers]);

    const second = await spawnGateway(database.url!);
    gateways.push(second);
    const agent = new http.Agent({ keepAlive: true });
    const problems: string[] = [];
    const rows = await database.db.orm.em
      .fork()
      .execute<Array<{ id: string; key: string; status: string; tx: number }>>(
        `select p.id, p.idempotency_key as key, p.status, (select count(*)::int from transactions t where t.payment_request_id = p.id) as tx
           from payment_requests p where p.merchant_name = 'Crash'`,
      );
    const byKey = new Map<string, string[]>();
    for (const r of rows) byKey.set(r.key, [...(byKey.get(r.key) ?? []), r.id]);
    for (const [key, ids] of byKey) if (ids.length > 1) problems.push(`${key}: ${ids.length} payment requests`);
    for (const r of rows) if ((r.status === 'APPROVED') !== (r.tx === 1)) problems.push(`${r.id}: ${r.status} with ${r.tx} transactions`);
    const status = new Map(rows.map((r) => [r.id, r.status]));
    for (const a of approvals) {
      if (a.outcome.kind === 'response' && a.outcome.body?.data?.approvePaymentRequest?.status === 'APPROVED' && status.get(a.id) !== 'APPROVED') problems.push(`approval of ${a.id} answered but not in the database`);
    }
    // Retry every create with its key and body, as a merchant would after the crash.
    let retried = 0;
    let inProgress = 0;
    for (const c of creates) {
      const retry = await send(agent, second.baseUrl, 'POST', '/api/v1/wallet/request-payment', { token: developers[c.dev]!.secretKey, headers: { 'Idempotency-Key': c.key }, body: c.body });
      retried++;
      if (retry.kind !== 'response') {
        problems.push(`${c.key}: retry got ${retry.code}`);
        continue;
      }
      const stored = byKey.get(c.key);
      if (c.outcome.kind === 'response' && c.outcome.status === 200) {
        if (!stored?.includes(c.outcome.body.paymentRequestId)) problems.push(`${c.key}: answered 200 but not in the database`);
        if (retry.status !== 200 || retry.body.paymentRequestId !== c.outcome.body.paymentRequestId) problems.push(`${c.key}: retry answered ${retry.status} ${JSON.stringify(retry.body)}`);
      } else if (retry.status === 200) {
        // Never answered: the retry returns the request if it committed, or creates it now; once either way.
        if (stored && retry.body.paymentRequestId !== stored[0]) problems.push(`${c.key}: retry created a second request`);
      } else if (retry.status === 409 && /still being processed/.test(retry.body.message)) {
        // Claimed when the process died, before its create committed (the record commits with the
        // create): nothing may exist for it; the lease lets a later retry through.
        inProgress++;
        if (stored) problems.push(`${c.key}: IN_PROGRESS although its request committed`);
      } else problems.push(`${c.key}: retry answered ${retry.status} ${JSON.stringify(retry.body)}`);
    }
    const after = await database.db.orm.em
      .fork()
      .execute<Array<{ key: string; n: number }>>(`select idempotency_key as key, count(*)::int as n from payment_requests where merchant_name = 'Crash' group by 1 having count(*) > 1`);
    if (after.length) problems.push(`keys with two requests after the retries: ${JSON.stringify(after)}`);
    process.stderr.write(`[kill-restart] ${creates.length} creates, ${approvals.length} approvals before kill -9; ${retried} retries, ${inProgress} still in progress\n`);
    expect(problems).toEqual([]);
    agent.destroy();
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
  }, 300_000);
});
