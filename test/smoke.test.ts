import { useTestApp, factories, http, type TestApp } from './helpers/app.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

test('a developer resolves a username to a walletId', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await http(app.baseUrl, `/api/v1/account/${user.username.toUpperCase()}`, { token: dev.secretKey });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ walletId: user.walletId });
});
