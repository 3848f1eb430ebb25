// Payout events (payout.created, payout.paid, payout.failed: SPEC §16) through the outbox: signed
// webhook deliveries in order per payout, the events API (type filter), and `trigger`.
import { Webhook } from 'standardwebhooks';
import { factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { runCli } from '../../src/cli/cli.js';

let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  app = await startTestApp({
    env: { RATE_LIMIT_PER_SECOND: '100000', WEBHOOK_POLL_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'true', SANDBOX_DELAY_MS: '50', LOOKUP_LIMIT_PER_MINUTE: '100000' },
  });
  receiver = await startReceiver();
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await app?.close();
});

const admin = (query: string, variables: Record<string, unknown> = {}) => gql(app.baseUrl, query, variables, app.config.adminToken);

test('a payout made, then paid, reaches the endpoint signed and in order, its data the payout body; the events API filters them by type', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const endpoint = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url, events: ['payout.created', 'payout.paid', 'payout.failed'] } });
  expect(endpoint.status).toBe(200);
  await approve(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 9));
  expect((await admin('mutation { runPayouts }')).body.data.runPayouts).toBeGreaterThanOrEqual(1);
  const [payout] = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
  const paid = await admin('mutation($id: ID!) { markPayoutPaid(id: $id, bankReference: "BANK-9") { status } }', { id: payout.id });
  expect(paid.body.data.markPayoutPaid.status).toBe('PAID');
  const got = await receiver.until((r) => r.filter((x) => (x.json.data as { id?: string }).id === payout.id).length >= 2);
  const mine = got.filter((x) => (x.json.data as { id?: string }).id === payout.id);
  expect(mine.map((x) => x.json.type)).toEqual(['payout.created', 'payout.paid']);
  const now = (await http(app.baseUrl, `/api/v1/payouts/${payout.id}`, { token: dev.secretKey })).body;
  expect(mine[0]!.json.data).toEqual(payout);
  expect(mine[1]!.json.data).toEqual(now);
  const wh = new Webhook(endpoint.body.secret.replace(/^whsec_/, ''));
  for (const x of mine) expect(() => wh.verify(x.body, { 'webhook-id': x.id, 'webhook-timestamp': x.timestamp, 'webhook-signature': x.signature })).not.toThrow();

  const listed = await http(app.baseUrl, '/api/v1/events?type=payout.created&type=payout.paid', { token: dev.secretKey });
  expect(listed.body.data.map((e: { type: string; data: { id: string } }) => [e.type, e.data.id])).toEqual([
    ['payout.created', payout.id],
    ['payout.paid', payout.id],
  ]);
  const detail = await http(app.baseUrl, `/api/v1/events/${listed.body.data[0].id}`, { token: dev.secretKey });
  expect(detail.body.deliveries).toEqual([expect.objectContaining({ status: 'DELIVERED' })]);
});

test('`trigger payout.failed` makes a payout on a development gateway, fails it, and prints the event', async () => {
  const f = factories(app);
  const dev = await f.developer();
  let stdout = '';
  let stderr = '';
  const code = await runCli(['trigger', 'payout.failed', '--key', dev.secretKey, '--url', app.baseUrl], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
  });
  expect([code, stderr]).toEqual([0, '']);
  const out = JSON.parse(stdout);
  expect(out).toEqual({ type: 'payout.failed', payoutId: expect.any(String), eventId: expect.stringMatching(/^evt_/) });
  const payout = (await http(app.baseUrl, `/api/v1/payouts/${out.payoutId}`, { token: dev.secretKey })).body;
  expect(payout).toEqual(expect.objectContaining({ status: 'FAILED', amount: 10, failureReason: expect.any(String) }));
  expect((await http(app.baseUrl, '/api/v1/balance', { token: dev.secretKey })).body.balances).toEqual([{ currency: 'ETB', available: 10, inPayouts: 0 }]);
  const types = (await http(app.baseUrl, '/api/v1/events?type=payout.created&type=payout.failed', { token: dev.secretKey })).body.data.map((e: { type: string }) => e.type);
  expect(types).toEqual(['payout.created', 'payout.failed']);
});

test('triggerPayout is refused in production, and with nothing available', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const none = await gql(app.baseUrl, 'mutation { triggerPayout { id } }', {}, dev.secretKey);
  expect(none.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  await expect(app.gateway.services.payouts.sandboxPayout(app.gateway.services.works.begin(), 'production', dev.developerId, 'PENDING' as never)).rejects.toMatchObject({ code: 'NOT_FOUND' });
});
