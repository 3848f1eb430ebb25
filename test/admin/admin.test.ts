import { startTestApp, factories, gql, type TestApp } from '../helpers/app.js';
import { approve, balances, ledgerMismatches, requestPayment } from '../helpers/payments.js';

let app: TestApp;
let admin: string;
beforeAll(async () => {
  app = await startTestApp();
  admin = app.config.adminToken;
});
afterAll(async () => {
  await app.close();
});

test('internal tools create a developer, issue a key that works, and create a funded user', async () => {
  const dev = await gql(app.baseUrl, 'mutation { createDeveloper(name: "Acme") { id name } }', {}, admin);
  const developerId = dev.body.data.createDeveloper.id;
  const key = await gql(app.baseUrl, 'mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId secretKey } }', { d: developerId }, admin);
  expect(key.body.data.issueSecretKey.secretKey).toMatch(/^sk_test_/);
  const user = await gql(
    app.baseUrl,
    'mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId } }',
    { i: { username: 'carol', phone: '0911555000', balance: 40 } },
    admin,
  );
  const { walletId } = user.body.data.createUser;
  const found = await gql(app.baseUrl, '{ walletId(identifier: "CAROL") { walletId } }', {}, key.body.data.issueSecretKey.secretKey);
  expect(found.body.data.walletId.walletId).toBe(walletId);
  const topped = await gql(app.baseUrl, 'mutation($w: String!) { topUpWallet(walletId: $w, amount: 2.5) { balance } }', { w: walletId }, admin);
  expect(topped.body.data.topUpWallet.balance).toBe(42.5);
  const suspended = await gql(app.baseUrl, 'mutation($w: String!) { setWalletStatus(walletId: $w, status: SUSPENDED) { status } }', { w: walletId }, admin);
  expect(suspended.body.data.setWalletStatus.status).toBe('SUSPENDED');
  expect(await ledgerMismatches(app.db)).toEqual([]);
});

test('admin operations refuse developers, users and anonymous callers', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  const query = 'mutation { createDeveloper(name: "x") { id } }';
  expect((await gql(app.baseUrl, query, {}, dev.secretKey)).body.errors[0].extensions.code).toBe('FORBIDDEN');
  expect((await gql(app.baseUrl, query, {}, user.token)).body.errors[0].extensions.code).toBe('FORBIDDEN');
  expect((await gql(app.baseUrl, query)).body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
});

test('lists page through every row with a cursor, newest first, and filter', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
  const seen: string[] = [];
  let after: string | null = null;
  do {
    const res: any = await gql(
      app.baseUrl,
      'query($f: PaymentRequestFilter, $a: String) { paymentRequests(filter: $f, first: 2, after: $a) { nodes { id } nextCursor } }',
      { f: { developerId: dev.developerId }, a: after },
      admin,
    );
    seen.push(...res.body.data.paymentRequests.nodes.map((n: { id: string }) => n.id));
    after = res.body.data.paymentRequests.nextCursor;
  } while (after);
  // every row exactly once (rows created in the same millisecond are ordered by id, so compare as sets)
  expect(seen).toHaveLength(5);
  expect([...seen].sort()).toEqual([...ids].sort());
  const bad = await gql(app.baseUrl, '{ paymentRequests(filter: { developerId: "nope" }) { nodes { id } } }', {}, admin);
  expect(bad.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  const badCursor = await gql(app.baseUrl, '{ developers(after: "zzz") { nodes { id } } }', {}, admin);
  expect(badCursor.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
});

test('refund: COMPLETED → REFUNDED, money back in one transaction, ledger consistent, only once', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 50 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 20);
  const tx = (await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.transactionId;
  expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 30, developer: 20 });
  const refunded = await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id) { id status } }', { id: tx }, admin);
  expect(refunded.body.data.refundTransaction).toEqual({ id: tx, status: 'REFUNDED' });
  expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 50, developer: 0 });
  const again = await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id) { id } }', { id: tx }, admin);
  expect(again.body.errors[0].extensions).toEqual({ code: 'CONFLICT', statusCode: 409 });
  expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 50, developer: 0 });
  expect(await ledgerMismatches(app.db)).toEqual([]);
});
