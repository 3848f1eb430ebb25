import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { TEST_PIN } from '../helpers/app.js';
import { spawnGateway, seed, type GatewayProcess } from './gateway-process.js';
import { startReceiver, verify, type Receiver } from '../webhooks/receiver.js';

// kill -9 of the real gateway process (`node dist/src/main.js`) in the middle of webhook
// deliveries: after a restart every event still arrives at least once, with its webhook-id, and
// per payment request in order.

let database: TestDatabase | undefined;
let receiver: Receiver | undefined;
const gateways: GatewayProcess[] = [];

afterAll(async () => {
  for (const g of gateways) if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill('SIGKILL');
  await receiver?.close();
  await database?.close();
});

const ENV = { WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1', WEBHOOK_POLL_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'false' };

async function call(baseUrl: string, path: string, token: string, body?: unknown): Promise<any> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

describeOnServer('webhooks across a crash', 'two gateway processes share one database', () => {
test('kill -9 mid-delivery: after a restart every event is delivered at least once, in order per payment request', async () => {
  database = await createTestDatabase();
  const { developers, users } = await seed(database.db, { developers: 1, users: 1, balance: 1000 });
  const dev = developers[0]!;
  const user = users[0]!;
  let killed = false;
  const first = await spawnGateway(database.url!, ENV);
  gateways.push(first);
  let allCreated!: () => void;
  const created = new Promise<void>((resolve) => (allCreated = resolve));
  // The receiver holds the first request it gets until every request was created, kills the
  // gateway while that delivery is in flight, then answers into the void.
  let cutId: string | undefined;
  receiver = await startReceiver({
    respond: async (r, i) => {
      if (i === 0) {
        cutId = r.id;
        await created;
        first.child.kill('SIGKILL');
        killed = true;
        await first.exited;
      }
      return 200;
    },
  });
  const endpoint = await call(first.baseUrl, '/api/v1/webhook-endpoints', dev.secretKey, { url: receiver.url });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const pr = await call(first.baseUrl, '/api/v1/wallet/request-payment', dev.secretKey, {
      walletId: user.walletId,
      amount: 1,
      description: `crash ${i}`,
      merchantName: 'Crash',
    });
    ids.push(pr.paymentRequestId);
  }
  allCreated();
  await first.exited;
  expect(killed).toBe(true);
  // A new gateway process on the same database approves them and carries on delivering.
  const second = await spawnGateway(database.url!, ENV);
  gateways.push(second);
  for (const id of ids) {
    const res = await fetch(`${second.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id status } }`, variables: { id } }),
    });
    expect(((await res.json()) as { errors?: unknown }).errors).toBeUndefined();
  }
  const [{ n }] = await database.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from events where developer_id = ?', [dev.developerId]);
  const expected = Number(n);
  expect(expected).toBe(ids.length * 2);
  const eventIds = new Set(
    (await database.db.orm.em.fork().execute<Array<{ id: string }>>('select id from events where developer_id = ?', [dev.developerId])).map((r) => r.id),
  );
  const got = await receiver.until((rs) => new Set(rs.map((r) => r.id)).size >= expected, 40_000);
  expect(new Set(got.map((r) => r.id))).toEqual(eventIds);
  for (const r of got) expect(verify(endpoint.secret, r)).toEqual(r.json);
  // The delivery cut by the crash (the request the receiver held, not the first one it answered:
  // deliveries claimed in the same pass as the held one are answered, and recorded, before it)
  // came again with the same webhook-id.
  const byId = new Map<string, number>();
  for (const r of got) byId.set(r.id, (byId.get(r.id) ?? 0) + 1);
  expect(cutId).toBeDefined();
  expect(byId.get(cutId!)).toBeGreaterThanOrEqual(2);
  // Per payment request, created arrives (first) before approved.
  for (const id of ids) {
    const firstArrivals = got.filter((r) => r.json.data.paymentRequest.id === id).map((r) => r.json.type);
    const firstApproved = firstArrivals.indexOf('payment_request.approved');
    expect(firstApproved).toBeGreaterThan(firstArrivals.indexOf('payment_request.created'));
    expect(firstArrivals.indexOf('payment_request.created')).toBe(0);
  }
}, 90_000);
});
