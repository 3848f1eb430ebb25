/**
 * Test wallets (issue 12, SPEC §13): in development, documented usernames and phones whose
 * wallets answer every payment request on their own, through the same service calls as a
 * person's answer; absent and never honoured in production. Everything a merchant sees goes
 * through REST (or graphql-ws for the wallet's own events), outcomes are awaited by polling the
 * status as a merchant would, never by fixed sleeps.
 */
import { mintUserToken } from '../../src/auth/user-tokens.js';
import { TEST_WALLETS } from '../../src/sandbox/test-wallets.js';
import { factories, http, startSecondInstance, startTestApp, PRODUCTION_RELYING_PARTY, type TestApp } from '../helpers/app.js';
import { ON_SERVER, createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { balances, countTransactions, ledgerMismatches, requestPayment } from '../helpers/payments.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { cliDatabaseEnv, runCli } from '../helpers/cli.js';
import { poll } from '../helpers/expect.js';

const SANDBOX_ENV = {
  SANDBOX_TEST_WALLETS: 'true',
  SANDBOX_DELAY_MS: '50',
  // Long enough that a scripted answer lands before expiry on a busy 2-core machine; the expiry
  // outcomes wait for it (reads say EXPIRED from expiresAt on).
  PAYMENT_REQUEST_TTL_SECONDS: '5',
  EXPIRY_SWEEP_INTERVAL_MS: '100',
  RATE_LIMIT_PER_SECOND: '100000',
  LOOKUP_LIMIT_PER_MINUTE: '100000',
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Polls a condition (as a merchant polls the status) until it holds, or fails after 20 s. */
const until = <T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> => poll(what, read, done, 20_000, 25);

const statusBody = async (app: TestApp, sk: string, id: string) =>
  (await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: sk })).body;

async function walletOf(app: TestApp, sk: string, identifier: string): Promise<string> {
  const res = await http(app.baseUrl, `/api/v1/account/${identifier}`, { token: sk });
  expect(res.status).toBe(200);
  return res.body.walletId as string;
}

/** Count of a payment outcome in the gateway's Prometheus counter. */
async function outcomeCount(app: TestApp, outcome: string): Promise<number> {
  const metric = await app.gateway.services.metrics.paymentRequests.get();
  return metric.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

describe('test wallets in development', () => {
  let app: TestApp;
  let sk: string;
  let developerId: string;

  beforeAll(async () => {
    app = await startTestApp({ env: SANDBOX_ENV });
    ({ secretKey: sk, developerId } = await factories(app).developer('Sandbox Shop'));
  });
  afterAll(async () => {
    await app.close();
  });

  it('exist after start, found by the documented username and phone (with or without the leading 0)', async () => {
    for (const def of TEST_WALLETS) {
      const byName = await walletOf(app, sk, def.username);
      expect(byName).toMatch(/^wlt_/);
      expect(await walletOf(app, sk, def.phone)).toBe(byName);
      expect(await walletOf(app, sk, def.phone.slice(1))).toBe(byName);
    }
  });

  it('test_approve approves after the delay: APPROVED with a transaction, money moved, ledger consistent', async () => {
    const walletId = await walletOf(app, sk, 'test_approve');
    const before = await balances(app.db, walletId, developerId);
    const id = await requestPayment(app.baseUrl, sk, walletId, 12.5);
    const done = await until('approval', () => statusBody(app, sk, id), (b) => b.status !== 'PENDING');
    expect(done).toMatchObject({ id, status: 'APPROVED', amount: 12.5, transactionId: expect.stringMatching(UUID) });
    const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${done.transactionId}`, { token: sk });
    expect(tx.status).toBe(200);
    expect(tx.body).toMatchObject({ status: 'COMPLETED', amount: 12.5, type: 'WALLET_PAYMENT' });
    const after = await balances(app.db, walletId, developerId);
    expect(after.wallet).toBeCloseTo(before.wallet - 12.5, 2);
    expect(after.developer).toBeCloseTo(before.developer + 12.5, 2);
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  it('test_approve approves a MANUAL request too: APPROVED, the amount held (transaction PENDING), nothing moved yet', async () => {
    const walletId = await walletOf(app, sk, 'test_approve');
    const before = await balances(app.db, walletId, developerId);
    const id = await requestPayment(app.baseUrl, sk, walletId, 4, { capture: 'MANUAL' });
    const done = await until('approval', () => statusBody(app, sk, id), (b) => b.status !== 'PENDING');
    expect(done).toMatchObject({ id, status: 'APPROVED', transactionId: expect.stringMatching(UUID) });
    const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${done.transactionId}`, { token: sk });
    expect(tx.body).toMatchObject({ status: 'PENDING', amount: 4, capturedAmount: null });
    expect(await balances(app.db, walletId, developerId)).toEqual(before);
    const voided = await http(app.baseUrl, `/api/v1/wallet/transaction/${done.transactionId}/void`, { method: 'POST', token: sk });
    expect(voided.body.status).toBe('CANCELLED');
  });

  it('test_reject rejects after the delay; nothing moves', async () => {
    const walletId = await walletOf(app, sk, 'test_reject');
    const id = await requestPayment(app.baseUrl, sk, walletId, 3);
    const done = await until('rejection', () => statusBody(app, sk, id), (b) => b.status !== 'PENDING');
    expect(done).toMatchObject({ id, status: 'REJECTED', transactionId: null });
    expect(await countTransactions(app.db, id)).toBe(0);
  });

  it('test_insufficient tries to approve, fails with INSUFFICIENT_FUNDS, stays PENDING and then expires', async () => {
    const walletId = await walletOf(app, sk, 'test_insufficient');
    const attemptsBefore = await outcomeCount(app, 'insufficient_funds');
    const id = await requestPayment(app.baseUrl, sk, walletId, 5);
    // The approval attempt is seen in the outcome counter (the same one a person's failed approval raises).
    await until('approval attempt', () => outcomeCount(app, 'insufficient_funds'), (n) => n > attemptsBefore);
    const meanwhile = await statusBody(app, sk, id);
    expect(meanwhile.status).toBe('PENDING');
    expect(app.logs.some((l) => l.includes(id) && l.includes('insufficient funds'))).toBe(true);
    const done = await until('expiry', () => statusBody(app, sk, id), (b) => b.status !== 'PENDING');
    expect(done).toMatchObject({ id, status: 'EXPIRED', transactionId: null });
    expect(await countTransactions(app.db, id)).toBe(0);
  });

  it('test_expire never answers: PENDING until expiresAt, then EXPIRED', async () => {
    const walletId = await walletOf(app, sk, 'test_expire');
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
      token: sk,
      body: { walletId, amount: 7, description: 'Never answered', merchantName: 'Sandbox Shop' },
    });
    expect(res.status).toBe(200);
    const id = res.body.paymentRequestId as string;
    const done = await until('expiry', () => statusBody(app, sk, id), (b) => b.status !== 'PENDING');
    expect(done).toMatchObject({ id, status: 'EXPIRED', transactionId: null });
    // It was still PENDING right up to its expiry: nothing answered it before.
    expect(new Date(done.updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(res.body.expiresAt).getTime());
  });

  it.each([
    ['test_suspended', '0900000005'],
    ['test_closed', '0900000006'],
  ])('%s: request-payment answers 400 and creates nothing', async (username, phone) => {
    const walletId = await walletOf(app, sk, phone);
    expect(await walletOf(app, sk, username)).toBe(walletId);
    const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
      token: sk,
      body: { walletId, amount: 1, description: 'x', merchantName: 'Sandbox Shop' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ statusCode: 400, message: 'Wallet is not active' });
    const [row] = await app.db.orm.em
      .fork()
      .execute<Array<{ n: number }>>('select count(*)::int as n from payment_requests where wallet_id = ?', [walletId]);
    expect(row!.n).toBe(0);
  });

  it("the wallet's own events are those of a real user: paymentRequested, then paymentRequestUpdated APPROVED", async () => {
    const walletId = await walletOf(app, sk, 'test_approve');
    const [owner] = await app.db.orm.em.fork().execute<Array<{ user_id: string }>>('select user_id from wallets where id = ?', [walletId]);
    const token = await mintUserToken(app.config, owner!.user_id);
    const client = wsClient(app.baseUrl, token);
    const before = app.gateway.services.eventHub.stats.subscriptions;
    const requested = subscribe(client, 'subscription { paymentRequested { id status merchantName } }');
    const updated = subscribe(client, 'subscription { paymentRequestUpdated { id status transactionId } }');
    try {
      await untilSubscribed(app.gateway.services.eventHub, before + 2);
      const id = await requestPayment(app.baseUrl, sk, walletId, 2);
      expect(await requested.next(15_000)).toEqual({ paymentRequested: { id, status: 'PENDING', merchantName: 'Test Shop' } });
      const update = await updated.next(15_000);
      expect(update).toEqual({ paymentRequestUpdated: { id, status: 'APPROVED', transactionId: expect.stringMatching(UUID) } });
    } finally {
      requested.dispose();
      updated.dispose();
      await client.dispose();
    }
  });

  it('starting again is idempotent: same wallets, no duplicates, approving wallet still funded', async () => {
    const walletId = await walletOf(app, sk, 'test_approve');
    const second = await startSecondInstance(app, SANDBOX_ENV);
    try {
      expect(await walletOf(second, sk, 'test_approve')).toBe(walletId);
      const [row] = await app.db.orm.em
        .fork()
        .execute<Array<{ n: number }>>(`select count(*)::int as n from users where username like 'test\\_%'`);
      expect(row!.n).toBe(TEST_WALLETS.length);
    } finally {
      await second.close();
    }
  });
});

describe('documentation', () => {
  it('the OpenAPI description served to /docs lists every test wallet with its phone and outcome', async () => {
    const app = await startTestApp();
    try {
      const res = await http(app.baseUrl, '/api/v1/openapi.json');
      const description = res.body.info.description as string;
      for (const def of TEST_WALLETS) expect(description).toMatch(new RegExp(`\\| \`${def.username}\` \\| \`${def.phone}\` \\|`));
    } finally {
      await app.close();
    }
  });
});

describe('several instances and restarts', () => {
  // Two instances on one server elect one leader, which alone runs the responder (src/sandbox/sandbox.ts).
  (ON_SERVER ? it : it.skip)(
    `with two instances only the leader answers; when it stops, the other takes over${ON_SERVER ? '' : ' [skipped: needs TEST_DATABASE_URL, the embedded database belongs to one process: no second instance to elect]'}`,
    async () => {
      const env = { ...SANDBOX_ENV, LOG_LEVEL: 'debug', LEADER_ELECT_INTERVAL_MS: '200' };
      const database = await createTestDatabase();
      const first = await startTestApp({ database, env });
      const second = await startSecondInstance(first, env);
      let firstOpen = true;
      try {
        expect([first.gateway.leadership.isLeader, second.gateway.leadership.isLeader]).toEqual([true, false]);
        const { secretKey } = await factories(first).developer();
        const walletId = await walletOf(first, secretKey, 'test_approve');
        const id = await requestPayment(second.baseUrl, secretKey, walletId, 4);
        expect((await until('approved', () => statusBody(first, secretKey, id), (b) => b.status !== 'PENDING')).status).toBe('APPROVED');
        const logs = () => [...first.logs, ...second.logs];
        // The leader answered; the follower, through which the request came, never tried.
        expect(first.logs.filter((l) => l.includes(id) && l.includes('test wallet answered'))).toHaveLength(1);
        expect(logs().filter((l) => l.includes(id) && (l.includes('answer lost') || l.includes('test wallet answered'))).length).toBe(1);
        expect(await countTransactions(first.db, id)).toBe(1);
        // The leader stops (a rolling restart): the other instance takes over the answers.
        firstOpen = false;
        await first.close();
        await until('the second instance leads', async () => second.gateway.leadership.isLeader, Boolean);
        const next = await requestPayment(second.baseUrl, secretKey, walletId, 5);
        expect((await until('approved by the new leader', () => statusBody(second, secretKey, next), (b) => b.status !== 'PENDING')).status).toBe('APPROVED');
        expect(second.logs.filter((l) => l.includes(next) && l.includes('test wallet answered'))).toHaveLength(1);
        expect(logs().filter((l) => JSON.parse(l).level >= 50)).toEqual([]);
      } finally {
        await second.close();
        if (firstOpen) await first.close();
        await database.close();
      }
    },
  );

  it('answers requests created while no instance was answering (catch-up at start)', async () => {
    const database = await createTestDatabase();
    try {
      // An instance whose test wallets wait a minute: the request is still unanswered when it stops.
      const slow = await startTestApp({ database, env: { ...SANDBOX_ENV, SANDBOX_DELAY_MS: '60000', PAYMENT_REQUEST_TTL_SECONDS: '60' } });
      const { secretKey } = await factories(slow).developer();
      const walletId = await walletOf(slow, secretKey, 'test_reject');
      const id = await requestPayment(slow.baseUrl, secretKey, walletId, 1);
      await slow.close();
      const next = await startTestApp({ database, env: { ...SANDBOX_ENV, PAYMENT_REQUEST_TTL_SECONDS: '60' } });
      try {
        const done = await until('catch-up', () => statusBody(next, secretKey, id), (b) => b.status !== 'PENDING');
        expect(done.status).toBe('REJECTED');
      } finally {
        await next.close();
      }
    } finally {
      await database.close();
    }
  });
});

describe('test wallets in production', () => {
  it('are neither created nor answered for; a user with a test wallet name is an ordinary user', async () => {
    const app = await startTestApp({ env: { ...SANDBOX_ENV, APP_ENV: 'production' } });
    try {
      const [row] = await app.db.orm.em
        .fork()
        .execute<Array<{ n: number }>>(`select count(*)::int as n from users where username like 'test\\_%'`);
      expect(row!.n).toBe(0);
      // Nothing listens for anyone's requests in production.
      expect(app.gateway.services.eventHub.stats.subscriptions).toBe(0);
      const f = factories(app);
      const { secretKey } = await f.developer();
      expect(secretKey.startsWith('sk_live_')).toBe(true);
      const user = await f.user({ username: 'test_approve', phone: '0900000001', balance: 100 });
      const lookup = await http(app.baseUrl, '/api/v1/account/test_approve', { token: secretKey });
      expect(lookup.body).toEqual({ walletId: user.walletId });
      const id = await requestPayment(app.baseUrl, secretKey, user.walletId, 1);
      const done = await until('expiry', () => statusBody(app, secretKey, id), (b) => b.status !== 'PENDING');
      expect(done.status).toBe('EXPIRED'); // not APPROVED: nobody answered for the wallet
    } finally {
      await app.close();
    }
  });
});

describe('npx wallet-gateway test-wallets', () => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    database = await createTestDatabase();
    env = cliDatabaseEnv(database);
  });
  afterAll(async () => {
    await database?.close();
  });

  it('prints one JSON object listing every test wallet with its walletId; twice the same', async () => {
    const first = await runCli(['test-wallets'], env);
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = first.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const listing = JSON.parse(lines[0]!);
    expect(listing.delayMs).toBe(2000);
    expect(listing.testWallets.map((w: { username: string }) => w.username)).toEqual(TEST_WALLETS.map((d) => d.username));
    for (const w of listing.testWallets) {
      expect(w).toEqual({
        username: expect.any(String),
        phone: expect.stringMatching(/^09\d{8}$/),
        walletId: expect.stringMatching(/^wlt_/),
        status: expect.stringMatching(/^(ACTIVE|SUSPENDED|CLOSED)$/),
        outcome: expect.any(String),
        behaviour: expect.any(String),
      });
    }
    const second = await runCli(['test-wallets'], env);
    expect(JSON.parse(second.stdout)).toEqual(listing);
    // The listed wallets are the database's.
    const rows = await database.db.orm.em
      .fork()
      .execute<Array<{ username: string; id: string }>>(`select u.username, w.id from users u join wallets w on w.user_id = u.id order by u.phone`);
    expect(rows).toEqual(listing.testWallets.map((w: { username: string; walletId: string }) => ({ username: w.username, id: w.walletId })));
  });

  it('refuses in production (exit 2, a message, nothing on stdout)', async () => {
    const r = await runCli(['test-wallets'], { ...env, APP_ENV: 'production', ...PRODUCTION_RELYING_PARTY });
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
    expect(r.stderr).toBe('wallet-gateway: Test wallets exist only in the development environment\n');
  });
});
