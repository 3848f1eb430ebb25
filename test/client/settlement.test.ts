// The typed client's settlement calls (balance, balanceTransactions, payouts, payoutReport) against
// a real gateway, imported by the package name as a merchant does.
import { WalletGateway, WalletGatewayError } from '@wallet-gateway/client';
import { factories, gql, startTestApp, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '100000' } });
});
afterAll(async () => {
  await app.close();
});

test('a merchant reads its balance and entries, finds its payout and reads its report as text and as a stream', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const gateway = new WalletGateway({ secretKey: dev.secretKey, baseUrl: app.baseUrl });
  expect(await gateway.balance()).toEqual({ balances: [] });
  for (const amount of [10, 2.5, 7]) await approve(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount));
  expect(await gateway.balance()).toEqual({ balances: [{ currency: 'ETB', available: 19.5, inPayouts: 0 }] });
  const page = await gateway.balanceTransactions.list({ limit: 2, type: 'payment' });
  expect(page.data.map((e) => e.amount)).toEqual([7, 2.5]);
  const all = [];
  for await (const entry of gateway.balanceTransactions.all({ limit: 1 })) all.push(entry.net);
  expect(all).toEqual([7, 2.5, 10]);

  const run = await gql(app.baseUrl, 'mutation { runPayouts }', {}, app.config.adminToken);
  expect(run.body.data.runPayouts).toBeGreaterThanOrEqual(1);
  const [payout] = (await gateway.payouts.list({ status: 'PENDING' })).data;
  expect(payout).toEqual(expect.objectContaining({ amount: 19.5, itemCount: 3, status: 'PENDING' }));
  expect(await gateway.payouts.get(payout!.id)).toEqual(payout);
  const listed = [];
  for await (const p of gateway.payouts.all()) listed.push(p.id);
  expect(listed).toEqual([payout!.id]);
  expect((await gateway.balanceTransactions.list({ payoutId: payout!.id })).data.map((e) => e.type)).toEqual(['payout', 'payment', 'payment', 'payment']);

  const text = await gateway.payoutReport(payout!.id);
  expect(text.split('\r\n')).toHaveLength(5); // header, 3 lines, and the empty string after the last CRLF
  const stream = await gateway.payoutReport(payout!.id, { stream: true });
  expect(await new Response(stream).text()).toBe(text);

  const other = new WalletGateway({ secretKey: (await f.developer()).secretKey, baseUrl: app.baseUrl });
  const refused = await other.payoutReport(payout!.id).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(WalletGatewayError);
  expect((refused as WalletGatewayError).statusCode).toBe(404);
});
