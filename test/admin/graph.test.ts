import { startTestApp, factories, gql, type TestApp } from '../helpers/app.js';
import { approve, balances, requestPayment } from '../helpers/payments.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

let app: TestApp;
let admin: string;
beforeAll(async () => {
  // No sweeps during the statement counts below.
  app = await startTestApp({ env: { EXPIRY_SWEEP_INTERVAL_MS: '3600000' } });
  admin = app.config.adminToken;
});
afterAll(async () => {
  await app.close();
});

/** Creates and approves a payment of `amount`; returns the request and transaction ids. */
async function paid(dev: { secretKey: string }, user: { walletId: string; token: string }, amount: number, reference?: string) {
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount, reference ? { reference } : {});
  const res = await approve(app.baseUrl, user.token, id);
  return { id, tx: res.body.data.approvePaymentRequest.transactionId as string };
}

const REFUND = 'mutation($id: ID!, $a: Float) { refundTransaction(id: $id, amount: $a) { id status refundedAmount amount } }';

/** Runs a query and counts the SQL statements of the graph's tables it caused. */
async function countStatements(query: string, variables: Record<string, unknown> = {}) {
  let statements = 0;
  const graphTables = /\b(payment_requests|wallets|users|developers|developer_balances|transactions|refunds|ledger_entries|secret_keys)\b/;
  const onQuery = (q: { sql: string }) => {
    if (graphTables.test(q.sql)) statements++;
  };
  const knex = app.db.orm.em.getKnex();
  knex.on('query', onQuery);
  try {
    const res = await gql(app.baseUrl, query, variables, admin);
    expect(res.body.errors).toBeUndefined();
    return { statements, data: res.body.data };
  } finally {
    knex.off('query', onQuery);
  }
}

describe('partial refunds', () => {
  test('several partial refunds up to the amount, REFUNDED at the end, ledger pairs, books balanced', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const { tx } = await paid(dev, user, 30);
    const first = await gql(app.baseUrl, REFUND, { id: tx, a: 10 }, admin);
    expect(first.body.data.refundTransaction).toEqual({ id: tx, status: 'COMPLETED', refundedAmount: 10, amount: 30 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 80, developer: 20 });
    const tooMuch = await gql(app.baseUrl, REFUND, { id: tx, a: 20.01 }, admin);
    expect(tooMuch.body.errors[0].extensions).toEqual({ code: 'REFUND_EXCEEDS_REMAINING', statusCode: 409 });
    expect(tooMuch.body.errors[0].message).toMatch(/20\.00/);
    const rest = await gql(app.baseUrl, REFUND, { id: tx }, admin);
    expect(rest.body.data.refundTransaction).toEqual({ id: tx, status: 'REFUNDED', refundedAmount: 30, amount: 30 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    const after = await gql(app.baseUrl, REFUND, { id: tx, a: 1 }, admin);
    expect(after.body.errors[0].extensions.code).toBe('CONFLICT');
    const graph = await gql(
      app.baseUrl,
      `{ transactions(filter: { walletId: "${user.walletId}" }) { nodes { id refunds { amount } ledgerEntries { kind amount } } } }`,
      {},
      admin,
    );
    const node = graph.body.data.transactions.nodes[0];
    expect(node.refunds.map((r: { amount: number }) => r.amount)).toEqual([10, 20]);
    expect(node.ledgerEntries.filter((e: { kind: string }) => e.kind === 'REFUND').map((e: { amount: number }) => e.amount).sort()).toEqual([-10, -20, 10, 20].sort());
    const check = await gql(app.baseUrl, '{ ledgerCheck { ok checkedWallets checkedDevelopers mismatches { kind id } } }', {}, admin);
    expect(check.body.data.ledgerCheck).toMatchObject({ ok: true, mismatches: [] });
    expect(check.body.data.ledgerCheck.checkedWallets).toBeGreaterThanOrEqual(1);
  });

  describeOnServer('concurrently', ONE_CONNECTION, () => {
    test('concurrent partial refunds never refund more than the amount', async () => {
      const f = factories(app);
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const { tx } = await paid(dev, user, 25);
      // 8 at once: within the pool (10), so every call reaches the row lock and only the amount decides.
      const results = await Promise.all(Array.from({ length: 8 }, () => gql(app.baseUrl, REFUND, { id: tx, a: 4 }, admin)));
      const ok = results.filter((r) => r.body.data?.refundTransaction).length;
      expect(ok).toBe(6); // 6 × 4 = 24 ≤ 25 < 28
      for (const r of results.filter((x) => !x.body.data?.refundTransaction)) {
        expect(r.body.errors[0].extensions.code).toBe('REFUND_EXCEEDS_REMAINING');
      }
      expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 99, developer: 1 });
      const check = await gql(app.baseUrl, '{ ledgerCheck { ok } }', {}, admin);
      expect(check.body.data.ledgerCheck.ok).toBe(true);
    });
  });

  test("a refund the developer's balance cannot cover is refused and changes nothing", async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const { tx } = await paid(dev, user, 10);
    // The developer was paid out: its available balance is 0 (the 10 are in a payout).
    const run = await gql(app.baseUrl, 'mutation { runPayouts }', {}, admin);
    expect(run.body.data.runPayouts).toBeGreaterThanOrEqual(1);
    const before = await balances(app.db, user.walletId, dev.developerId);
    const refused = await gql(app.baseUrl, REFUND, { id: tx, a: 1 }, admin);
    expect(refused.body.errors[0].extensions).toEqual({ code: 'INSUFFICIENT_FUNDS', statusCode: 402 });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual(before);
    const graph = await gql(app.baseUrl, `{ transactions(filter: { walletId: "${user.walletId}" }) { nodes { id refundedAmount status refunds { id } } } }`, {}, admin);
    expect(graph.body.data.transactions.nodes).toEqual([{ id: tx, refundedAmount: 0, status: 'COMPLETED', refunds: [] }]);
    expect((await gql(app.baseUrl, '{ ledgerCheck { ok } }', {}, admin)).body.data.ledgerCheck.ok).toBe(true);
  });
});

describe('the navigable graph', () => {
  test('an operator finds a payment by phone and username and follows it to its user, developer, transaction and ledger', async () => {
    const f = factories(app);
    const dev = await f.developer('Graph Shop');
    const user = await f.user({ balance: 60 });
    const { id, tx } = await paid(dev, user, 12.5, `order-${user.username}`);
    const refOnly = await gql(app.baseUrl, `{ paymentRequests(filter: { reference: "order-${user.username}" }) { nodes { id reference } } }`, {}, admin);
    expect(refOnly.body.data.paymentRequests.nodes).toEqual([{ id, reference: `order-${user.username}` }]);
    for (const filter of [{ phone: user.phone }, { phone: user.phone.replace(/^0/, '') }, { username: user.username.toUpperCase() }, { userId: user.userId }]) {
      const res = await gql(
        app.baseUrl,
        `query($f: PaymentRequestFilter) { paymentRequests(filter: $f) {
           nodes { id status events { type } wallet { walletId balance user { username phone wallet { walletId } } } developer { name balance { currency balance } }
                   transaction { id amount paymentRequest { id } ledgerEntries { kind amount } } } } }`,
        { f: filter },
        admin,
      );
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.paymentRequests.nodes).toEqual([
        {
          id,
          status: 'APPROVED',
          events: [{ type: 'payment_request.created' }, { type: 'payment_request.approved' }],
          wallet: { walletId: user.walletId, balance: 47.5, user: { username: user.username, phone: user.phone.replace(/^0/, ''), wallet: { walletId: user.walletId } } },
          developer: { name: 'Graph Shop', balance: [{ currency: 'ETB', balance: 12.5 }] },
          transaction: { id: tx, amount: 12.5, paymentRequest: { id }, ledgerEntries: expect.arrayContaining([{ kind: 'PAYMENT', amount: -12.5 }, { kind: 'PAYMENT', amount: 12.5 }]) },
        },
      ]);
    }
    const byAmount = await gql(app.baseUrl, `{ paymentRequests(filter: { walletId: "${user.walletId}", amountMin: 12.5, amountMax: 12.5 }) { nodes { id } } }`, {}, admin);
    expect(byAmount.body.data.paymentRequests.nodes).toEqual([{ id }]);
    const outside = await gql(app.baseUrl, `{ paymentRequests(filter: { walletId: "${user.walletId}", amountMin: 12.51 }) { nodes { id } } }`, {}, admin);
    expect(outside.body.data.paymentRequests.nodes).toEqual([]);
    const future = await gql(app.baseUrl, `{ paymentRequests(filter: { walletId: "${user.walletId}", createdFrom: "2999-01-01T00:00:00Z" }) { nodes { id } } }`, {}, admin);
    expect(future.body.data.paymentRequests.nodes).toEqual([]);
    const byReference = await gql(app.baseUrl, `{ paymentRequests(filter: { reference: "order-${id}" }) { nodes { id } } }`, {}, admin);
    expect(byReference.body.data.paymentRequests.nodes).toEqual([]);
    const withNul = await gql(app.baseUrl, 'query($r: String) { paymentRequests(filter: { reference: $r }) { nodes { id } } }', { r: 'a\u0000b' }, admin);
    expect(withNul.body.errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', statusCode: 400 });
    const users = await gql(app.baseUrl, `{ users(filter: { username: "${user.username}" }) { nodes { id username wallet { walletId } } } }`, {}, admin);
    expect(users.body.data.users.nodes).toEqual([{ id: user.userId, username: user.username, wallet: { walletId: user.walletId } }]);
  });

  test('a nested page costs a fixed number of statements, whatever its size (no N+1)', async () => {
    const f = factories(app);
    const dev = await f.developer('Counted');
    const users = await Promise.all([0, 1, 2, 3, 4, 5].map(() => f.user({ balance: 50 })));
    for (const user of users) await paid(dev, user, 5);
    const nested = `query($d: ID!, $n: Int) { paymentRequests(filter: { developerId: $d }, first: $n) { nodes {
        id events { id } wallet { walletId user { username } ledgerEntries(first: 5) { nodes { amount } } paymentRequests(first: 2) { nodes { id } } }
        developer { name secretKeys { keyId } balance { balance } paymentRequests(first: 3) { nodes { id } } }
        transaction { id refunds { amount } ledgerEntries { amount } paymentRequest { id } } } } }`;
    const small = await countStatements(nested, { d: dev.developerId, n: 2 });
    const large = await countStatements(nested, { d: dev.developerId, n: 6 });
    expect(small.data.paymentRequests.nodes).toHaveLength(2);
    expect(large.data.paymentRequests.nodes).toHaveLength(6);
    expect(large.data.paymentRequests.nodes[0].wallet.paymentRequests.nodes).toHaveLength(1);
    expect(large.data.paymentRequests.nodes[0].developer.paymentRequests.nodes).toHaveLength(3);
    expect(large.statements).toBe(small.statements);
    expect(large.statements).toBeLessThanOrEqual(14);
  });

  test('nested lists page with their own cursors; bad cursors are BAD_USER_INPUT', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await paid(dev, user, 1)).id);
    const page = (after?: string) =>
      gql(app.baseUrl, 'query($w: String, $a: String) { wallets { nodes { walletId } } paymentRequests(filter: { walletId: $w }, first: 1) { nodes { wallet { paymentRequests(first: 2, after: $a) { nodes { id } nextCursor } } } } }', { w: user.walletId, a: after }, admin);
    const first = (await page()).body.data.paymentRequests.nodes[0].wallet.paymentRequests;
    expect(first.nodes.map((n: { id: string }) => n.id)).toEqual([ids[2], ids[1]]);
    const second = (await page(first.nextCursor)).body.data.paymentRequests.nodes[0].wallet.paymentRequests;
    expect(second).toEqual({ nodes: [{ id: ids[0] }], nextCursor: null });
    for (const bad of ['nope', Buffer.from('["2020-01-01T00:00:00Z","x\\u0000"]').toString('base64url'), Buffer.from('["99999-01-01T00:00:00Z","abc"]').toString('base64url')]) {
      const res = await gql(app.baseUrl, 'query($a: String) { paymentRequests(after: $a) { nodes { id } } }', { a: bad }, admin);
      expect(res.status).toBe(200);
      expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    }
  });

  test('every new field and operation is refused for secret keys, user tokens and anonymous callers', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const { id, tx } = await paid(dev, user, 5);
    const refused = [
      ['{ ledgerCheck { ok } }', {}],
      ['{ users { nodes { id } } }', {}],
      ['mutation($id: ID!) { refundTransaction(id: $id, amount: 1) { id } }', { id: tx }],
    ] as const;
    for (const [query, variables] of refused) {
      expect((await gql(app.baseUrl, query, variables, dev.secretKey)).body.errors[0].extensions.code).toBe('FORBIDDEN');
      expect((await gql(app.baseUrl, query, variables, user.token)).body.errors[0].extensions.code).toBe('FORBIDDEN');
      expect((await gql(app.baseUrl, query, variables)).body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
    // The developer's own read may not follow links into the internal graph.
    for (const field of ['wallet { walletId }', 'developer { id }', 'transaction { id }', 'events { id }']) {
      const res = await gql(app.baseUrl, `query($id: ID!) { paymentRequest(id: $id) { id ${field} } }`, { id }, dev.secretKey);
      expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
    }
    for (const field of ['paymentRequest { id }', 'ledgerEntries { amount }', 'refunds { amount }']) {
      const res = await gql(app.baseUrl, `query($id: ID!) { transaction(id: $id) { id ${field} } }`, { id: tx }, dev.secretKey);
      expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
    }
  });
});
