import http from 'node:http';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { APPROVE, seed, send, spawnGateway, type Outcome } from './gateway-process.js';

// #1: SIGTERM while keep-alive clients loop create + approve. Every request that reached the
// process is answered (2xx, or 503 refused before it ran); a request that got no answer (a
// connection error) was never executed; the process exits 0.
describeOnServer('the real process draining on SIGTERM', 'spawns the gateway on DATABASE_URL; the embedded database belongs to one process', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  interface Call {
    what: 'create' | 'approve';
    /** The description of a create, the payment request id of an approve. */
    ref: string;
    outcome: Outcome;
  }

  test('SIGTERM under keep-alive load: no request executed without its reply, exit 0', async () => {
    const { developers, users } = await seed(database.db, { developers: 2, users: 4, balance: 1_000_000 });
    // The cluster `npm start` runs (two workers): the primary passes SIGTERM on to both.
  const gateway = await spawnGateway(database.url!, { WEB_CONCURRENCY: '2' });
    const calls: Call[] = [];
    let answered = 0;
    let signalled!: () => void;
    const enough = new Promise<void>((resolve) => (signalled = resolve));
    const WORKERS = 8;
    const worker = async (w: number): Promise<void> => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      const dev = developers[w % developers.length]!;
      const user = users[w % users.length]!;
      try {
        for (let i = 0; i < 10_000; i++) {
          const description = `w${w}-${i}`;
          const created = await send(agent, gateway.baseUrl, 'POST', '/api/v1/wallet/request-payment', {
            token: dev.secretKey,
            body: { walletId: user.walletId, amount: 1, description, merchantName: 'Drain' },
          });
          calls.push({ what: 'create', ref: description, outcome: created });
          if (created.kind === 'error' && created.code === 'ECONNREFUSED') return;
          if (created.kind !== 'response' || created.status !== 200) continue;
          if (++answered === 60) signalled();
          const id = created.body.paymentRequestId as string;
          const approved = await send(agent, gateway.baseUrl, 'POST', '/graphql', { token: user.token, body: { query: APPROVE, variables: { id } } });
          calls.push({ what: 'approve', ref: id, outcome: approved });
          if (approved.kind === 'error' && approved.code === 'ECONNREFUSED') return;
        }
      } finally {
        agent.destroy();
      }
    };
    const workers = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    await enough;
    gateway.child.kill('SIGTERM');
    const [{ code }] = await Promise.all([gateway.exited, workers]);
    expect(code).toBe(0);

    const em = database.db.orm.em.fork();
    const rows = await em.execute<Array<{ id: string; description: string; status: string; tx: number }>>(
      `select p.id, p.description, p.status, (select count(*)::int from transactions t where t.payment_request_id = p.id) as tx
         from payment_requests p where p.merchant_name = 'Drain'`,
    );
    const byDescription = new Map(rows.map((r) => [r.description, r]));
    const byId = new Map(rows.map((r) => [r.id, r]));
    const problems: string[] = [];
    for (const call of calls) {
      const o = call.outcome;
      if (o.kind === 'response') {
        if (o.status !== 200 && !(o.status === 503 && o.body?.message === 'Server is shutting down' && o.connection === 'close')) {
          problems.push(`${call.what} ${call.ref}: unexpected ${o.status} ${JSON.stringify(o.body)}`);
        }
        if (call.what === 'create' && o.status === 200 && !byDescription.has(call.ref)) problems.push(`create ${call.ref}: answered 200 but not in the database`);
        if (call.what === 'create' && o.status === 503 && byDescription.has(call.ref)) problems.push(`create ${call.ref}: refused with 503 but executed`);
        if (call.what === 'approve' && o.status === 200 && o.body?.data?.approvePaymentRequest?.status !== 'APPROVED') {
          problems.push(`approve ${call.ref}: ${JSON.stringify(o.body)}`);
        }
      } else if (o.code !== 'ECONNREFUSED') {
        // No reply: acceptable only when the request never ran.
        if (call.what === 'create' && byDescription.has(call.ref)) problems.push(`create ${call.ref}: executed, but its reply was lost (${o.code})`);
        if (call.what === 'approve' && byId.get(call.ref)?.status === 'APPROVED') problems.push(`approve ${call.ref}: executed, but its reply was lost (${o.code})`);
      }
    }
    // Every approval that executed was answered, exactly once.
    const answeredApprovals = new Set(calls.filter((c) => c.what === 'approve' && c.outcome.kind === 'response' && c.outcome.status === 200).map((c) => c.ref));
    for (const r of rows) {
      if (r.status === 'APPROVED' && !answeredApprovals.has(r.id)) problems.push(`payment request ${r.id} APPROVED without an answered approval`);
      if ((r.status === 'APPROVED') !== (r.tx === 1)) problems.push(`payment request ${r.id}: ${r.status} with ${r.tx} transactions`);
    }
    const summary = calls.reduce<Record<string, number>>((acc, c) => {
      const k = `${c.what} ${c.outcome.kind === 'response' ? c.outcome.status : c.outcome.code}`;
      acc[k] = (acc[k] ?? 0) + 1;
      return acc;
    }, {});
    process.stderr.write(`[sigterm-drain] outcomes: ${JSON.stringify(summary)}\n`);
    expect(problems).toEqual([]);
    expect(gateway.lines.filter((l) => !l.startsWith('{'))).toEqual([]);
  }, 240_000);

  test('a request in flight at SIGTERM is answered; a request on a kept-alive socket after it gets the documented 503', async () => {
    const { developers, users } = await seed(database.db, { developers: 1, users: 1, balance: 100 });
    const dev = developers[0]!;
    const user = users[0]!;
    const gateway = await spawnGateway(database.url!, { WEB_CONCURRENCY: '1' });
    const idle = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      // A kept-alive socket that has carried one request and is idle.
      const first = await send(idle, gateway.baseUrl, 'GET', `/api/v1/account/${user.walletId}x`, { token: dev.secretKey });
      expect(first).toMatchObject({ kind: 'response', status: 404 });
      // A request in flight: sent with `Expect: 100-continue`, so the server's "100 Continue" says
      // it is running the request (counted in flight) while its body has not been sent yet.
      const body = JSON.stringify({ walletId: user.walletId, amount: 1, description: 'in flight', merchantName: 'Drain' });
      let finish!: () => void;
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      const inFlight = new Promise<{ status: number; text: string; connection: string | undefined }>((resolve, reject) => {
        const req = http.request(
          `${gateway.baseUrl}/api/v1/wallet/request-payment`,
          {
            method: 'POST',
            agent: false,
            headers: { authorization: `Bearer ${dev.secretKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode!, text, connection: res.headers.connection }));
          },
        );
        req.on('error', reject);
        req.on('continue', () => started());
        req.flushHeaders();
        finish = () => req.end(body);
      });
      await running;
      const deadline = Date.now() + 10_000;
      const shuttingDown = () => gateway.lines.some((l) => l.includes('"msg":"shutting down"'));
      gateway.child.kill('SIGTERM');
      while (!shuttingDown()) {
        if (Date.now() > deadline) throw new Error('the gateway did not log "shutting down"');
        await new Promise((r) => setTimeout(r, 10));
      }
      // Draining: the idle kept-alive socket's next request is refused before it runs, readably.
      const refused = await send(idle, gateway.baseUrl, 'POST', '/api/v1/wallet/request-payment', {
        token: dev.secretKey,
        body: { walletId: user.walletId, amount: 1, description: 'after SIGTERM', merchantName: 'Drain' },
      });
      expect(refused).toEqual({ kind: 'response', status: 503, body: { statusCode: 503, message: 'Server is shutting down' }, connection: 'close' });
      // The request in flight completes and is answered.
      finish();
      const answered = await inFlight;
      expect(answered.status).toBe(200);
      expect(JSON.parse(answered.text)).toMatchObject({ success: true, status: 'PENDING' });
      expect(answered.connection).toBe('close');
      expect((await gateway.exited).code).toBe(0);
      const rows = await database.db.orm.em.fork().execute<Array<{ description: string }>>(`select description from payment_requests where merchant_name = 'Drain' and developer_id = ?`, [dev.developerId]);
      expect(rows.map((r) => r.description)).toEqual(['in flight']);
    } finally {
      idle.destroy();
      if (gateway.child.exitCode === null && gateway.child.signalCode === null) gateway.child.kill('SIGKILL');
    }
  }, 120_000);
});
