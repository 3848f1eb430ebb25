/**
 * Payers in control (#24, SPEC §15): block a request's merchant (its developer) from asking the
 * wallet again (403), list and lift blocks, report a request as unwanted (rejected, marked for
 * operators only), and at most MAX_PENDING_PER_PAYER PENDING requests of one developer with one
 * wallet (429 with Retry-After until the oldest expires), also under parallel creates. None of it
 * is ever visible to a developer.
 */
import { factories, gql, http, useTestApp, type TestApp } from '../helpers/app.js';
import { approve, cancel, reject, requestPayment, statusOf } from '../helpers/payments.js';
import { expectError } from '../helpers/expect.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

const CAP = 3;
const TTL = 300;
const BLOCKED = 'The wallet holder does not accept payment requests from this merchant';
const TOO_MANY = 'Too many pending payment requests for this wallet';

let app: TestApp;
useTestApp({ env: { MAX_PENDING_PER_PAYER: String(CAP), PAYMENT_REQUEST_TTL_SECONDS: String(TTL), RATE_LIMIT_PER_SECOND: '100000' } }, (x) => ({ app } = x));

const create = (secretKey: string, walletId: string, amount = 1) =>
  http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: secretKey,
    body: { walletId, amount, description: 'Order', merchantName: 'Pushy Shop' },
  });

const BLOCK = 'mutation($id: ID!) { blockMerchant(paymentRequestId: $id) { id merchantName blockedAt } }';
const LIST = '{ myBlockedMerchants { id merchantName blockedAt } }';
const UNBLOCK = 'mutation($id: ID!) { unblockMerchant(id: $id) }';
const REPORT = 'mutation($id: ID!, $reason: String) { reportPaymentRequest(id: $id, reason: $reason) { id status } }';

/** Everything a developer can read about a request: its status body and its events. */
async function merchantView(secretKey: string, id: string): Promise<string> {
  const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: secretKey });
  const events = await http(app.baseUrl, `/api/v1/events?paymentRequestId=${id}`, { token: secretKey });
  const graph = await gql(app.baseUrl, 'query($id: ID!) { paymentRequest(id: $id) { id status } }', { id }, secretKey);
  return JSON.stringify([status.body, events.body, graph.body]);
}

const codeOf = (res: { body: { errors?: Array<{ extensions: { code: string } }> } }) => res.body.errors?.[0]?.extensions.code;

async function setup() {
  const f = factories(app);
  return { f, dev: await f.developer(), user: await f.user({ balance: 100 }) };
}

describe('blockMerchant', () => {
  test('rejects the PENDING request, blocks its developer for this wallet (403 with the pinned message), lists, and unblocks', async () => {
    const { f, dev, user } = await setup();
    const other = await f.developer();
    const otherUser = await f.user();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5, { merchantName: 'Pushy Shop' });

    const blocked = await gql(app.baseUrl, BLOCK, { id }, user.token);
    expect(blocked.body.errors).toBeUndefined();
    expect(blocked.body.data.blockMerchant).toMatchObject({ merchantName: 'Pushy Shop', blockedAt: expect.any(String) });
    const block = blocked.body.data.blockMerchant;
    // The merchant sees an ordinary rejection, through the state machine (event included), and nothing about the block.
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('REJECTED');
    const view = await merchantView(dev.secretKey, id);
    expect(view).toContain('payment_request.rejected');
    expect(view.toLowerCase()).not.toMatch(/block|report/);

    const refused = await create(dev.secretKey, user.walletId);
    expectError(refused, 403, BLOCKED);
    const graph = await gql(
      app.baseUrl,
      'mutation($input: RequestPaymentInput!) { requestPayment(input: $input) { success } }',
      { input: { walletId: user.walletId, amount: 1, description: 'x', merchantName: 'Pushy Shop' } },
      dev.secretKey,
    );
    expect(graph.body.errors[0]).toMatchObject({ message: BLOCKED, extensions: { code: 'MERCHANT_BLOCKED' } });
    // Only this developer, only this wallet.
    expect((await create(other.secretKey, user.walletId)).status).toBe(200);
    expect((await create(dev.secretKey, otherUser.walletId)).status).toBe(200);

    // Blocking again (from another request of the same developer, already decided) answers the same block.
    const again = await gql(app.baseUrl, BLOCK, { id }, user.token);
    expect(again.body.data.blockMerchant).toEqual(block);
    const list = await gql(app.baseUrl, LIST, {}, user.token);
    expect(list.body.data.myBlockedMerchants).toEqual([block]);
    expect((await gql(app.baseUrl, LIST, {}, otherUser.token)).body.data.myBlockedMerchants).toEqual([]);
    // Operators see how many wallets block a developer; the developer itself cannot ask.
    const counted = await gql(
      app.baseUrl,
      'query($dev: ID) { paymentRequests(filter: { developerId: $dev }, first: 1) { nodes { developer { blockedCount } } } }',
      { dev: dev.developerId },
      app.config.adminToken,
    );
    expect(counted.body.data.paymentRequests.nodes[0].developer.blockedCount).toBe(1);

    // Someone else cannot lift it; the holder can, once.
    expect((await gql(app.baseUrl, UNBLOCK, { id: block.id }, otherUser.token)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await gql(app.baseUrl, UNBLOCK, { id: block.id }, user.token)).body.data.unblockMerchant).toBe(true);
    expect((await gql(app.baseUrl, UNBLOCK, { id: block.id }, user.token)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await gql(app.baseUrl, LIST, {}, user.token)).body.data.myBlockedMerchants).toEqual([]);
    expect((await create(dev.secretKey, user.walletId)).status).toBe(200);
  });

  test("another user's request is NOT_FOUND and blocks nothing; a bad id is BAD_USER_INPUT", async () => {
    const { f, dev, user } = await setup();
    const stranger = await f.user();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const res = await gql(app.baseUrl, BLOCK, { id }, stranger.token);
    expect(res.body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect((await gql(app.baseUrl, BLOCK, { id: 'nope' }, user.token)).body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect((await gql(app.baseUrl, LIST, {}, stranger.token)).body.data.myBlockedMerchants).toEqual([]);
    // A developer's secret key cannot block.
    expect((await gql(app.baseUrl, BLOCK, { id }, dev.secretKey)).body.errors[0].extensions.code).toMatch(/FORBIDDEN|UNAUTHENTICATED/);
  });

  test('the block comes before the pending cap: a blocked developer at its cap still learns only that it is blocked', async () => {
    const { dev, user } = await setup();
    const ids = [];
    for (let i = 0; i < CAP; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
    await gql(app.baseUrl, BLOCK, { id: ids[0] }, user.token);
    expectError(await create(dev.secretKey, user.walletId), 403, BLOCKED);
  });
});

describe('reportPaymentRequest', () => {
  test('rejects it and marks it for operators only: the merchant sees REJECTED and no report anywhere', async () => {
    const { dev, user } = await setup();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    const res = await gql(app.baseUrl, REPORT, { id, reason: '  I never ordered this  ' }, user.token);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.reportPaymentRequest).toEqual({ id, status: 'REJECTED' });
    const view = await merchantView(dev.secretKey, id);
    expect(view).toContain('REJECTED');
    expect(view.toLowerCase()).not.toMatch(/report|never ordered/);
    // The developer cannot ask the graph for it either.
    const probe = await gql(app.baseUrl, 'query($id: ID!) { paymentRequest(id: $id) { id reported } }', { id }, dev.secretKey);
    expect(probe.body.data).toBeNull();
    expect(probe.body.errors[0].extensions.code).toBe('FORBIDDEN');

    // Operators: the filter, the mark, the reason and the count per developer.
    const admin = app.config.adminToken;
    const reported = await gql(
      app.baseUrl,
      'query($dev: ID) { paymentRequests(filter: { reported: true, developerId: $dev }) { nodes { id reported reportReason developer { id reportedCount } } } }',
      { dev: dev.developerId },
      admin,
    );
    expect(reported.body.errors).toBeUndefined();
    expect(reported.body.data.paymentRequests.nodes).toEqual([
      { id, reported: true, reportReason: 'I never ordered this', developer: { id: dev.developerId, reportedCount: 1 } },
    ]);
    const others = await gql(app.baseUrl, 'query($dev: ID) { paymentRequests(filter: { reported: false, developerId: $dev }) { nodes { id } } }', { dev: dev.developerId }, admin);
    expect(others.body.data.paymentRequests.nodes).toEqual([]);
  });

  test('a decided request can still be reported (it stays as it was); a reason over 500 characters changes nothing', async () => {
    const { dev, user } = await setup();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    const long = await gql(app.baseUrl, REPORT, { id, reason: 'x'.repeat(501) }, user.token);
    expect(long.body.errors[0]).toMatchObject({ message: 'reason must be at most 500 characters', extensions: { code: 'BAD_USER_INPUT' } });
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect((await cancel(app.baseUrl, dev.secretKey, id)).status).toBe(200);
    const res = await gql(app.baseUrl, REPORT, { id }, user.token);
    expect(res.body.data.reportPaymentRequest.status).toBe('CANCELLED');
    const admin = await gql(app.baseUrl, 'query($dev: ID) { paymentRequests(filter: { reported: true, developerId: $dev }) { nodes { id reportReason } } }', { dev: dev.developerId }, app.config.adminToken);
    expect(admin.body.data.paymentRequests.nodes).toEqual([{ id, reportReason: null }]);
  });

  test('reporting an already-cancelled request with every field selected (capture and the link fields included) answers the request, not INTERNAL_SERVER_ERROR (#30: one read model)', async () => {
    const { dev, user } = await setup();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    expect((await cancel(app.baseUrl, dev.secretKey, id)).status).toBe(200);
    const res = await gql(
      app.baseUrl,
      'mutation($id: ID!) { reportPaymentRequest(id: $id) { id status capture paymentUrl amount currency merchantName description expiresAt updatedAt transactionId } }',
      { id },
      user.token,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.reportPaymentRequest).toMatchObject({ id, status: 'CANCELLED', capture: 'AUTOMATIC', paymentUrl: expect.stringMatching(/\/pay\/[A-Za-z0-9_-]{22,64}$/), transactionId: null });
  });

  test("an overdue request is reported as EXPIRED (not rejected); another user's request is NOT_FOUND", async () => {
    const { f, dev, user } = await setup();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    await app.db.orm.em
      .fork()
      .execute(`update payment_requests set created_at = now() - interval '2 seconds', updated_at = now() - interval '2 seconds', expires_at = now() - interval '1 second' where id = ?`, [id]);
    const stranger = await f.user();
    expect((await gql(app.baseUrl, REPORT, { id }, stranger.token)).body.errors[0].extensions.code).toBe('NOT_FOUND');
    const res = await gql(app.baseUrl, REPORT, { id, reason: 'spam' }, user.token);
    expect(res.body.data.reportPaymentRequest).toEqual({ id, status: 'EXPIRED' });
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('EXPIRED');
  });
});

describe('MAX_PENDING_PER_PAYER', () => {
  test(`the ${CAP + 1}th PENDING request of one developer to one wallet answers 429 with Retry-After until the oldest expires`, async () => {
    const { f, dev, user } = await setup();
    const ids = [];
    for (let i = 0; i < CAP; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
    // The oldest (soonest to expire) ends in 42.9 s by the database's clock.
    await app.db.orm.em.fork().execute(`update payment_requests set expires_at = now() + interval '42.9 seconds' where id = ?`, [ids[1]]);
    const refused = await create(dev.secretKey, user.walletId);
    expectError(refused, 429, TOO_MANY);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(42);
    expect(retryAfter).toBeLessThanOrEqual(43);
    const graph = await gql(
      app.baseUrl,
      'mutation($input: RequestPaymentInput!) { requestPayment(input: $input) { success } }',
      { input: { walletId: user.walletId, amount: 1, description: 'x', merchantName: 'y' } },
      dev.secretKey,
    );
    expect(graph.body.errors[0]).toMatchObject({ message: TOO_MANY, extensions: { code: 'TOO_MANY_PENDING_REQUESTS' } });
    // Nothing was created by the refusals.
    const [{ n }] = await app.db.orm.em.fork().execute(`select count(*)::int as n from payment_requests where developer_id = ?`, [dev.developerId]);
    expect(n).toBe(CAP);

    // Per developer and per wallet.
    expect((await create((await f.developer()).secretKey, user.walletId)).status).toBe(200);
    expect((await create(dev.secretKey, (await f.user()).walletId)).status).toBe(200);
    // A decided request frees its place; so does an overdue one, even before the sweeper marks it EXPIRED.
    await cancel(app.baseUrl, dev.secretKey, ids[0]!);
    expect((await create(dev.secretKey, user.walletId)).status).toBe(200);
    expectError(await create(dev.secretKey, user.walletId), 429, TOO_MANY);
    await app.db.orm.em.fork().execute(`update payment_requests set created_at = now() - interval '2 seconds', updated_at = now() - interval '2 seconds', expires_at = now() - interval '1 second' where id = ?`, [ids[2]]);
    expect((await create(dev.secretKey, user.walletId)).status).toBe(200);
  });
});

test('payer_pending, the count the cap reads, equals the PENDING requests of each pair through every way out of PENDING and writes outside the doors', async () => {
  const { f, dev, user } = await setup();
  const other = await f.user({ balance: 100 });
  const em = () => app.db.orm.em.fork();
  /** [wallet, count kept, PENDING requests counted now] of each of the developer's pairs. */
  const counts = async () =>
    (
      await em().execute<Array<{ wallet_id: string; pending: number; truth: number }>>(
        `select p.wallet_id, p.pending, (select count(*)::int from payment_requests r
                                          where r.developer_id = p.developer_id and r.wallet_id = p.wallet_id and r.status = 'PENDING') as truth
           from payer_pending p where p.developer_id = ?`,
        [dev.developerId],
      )
    ).map((r) => [r.wallet_id, r.pending, r.truth]);
  const ids = [];
  for (let i = 0; i < CAP; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
  const theirs = await requestPayment(app.baseUrl, dev.secretKey, other.walletId, 1);
  expect(await counts()).toEqual(expect.arrayContaining([[user.walletId, CAP, CAP], [other.walletId, 1, 1]]));
  expect((await approve(app.baseUrl, user.token, ids[0]!)).body.errors).toBeUndefined();
  expect((await reject(app.baseUrl, user.token, ids[1]!)).body.errors).toBeUndefined();
  expect((await cancel(app.baseUrl, dev.secretKey, theirs)).status).toBe(200);
  // Overdue, then swept; and a row written outside the gateway's doors.
  await em().execute(`update payment_requests set created_at = now() - interval '2 seconds', expires_at = now() - interval '1 second' where id = ?`, [ids[2]]);
  await app.gateway.services.payments.expireDue(app.gateway.services.works.begin());
  await em().execute(
    `insert into payment_requests (id, developer_id, wallet_id, amount, currency, description, merchant_name, status, created_at, expires_at, updated_at)
     select gen_random_uuid(), developer_id, wallet_id, 1, currency, 'outside', 'y', 'PENDING', now(), now() + interval '1 minute', now() from payment_requests where id = ?`,
    [ids[0]],
  );
  expect(await counts()).toEqual(expect.arrayContaining([[user.walletId, 1, 1], [other.walletId, 0, 0]]));
  await em().execute(`delete from payment_requests where developer_id = ? and description = 'outside'`, [dev.developerId]);
  expect(await counts()).toEqual(expect.arrayContaining([[user.walletId, 0, 0], [other.walletId, 0, 0]]));
});

describeOnServer('the cap under parallel creates', ONE_CONNECTION, () => {
  test(`10 parallel creates of one developer to one wallet against a cap of ${CAP}: exactly ${CAP} succeed`, async () => {
    for (let round = 0; round < 3; round++) {
      const { dev, user } = await setup();
      const answers = await Promise.all(Array.from({ length: 10 }, () => create(dev.secretKey, user.walletId)));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([...Array(CAP).fill(200), ...Array(10 - CAP).fill(429)]);
      const [{ n }] = await app.db.orm.em
        .fork()
        .execute(`select count(*)::int as n from payment_requests where developer_id = ? and status = 'PENDING'`, [dev.developerId]);
      expect(n).toBe(CAP);
    }
  });
});

describe('blocks reach links (#30, SPEC §16)', () => {
  const BY_CODE = 'query($code: String!) { paymentRequestByCode(code: $code) { id status merchantBlocked } }';
  const APPROVE = 'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { id status } }';
  const CHALLENGE = 'mutation($id: ID!) { approvalChallenge(id: $id) }';
  const failures = async (walletId: string) =>
    Number((await app.db.orm.em.fork().execute<Array<{ failures: number }>>('select failures from wallet_pins where wallet_id = ?', [walletId]))[0]!.failures);
  const link = async (secretKey: string) => {
    const res = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: secretKey, body: { amount: 4, description: 'Table 2', merchantName: 'Pushy Shop' } });
    expect(res.status).toBe(200);
    return { id: res.body.paymentRequestId as string, code: String(res.body.paymentUrl).split('/pay/')[1]! };
  };

  test("the payer who blocked the developer sees merchantBlocked on its link, and approving answers MERCHANT_BLOCKED before the PIN is checked (right or wrong, nothing counted, nothing moves) until they unblock", async () => {
    const { f, dev, user } = await setup();
    const stranger = await f.user({ balance: 100 });
    const first = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const blockId = (await gql(app.baseUrl, BLOCK, { id: first }, user.token)).body.data.blockMerchant.id as string;
    const { id, code } = await link(dev.secretKey);

    expect((await gql(app.baseUrl, BY_CODE, { code }, user.token)).body.data.paymentRequestByCode).toEqual({ id, status: 'PENDING', merchantBlocked: true });
    expect((await gql(app.baseUrl, BY_CODE, { code }, stranger.token)).body.data.paymentRequestByCode).toEqual({ id, status: 'PENDING', merchantBlocked: false });

    for (const pin of ['135790', '000001']) {
      const res = await gql(app.baseUrl, APPROVE, { id, pin }, user.token);
      expect({ code: res.body.errors?.[0]?.extensions?.code, data: res.body.data }).toEqual({ code: 'MERCHANT_BLOCKED', data: null });
      expect(res.body.errors[0].message).toMatch(/blocked this merchant/);
    }
    expect(codeOf(await gql(app.baseUrl, CHALLENGE, { id }, user.token))).toBe('MERCHANT_BLOCKED');
    expect(await failures(user.walletId)).toBe(0);
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    const [row] = await app.db.orm.em.fork().execute<Array<{ wallet_id: string | null }>>('select wallet_id from payment_requests where id = ?', [id]);
    expect(row!.wallet_id).toBeNull(); // still open: someone else may pay it
    expect((await gql(app.baseUrl, 'query { myWallet { balance } }', {}, user.token)).body.data.myWallet.balance).toBe(100);

    expect((await gql(app.baseUrl, UNBLOCK, { id: blockId }, user.token)).body.data.unblockMerchant).toBe(true);
    expect((await gql(app.baseUrl, BY_CODE, { code }, user.token)).body.data.paymentRequestByCode.merchantBlocked).toBe(false);
    expect((await gql(app.baseUrl, APPROVE, { id, pin: '135790' }, user.token)).body.data.approvePaymentRequest).toEqual({ id, status: 'APPROVED' });
  });

  test("a blocked developer's request still PENDING to the wallet (made before the block) cannot be approved either: MERCHANT_BLOCKED, it stays PENDING", async () => {
    const { dev, user } = await setup();
    const blockedFrom = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const earlier = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 2);
    await gql(app.baseUrl, BLOCK, { id: blockedFrom }, user.token);
    expect(codeOf(await gql(app.baseUrl, APPROVE, { id: earlier, pin: '135790' }, user.token))).toBe('MERCHANT_BLOCKED');
    expect((await statusOf(app.baseUrl, dev.secretKey, earlier)).status).toBe('PENDING');
    // Rejecting it stays possible.
    expect((await reject(app.baseUrl, user.token, earlier)).body.data.rejectPaymentRequest.status).toBe('REJECTED');
  });
});

describe('an open link in another currency (the one policy, #31)', () => {
  test("is refused before the PIN is verified: BAD_USER_INPUT naming both currencies, a wrong PIN is not counted, the link stays open", async () => {
    const { f, dev } = await setup();
    const payer = await f.user({ balance: 100, currency: 'USD' });
    const res = await http(app.baseUrl, '/api/v1/wallet/payment-links', { token: dev.secretKey, body: { amount: 4, description: 'Table 9', merchantName: 'Pushy Shop' } });
    const id = res.body.paymentRequestId as string;
    const approve = await gql(app.baseUrl, 'mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "000001" }) { id } }', { id }, payer.token);
    expect(approve.body.errors[0]).toMatchObject({ message: 'This payment request is in ETB; your wallet holds USD', extensions: { code: 'BAD_USER_INPUT' } });
    const [pin] = await app.db.orm.em.fork().execute<Array<{ failures: number }>>('select failures from wallet_pins where wallet_id = ?', [payer.walletId]);
    expect(pin!.failures).toBe(0);
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });
});

describe('a capture on a wallet an operator suspended or closed (#30, SPEC §16)', () => {
  const capture = (key: string, id: string) => http(app.baseUrl, `/api/v1/wallet/transaction/${id}/capture`, { method: 'POST', token: key });
  const voidTx = (key: string, id: string) => http(app.baseUrl, `/api/v1/wallet/transaction/${id}/void`, { method: 'POST', token: key });
  const setStatus = (walletId: string, status: string) =>
    gql(app.baseUrl, 'mutation($w: String!, $s: WalletStatus!) { setWalletStatus(walletId: $w, status: $s) { status } }', { w: walletId, s: status }, app.config.adminToken);
  const wallet = async (walletId: string) =>
    (await app.db.orm.em.fork().execute<Array<{ balance: string; held: string }>>('select balance, held from wallets where id = ?', [walletId]))[0]!;

  test.each(['SUSPENDED', 'CLOSED'])('%s: the capture answers 409 and leaves the hold and the transaction PENDING; a void is allowed; once ACTIVE again the hold could be captured', async (status) => {
    const { dev, user } = await setup();
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 30, { capture: 'MANUAL' });
    const txId = (await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.transactionId as string;
    expect((await setStatus(user.walletId, status)).body.errors).toBeUndefined();
    const refused = await capture(dev.secretKey, txId);
    expectError(refused, 409);
    expect(refused.body.message).toMatch(/wallet is not active/i);
    expect(await wallet(user.walletId)).toEqual({ balance: '100.00', held: '30.00' });
    expect((await http(app.baseUrl, `/api/v1/wallet/transaction/${txId}`, { token: dev.secretKey })).body).toMatchObject({ status: 'PENDING', capturedAmount: null });
    if (status === 'SUSPENDED') {
      await setStatus(user.walletId, 'ACTIVE');
      expect((await capture(dev.secretKey, txId)).body).toMatchObject({ status: 'COMPLETED', capturedAmount: 30 });
      expect(await wallet(user.walletId)).toEqual({ balance: '70.00', held: '0.00' });
    } else {
      expect((await voidTx(dev.secretKey, txId)).body).toMatchObject({ status: 'CANCELLED' });
      expect(await wallet(user.walletId)).toEqual({ balance: '100.00', held: '0.00' });
    }
  });
});
