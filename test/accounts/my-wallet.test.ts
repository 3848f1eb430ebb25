/** `myWallet` (user token): the wallet app's balance read; anyone else is refused. */
import { useTestApp, factories, gql, type TestApp } from '../helpers/app.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';

const QUERY = '{ myWallet { walletId username status balance currency } }';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

test("a user token reads its own wallet's id, status and exact balance", async () => {
  const user = await factories(app).user({ balance: 1234.56, username: `mw_${Date.now().toString(36)}` });
  const res = await gql(app.baseUrl, QUERY, {}, user.token);
  expect(res.body).toEqual({
    data: { myWallet: { walletId: user.walletId, username: user.username, status: 'ACTIVE', balance: 1234.56, currency: 'ETB' } },
  });
});

test('a secret key is FORBIDDEN, no token UNAUTHENTICATED, a token of no user NOT_FOUND', async () => {
  const dev = await factories(app).developer();
  const forbidden = await gql(app.baseUrl, QUERY, {}, dev.secretKey);
  expect(forbidden.body.errors[0].extensions.code).toBe('FORBIDDEN');
  const anonymous = await gql(app.baseUrl, QUERY);
  expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  const ghost = await gql(app.baseUrl, QUERY, {}, await mintUserToken(app.config, '00000000-0000-4000-8000-000000000000'));
  expect(ghost.body.errors[0].extensions.code).toBe('NOT_FOUND');
  expect(ghost.body.data).toBeNull();
});
