import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app.close();
});

const REQUESTED = 'subscription { paymentRequested { id amount currency description merchantName status createdAt expiresAt } }';

test('the wallet owner receives paymentRequested within 1 s of creation through REST', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const client = wsClient(app.baseUrl, user.token);
  const sub = subscribe(client, REQUESTED);
  await untilSubscribed(app.gateway.services.events, 1);
  const started = Date.now();
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: dev.secretKey,
    body: { walletId: user.walletId, amount: 12.5, description: 'Order 7', merchantName: 'Acme' },
  });
  expect(res.status).toBe(200);
  const event = await sub.next(1000);
  expect(Date.now() - started).toBeLessThan(1000);
  expect(event.paymentRequested).toEqual({
    id: res.body.paymentRequestId,
    amount: 12.5,
    currency: 'ETB',
    description: 'Order 7',
    merchantName: 'Acme',
    status: 'PENDING',
    createdAt: expect.any(String),
    expiresAt: res.body.expiresAt,
  });
  sub.dispose();
  await client.dispose();
});
