import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
let app: TestApp;
beforeAll(async () => { app = await startTestApp(); });
afterAll(async () => { await app.close(); });
test('dbg', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  try { await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1); } catch (e) { console.log(app.logs.filter((l) => /error|err/.test(l)).join('\n')); throw e; }
});
