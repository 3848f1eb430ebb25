// Request ids and logs: X-Request-Id on every response and in the log, one structured 'request'
// line per request with the route template, and no credential anywhere in the log.
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { TEST_PIN, factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, until, UUID_RE, type HttpResult } from '../helpers/expect.js';
import { API, approve, cancel, createPaymentRequest, getStatus, getTransaction, lookupAccount, REST_TEST_ENV } from '../helpers/rest.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';

let app: TestApp;
beforeAll(async () => {
  // trace: the strictest setting, every line the gateway can write is written.
  app = await startTestApp({ env: { ...REST_TEST_ENV, LOG_LEVEL: 'trace' } });
});
afterAll(async () => {
  await app.close();
});

interface LogLine {
  level: number;
  msg?: string;
  requestId?: string;
  method?: string;
  route?: string;
  status?: number;
  durationMs?: number;
  [key: string]: unknown;
}

const parse = (raw: string): LogLine => JSON.parse(raw) as LogLine;
const parsedLogs = (from = 0): LogLine[] => app.logs.slice(from).map(parse);
const requestLines = (requestId: string): LogLine[] => parsedLogs().filter((l) => l.msg === 'request' && l.requestId === requestId);

let idSeq = 0;
const nextId = (label: string): string => `t-${label}-${Date.now().toString(36)}-${idSeq++}`;

/** Sends one request with a chosen X-Request-Id and returns the response with the log lines written meanwhile. */
async function traced(
  path: string,
  opts: Parameters<typeof http>[2] = {},
  label = 'r',
): Promise<{ res: HttpResult; id: string; during: LogLine[] }> {
  const id = nextId(label);
  const before = app.logs.length;
  const res = await http(app.baseUrl, path, { ...opts, headers: { ...opts.headers, 'X-Request-Id': id } });
  return { res, id, during: parsedLogs(before) };
}

test('every log line is one JSON object with a level, a time and a message', async () => {
  await http(app.baseUrl, '/healthz');
  expect(app.logs.length).toBeGreaterThan(0);
  for (const raw of app.logs) {
    const line = parse(raw);
    expect(line).toMatchObject({ level: expect.any(Number), time: expect.any(String), msg: expect.any(String) });
  }
});

describe('X-Request-Id', () => {
  test('a sane incoming X-Request-Id is echoed and used in the request line', async () => {
    const { res, id } = await traced('/healthz');
    expect(res.headers.get('x-request-id')).toBe(id);
    expect(requestLines(id)).toHaveLength(1);
  });

  test('without one, a fresh id is generated for every response and logged', async () => {
    const a = await http(app.baseUrl, '/healthz');
    const b = await http(app.baseUrl, '/healthz');
    const idA = a.headers.get('x-request-id')!;
    const idB = b.headers.get('x-request-id')!;
    expect(idA).toMatch(UUID_RE);
    expect(idB).toMatch(UUID_RE);
    expect(idA).not.toBe(idB);
    expect(requestLines(idA)).toHaveLength(1);
    expect(requestLines(idB)).toHaveLength(1);
  });

  test.each([
    ['spaces', 'not a sane id'],
    ['too long', 'x'.repeat(129)],
    ['log injection', '"},"level":60,"msg":"forged'],
  ])('an insane incoming X-Request-Id (%s) is replaced, and never written to the log', async (_label, incoming) => {
    const before = app.logs.length;
    const res = await http(app.baseUrl, '/healthz', { headers: { 'X-Request-Id': incoming } });
    const id = res.headers.get('x-request-id')!;
    expect(id).toMatch(UUID_RE);
    expect(requestLines(id)).toHaveLength(1);
    expect(app.logs.slice(before).join('\n')).not.toContain(incoming);
  });

  test('error responses (401, 404, 405, 415) carry it too, and are logged with it', async () => {
    const token = (await factories(app).developer()).secretKey;
    const cases = [
      await traced(`${API}/wallet/payment-request/${randomUUID()}`),
      await traced(`${API}/nowhere`),
      await traced(`${API}/wallet/request-payment`, { method: 'GET' }),
      await traced(`${API}/wallet/request-payment`, { method: 'POST', token, rawBody: 'x=1', headers: { 'content-type': 'text/plain' } }),
    ];
    expect(cases.map((c) => c.res.status)).toEqual([401, 404, 405, 415]);
    for (const { res, id } of cases) {
      expect(res.headers.get('x-request-id')).toBe(id);
      expect(requestLines(id)).toEqual([expect.objectContaining({ status: res.status })]);
    }
  });
});

describe('one request line per request', () => {
  let secretKey: string;
  let user: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;
  beforeAll(async () => {
    const f = factories(app);
    secretKey = (await f.developer()).secretKey;
    user = await f.user({ balance: 100 });
  });

  test('method, route template, status, durationMs and requestId, for every kind of route', async () => {
    const requestId = await createPaymentRequest(app, secretKey, user.walletId);
    const other = await createPaymentRequest(app, secretKey, user.walletId);
    const transactionId = await approve(app, user.token, requestId);
    const calls: Array<{ path: string; opts?: Parameters<typeof http>[2]; method: string; route: string; status: number; raw?: string }> = [
      { path: `${API}/wallet/payment-request/${requestId}`, method: 'GET', route: 'GET /api/v1/wallet/payment-request/:requestId', status: 200, raw: requestId },
      { path: `${API}/wallet/payment-request/${other}/cancel`, opts: { method: 'POST' }, method: 'POST', route: 'POST /api/v1/wallet/payment-request/:requestId/cancel', status: 200, raw: other },
      { path: `${API}/wallet/transaction/${transactionId}`, method: 'GET', route: 'GET /api/v1/wallet/transaction/:transactionId', status: 200, raw: transactionId },
      { path: `${API}/account/${user.phone}`, method: 'GET', route: 'GET /api/v1/account/:identifier', status: 200, raw: user.phone },
      { path: `${API}/account/${user.username}`, method: 'GET', route: 'GET /api/v1/account/:identifier', status: 200, raw: user.username },
      { path: `${API}/wallet/request-payment`, opts: { body: { walletId: user.walletId, amount: 1, description: 'Log', merchantName: 'Shop' } }, method: 'POST', route: 'POST /api/v1/wallet/request-payment', status: 200 },
      { path: `${API}/wallet/payment-request/${requestId}`, opts: { token: 'sk_test_bad' }, method: 'GET', route: 'GET /api/v1/wallet/payment-request/:requestId', status: 401, raw: requestId },
      { path: '/healthz', method: 'GET', route: 'GET /healthz', status: 200 },
      { path: '/readyz', method: 'GET', route: 'GET /readyz', status: 200 },
      { path: '/metrics', method: 'GET', route: 'GET /metrics', status: 200 },
      { path: '/graphql', opts: { body: { query: '{ __typename }' } }, method: 'POST', route: 'POST /graphql', status: 200 },
    ];
    for (const call of calls) {
      const opts = { token: secretKey, ...call.opts };
      const sent = performance.now();
      const { res, id } = await traced(call.path, opts);
      const roundTripMs = performance.now() - sent;
      expect(res.status).toBe(call.status);
      const lines = requestLines(id);
      expect(lines).toHaveLength(1);
      const line = lines[0]!;
      expect(line).toMatchObject({ msg: 'request', method: call.method, route: call.route, status: call.status, requestId: res.headers.get('x-request-id') });
      expect(typeof line.durationMs).toBe('number');
      expect(line.durationMs).toBeGreaterThanOrEqual(0);
      // Milliseconds, and within the round trip this process saw around it (rounding aside).
      expect(line.durationMs).toBeLessThanOrEqual(Math.ceil(roundTripMs) + 1);
      // The template, never the path with ids, phones or usernames in it.
      if (call.raw) expect(JSON.stringify(line)).not.toContain(call.raw);
    }
  });

  test('an unknown path is logged without the raw path', async () => {
    const secretish = `customer-0911000111-${Date.now()}`;
    const { res, id } = await traced(`${API}/no/${secretish}`);
    expectError(res, 404);
    const [line] = requestLines(id);
    expect(line).toMatchObject({ method: 'GET', status: 404 });
    expect(app.logs.join('\n')).not.toContain(secretish);
  });

  test('twenty concurrent requests give twenty lines, each with its own id', async () => {
    const requestId = await createPaymentRequest(app, secretKey, user.walletId);
    const ids = Array.from({ length: 20 }, () => nextId('c'));
    const responses = await Promise.all(
      ids.map((id) => http(app.baseUrl, `${API}/wallet/payment-request/${requestId}`, { token: secretKey, headers: { 'X-Request-Id': id } })),
    );
    responses.forEach((res, i) => {
      expectOk(res);
      expect(res.headers.get('x-request-id')).toBe(ids[i]);
      expect(requestLines(ids[i]!)).toEqual([expect.objectContaining({ status: 200, route: 'GET /api/v1/wallet/payment-request/:requestId' })]);
    });
  });
});

describe('every line written while serving a request carries its id', () => {
  test('a rejected secret key is logged with the reason and the request id (REST)', async () => {
    const requestId = randomUUID();
    const { res, id, during } = await traced(`${API}/wallet/payment-request/${requestId}`, { token: 'sk_test_not.a.key' });
    expectError(res, 401, 'Invalid secret key');
    const rejected = during.filter((l) => l.msg === 'secret key rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ requestId: id, reason: expect.any(String) });
    expect(during.length).toBeGreaterThan(0);
    for (const line of during) expect(line).toMatchObject({ requestId: id });
  });

  test('a rejected secret key is logged with the request id (GraphQL)', async () => {
    const id = nextId('gql');
    const before = app.logs.length;
    const res = await http(app.baseUrl, '/graphql', {
      body: { query: '{ __typename }' },
      token: 'sk_test_eyJhbGciOiJIUzI1NiJ9.e30.bad',
      headers: { 'X-Request-Id': id },
    });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const during = parsedLogs(before);
    expect(during.filter((l) => l.msg === 'secret key rejected')).toEqual([expect.objectContaining({ requestId: id })]);
    for (const line of during) expect(line).toMatchObject({ requestId: id });
  });

  test('sequential calls of every kind: no line borrows another request’s id', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const u = await f.user({ balance: 5 });
    const pr = await createPaymentRequest(app, dev.secretKey, u.walletId, { amount: 50 });
    const calls: Array<[string, Parameters<typeof http>[2]]> = [
      [`${API}/wallet/payment-request/${pr}`, { token: dev.secretKey }],
      [`${API}/wallet/payment-request/${pr}`, { token: `${dev.secretKey}x` }],
      [`${API}/account/0900000001`, { token: dev.secretKey }],
      ['/graphql', { token: u.token, body: { query: `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id } }`, variables: { id: pr } } }],
      ['/graphql', { token: 'not-a-token', body: { query: '{ myPendingPaymentRequests { id } }' } }],
      [`${API}/wallet/request-payment`, { token: dev.secretKey, rawBody: '{', headers: { 'content-type': 'application/json' } }],
    ];
    for (const [path, opts] of calls) {
      const { id, during } = await traced(path, opts);
      // Every line written while the call was served carries its id (at least its access line).
      expect(during.length).toBeGreaterThan(0);
      for (const line of during) expect([path, line]).toEqual([path, expect.objectContaining({ requestId: id })]);
    }
  });
});

describe('credentials never reach the log', () => {
  test('after keys, rejected keys, user tokens, the admin token and WebSockets, no credential appears in any line', async () => {
    const f = factories(app);
    const admin = app.config.adminToken;
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const stranger = await f.user({ balance: 100 });
    const credentials: string[] = [admin, dev.secretKey, user.token, stranger.token];

    // A developer's authenticated calls on every route.
    const pr = await createPaymentRequest(app, dev.secretKey, user.walletId);
    expectOk(await getStatus(app, dev.secretKey, pr));
    expectOk(await lookupAccount(app, dev.secretKey, user.username));
    const tx = await approve(app, user.token, pr);
    expectOk(await getTransaction(app, dev.secretKey, tx));
    expectOk(await cancel(app, dev.secretKey, await createPaymentRequest(app, dev.secretKey, user.walletId)));

    // The admin door: a key issued (its full value is in the response once) and revoked.
    const issued = await gql(app.baseUrl, 'mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId secretKey } }', { d: dev.developerId }, admin);
    const revokedKey = issued.body.data.issueSecretKey.secretKey as string;
    credentials.push(revokedKey);
    await gql(app.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: issued.body.data.issueSecretKey.keyId }, admin);
    const wrongAdmin = 'wrong-admin-token-0123456789abcdef';
    credentials.push(wrongAdmin);
    await gql(app.baseUrl, '{ developers { nodes { id } } }', {}, wrongAdmin);

    // Rejected keys of every kind.
    const tampered = `${dev.secretKey.slice(0, -4)}${dev.secretKey.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const otherEnv = `sk_live_${dev.secretKey.slice('sk_test_'.length)}`;
    const forged = `sk_test_${await new SignJWT({ dev: dev.developerId, env: 'test' })
      .setProtectedHeader({ alg: 'HS256', kid: randomUUID(), typ: 'JWT' })
      .sign(new TextEncoder().encode('someone-elses-signing-secret-0123456789'))}`;
    const garbage = 'sk_test_garbage-garbage-garbage';
    credentials.push(tampered, otherEnv, forged, garbage);
    for (const key of [tampered, otherEnv, forged, garbage, revokedKey]) expectError(await getStatus(app, key, pr), 401, 'Invalid secret key');
    for (const key of [tampered, forged]) {
      const res = await gql(app.baseUrl, '{ __typename }', {}, key);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
    const basic = `Basic ${Buffer.from('merchant:hunter2-password').toString('base64')}`;
    credentials.push(basic);
    expectError(await http(app.baseUrl, `${API}/wallet/payment-request/${pr}`, { headers: { authorization: basic } }), 401);

    // User tokens over HTTP GraphQL: good, expired and signed by someone else.
    const expired = await mintUserToken(app.config, user.userId, -60);
    const foreign = await mintUserToken({ ...app.config, userTokenSecret: 'not-the-identity-service-secret-0123' }, user.userId);
    credentials.push(expired, foreign);
    expect((await gql(app.baseUrl, '{ myPendingPaymentRequests { id } }', {}, user.token)).body.data).toBeDefined();
    for (const token of [expired, foreign]) {
      const res = await gql(app.baseUrl, '{ myPendingPaymentRequests { id } }', {}, token);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }

    // graphql-ws: an accepted connection with a live subscription, and refused ones (4401).
    const client = wsClient(app.baseUrl, user.token);
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await untilSubscribed(app.gateway.services.eventHub, 1);
    const delivered = await createPaymentRequest(app, dev.secretKey, user.walletId);
    expect((await sub.next()).paymentRequested.id).toBe(delivered);
    sub.dispose();
    await client.dispose();
    for (const token of [expired, foreign, admin, dev.secretKey]) {
      const code = await new Promise<number>((resolve) => {
        wsClient(app.baseUrl, token, { onClose: (closeCode) => resolve(closeCode) });
      });
      expect(code).toBe(4401);
    }
    // Every refused socket is gone from the server: whatever it logs about them has been written.
    await until(() => app.gateway.ws.wss.clients.size === 0, 10_000, 'the refused sockets to close');

    // The log was written (at trace), and has none of it.
    const log = app.logs.join('\n');
    expect(log).toContain('"msg":"secret key rejected"');
    expect(log).toContain('"msg":"request"');
    for (const credential of credentials) {
      expect(log).not.toContain(credential);
      // Nor a recognisable part of it (a JWT's payload or signature is the key too).
      for (const part of credential.replace(/^sk_(test|live)_/, '').split('.')) if (part.length >= 16) expect(log).not.toContain(part);
    }
    expect(log).not.toMatch(/sk_(test|live)_[A-Za-z0-9_-]/);
    expect(log).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}/); // no JWT (header or payload) of any kind
    expect(log).not.toMatch(/Bearer\s+\S/i);
    expect(log).not.toMatch(/Basic\s+\S/i);
    expect(log.toLowerCase()).not.toContain('hunter2');
  });
});
