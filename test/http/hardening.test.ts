// Hardening: security headers, Apollo CSRF prevention, no batching, introspection and landing page
// off in production, GraphQL depth and cost limits (HTTP and WebSocket), WebSocket payload and
// per-user connection limits.
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { useTestApp, factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { expectOk, type HttpResult, poll, until } from '../helpers/expect.js';
import { createPaymentRequest, getStatus, REST_TEST_ENV } from '../helpers/rest.js';
import { subscribe, untilSubscribed, wsClient, type Sub } from '../helpers/ws.js';

const MAX_CONNECTIONS = 2;

let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({ env: { ...REST_TEST_ENV, WS_MAX_CONNECTIONS_PER_USER: String(MAX_CONNECTIONS) } }, (x) => ({ app, f } = x));

async function developerCount(target: TestApp = app): Promise<number> {
  const rows = await target.db.orm.em.fork().execute<Array<{ n: number }>>('select count(*)::int as n from developers');
  return rows[0]!.n;
}

/** Raw fetch, for requests the JSON helper would not send (other content types, batches): off the contract on purpose, so not checked against the document. */
async function raw(path: string, init: RequestInit, base = app.baseUrl): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${base}${path}`, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('security headers', () => {
  const expectApiHeaders = (headers: Headers): void => {
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    const csp = headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/(^|;)\s*default-src 'none'\s*(;|$)/);
    expect(csp).toMatch(/(^|;)\s*frame-ancestors 'none'\s*(;|$)/);
    expect(headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    expect(headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(headers.get('referrer-policy')).toBe('no-referrer');
    expect(headers.get('x-powered-by')).toBeNull();
  };

  test('a successful REST response carries them', async () => {
    const dev = await f.developer();
    const user = await f.user();
    const id = await createPaymentRequest(app, dev.secretKey, user.walletId);
    const res = await getStatus(app, dev.secretKey, id);
    expectOk(res);
    expectApiHeaders(res.headers);
  });

  test('error responses carry them too (401, 404, 405, 413)', async () => {
    const dev = await f.developer();
    const responses: HttpResult[] = [
      await getStatus(app, undefined, '00000000-0000-4000-8000-000000000000'),
      await http(app.baseUrl, '/api/v1/nowhere'),
      await http(app.baseUrl, '/api/v1/wallet/request-payment', { method: 'GET' }),
      await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, rawBody: JSON.stringify({ pad: 'x'.repeat(70_000) }), headers: { 'content-type': 'application/json' } }),
    ];
    expect(responses.map((r) => r.status)).toEqual([401, 404, 405, 413]);
    for (const res of responses) expectApiHeaders(res.headers);
  });

  test('GraphQL over HTTP and the probes carry them', async () => {
    const graphql = await gql(app.baseUrl, '{ __typename }');
    expect(graphql.body).toEqual({ data: { __typename: 'Query' } });
    expectApiHeaders(graphql.headers);
    expectApiHeaders((await http(app.baseUrl, '/healthz')).headers);
    expectApiHeaders((await http(app.baseUrl, '/metrics')).headers);
  });
});

describe('Apollo CSRF prevention', () => {
  const query = encodeURIComponent('{ __typename }');

  test('a GET query without a preflight-forcing header is refused with 400', async () => {
    const res = await raw(`/graphql?query=${query}`, { method: 'GET' });
    expect(res.status).toBe(400);
    expect(res.text).toMatch(/CSRF/);
    expect(res.text).not.toContain('"__typename"');
  });

  test('the same GET with apollo-require-preflight is answered', async () => {
    const res = await raw(`/graphql?query=${query}`, { method: 'GET', headers: { 'apollo-require-preflight': 'true' } });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ data: { __typename: 'Query' } });
  });

  test.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x'])(
    'a POST sent as %s (a form a browser can submit cross-site) is refused and runs nothing',
    async (contentType) => {
      const before = await developerCount();
      const res = await raw('/graphql', {
        method: 'POST',
        headers: { 'content-type': contentType, authorization: `Bearer ${app.config.adminToken}` },
        body: JSON.stringify({ query: 'mutation { createDeveloper(name: "csrf") { id } }' }),
      });
      expect([400, 415]).toContain(res.status);
      expect(res.text).not.toContain('createDeveloper":{');
      expect(await developerCount()).toBe(before);
    },
  );

  test('a mutation over GET is refused even with the preflight header', async () => {
    const before = await developerCount();
    const mutation = encodeURIComponent('mutation { createDeveloper(name: "via-get") { id } }');
    const res = await raw(`/graphql?query=${mutation}`, {
      method: 'GET',
      headers: { 'apollo-require-preflight': 'true', authorization: `Bearer ${app.config.adminToken}` },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await developerCount()).toBe(before);
  });
});

describe('batched requests', () => {
  test('a JSON array of operations is refused with 400 and none of them runs', async () => {
    const before = await developerCount();
    const res = await raw('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${app.config.adminToken}` },
      body: JSON.stringify([{ query: 'mutation { createDeveloper(name: "batch-1") { id } }' }, { query: '{ __typename }' }]),
    });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('"data"');
    expect(await developerCount()).toBe(before);
  });

  test('a one-element array is refused as well', async () => {
    const res = await raw('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ query: '{ __typename }' }]),
    });
    expect(res.status).toBe(400);
    expect(res.text).not.toContain('"data"');
  });
});

const INTROSPECTION = '{ __schema { types { name } } }';
const TYPE_INTROSPECTION = '{ __type(name: "PaymentRequest") { fields { name } } }';

describe('development: introspection and landing page on', () => {
  test('introspection answers', async () => {
    const res = await gql(app.baseUrl, INTROSPECTION);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const names = (res.body.data.__schema.types as Array<{ name: string }>).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['PaymentRequest', 'Transaction', 'Mutation']));
  });

  test('GET /graphql for a browser serves the landing page', async () => {
    const res = await raw('/graphql', { method: 'GET', headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<html/i);
  });
});

describe('production: introspection and landing page off', () => {
  let prod: TestApp;
  const secret = () => randomBytes(24).toString('base64url');
  beforeAll(async () => {
    prod = await startTestApp({
      env: { ...REST_TEST_ENV, APP_ENV: 'production', KEY_SIGNING_SECRET: secret(), USER_TOKEN_SECRET: secret(), ADMIN_TOKEN: secret() },
    });
  });
  afterAll(async () => {
    await prod?.close();
  });

  test('the gateway really runs in production (sk_live_ keys)', async () => {
    expect(prod.config.appEnv).toBe('production');
    const dev = await factories(prod).developer();
    expect(dev.secretKey.startsWith('sk_live_')).toBe(true);
  });

  test.each([
    ['__schema', INTROSPECTION],
    ['__type', TYPE_INTROSPECTION],
  ])('introspection through %s is refused', async (_label, query) => {
    const res = await gql(prod.baseUrl, query);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/introspection is not allowed/i) })]);
    expect(JSON.stringify(res.body)).not.toContain('PaymentRequestStatus');
  });

  test('introspection is refused to the admin token as well', async () => {
    const res = await gql(prod.baseUrl, INTROSPECTION, {}, prod.config.adminToken);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
  });

  test('ordinary queries still work (only introspection is off)', async () => {
    const res = await gql(prod.baseUrl, '{ __typename }');
    expect(res.body).toEqual({ data: { __typename: 'Query' } });
  });

  test('GET /graphql for a browser does not serve the landing page', async () => {
    const res = await raw('/graphql', { method: 'GET', headers: { accept: 'text/html' } }, prod.baseUrl);
    expect(res.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    expect(res.text).not.toMatch(/<html|<!doctype|<script/i);
    expect(res.status).toBe(400);
  });
});

/** A query `depth` levels deep through the introspection types (the schema's own types are shallow). */
function deepQuery(depth: number): string {
  // __type(1) fields(2) type(3) ofType(4..depth-1) name(depth)
  let inner = 'name';
  for (let i = 0; i < depth - 4; i++) inner = `ofType { ${inner} }`;
  return `{ __type(name: "Query") { fields { type { ${inner} } } } }`;
}

/** Waits for a graphql-ws operation to fail (its errors) or to deliver. */
async function settle<T>(sub: Sub<T>, timeoutMs = 2000): Promise<unknown[]> {
  await until(() => sub.errors.length > 0 || sub.values.length > 0, timeoutMs, 'the operation failing or answering', 10);
  return sub.errors;
}

const errorMessages = (errors: unknown[]): string[] =>
  errors.flatMap((e) => (Array.isArray(e) ? e : [e])).map((e) => String((e as { message?: unknown }).message ?? e));

describe('GraphQL depth limit (GRAPHQL_MAX_DEPTH, default 8)', () => {
  test('a query 8 levels deep is answered', async () => {
    const res = await gql(app.baseUrl, deepQuery(8));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.__type.fields.length).toBeGreaterThan(0);
  });

  test('a query 9 levels deep is refused with an error, over HTTP', async () => {
    const res = await gql(app.baseUrl, deepQuery(9));
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/depth limit of 8 exceeded, found 9/) })]);
  });

  test('and over graphql-ws, where the connection stays usable', async () => {
    const user = await f.user();
    const client = wsClient(app.baseUrl, user.token);
    try {
      const tooDeep = subscribe(client, deepQuery(9));
      expect(errorMessages(await settle(tooDeep))).toEqual([expect.stringMatching(/depth limit of 8 exceeded, found 9/)]);
      expect(tooDeep.values).toEqual([]);
      const fine = subscribe<{ __type: { fields: unknown[] } }>(client, deepQuery(8));
      expect((await fine.next()).__type.fields.length).toBeGreaterThan(0);
    } finally {
      await client.dispose();
    }
  });
});

describe('GraphQL cost limit (GRAPHQL_MAX_COST 2,000 for secret keys and user tokens, GRAPHQL_MAX_COST_ADMIN 25,000)', () => {
  const page = (first: number) => `{ paymentRequests(first: ${first}) { nodes { id status } } }`;

  test('a page of 10 is answered', async () => {
    const res = await gql(app.baseUrl, page(10), {}, app.config.adminToken);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(Array.isArray(res.body.data.paymentRequests.nodes)).toBe(true);
  });

  test('pages of pages that cost too much are refused before they run, over HTTP', async () => {
    // 1 + 200 × (1 + 1 + 200 × 3) = 120,401
    const res = await gql(app.baseUrl, '{ wallets(first: 200) { nodes { paymentRequests(first: 200) { nodes { id status } } } } }', {}, app.config.adminToken);
    expect(res.status).toBe(400);
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/^Query cost 120,401 exceeds the limit of 25,000/) })]);
  });

  test('many aliases of one field cost too much as well', async () => {
    // 10 (a list without paging) × (1 + 200) = 2,010
    const aliases = Array.from({ length: 200 }, (_, i) => `a${i}: id`).join(' ');
    const res = await gql(app.baseUrl, `{ myPendingPaymentRequests { ${aliases} } }`);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ message: expect.stringMatching(/^Query cost 2,010 exceeds the limit of 2,000/) })]);
  });

  test('and over graphql-ws', async () => {
    const user = await f.user();
    const client = wsClient(app.baseUrl, user.token);
    try {
      const costly = subscribe(client, page(5000));
      expect(errorMessages(await settle(costly))).toEqual([expect.stringMatching(/^Query cost 15,001 exceeds the limit of 2,000/)]);
      // The cheap page passes validation and reaches the resolver (which wants the admin token).
      const cheap = subscribe(client, page(10));
      expect(errorMessages(await settle(cheap))).toEqual([expect.stringMatching(/admin token/i)]);
      // A subscription within the limits is accepted on the same connection.
      const events = app.gateway.services.eventHub;
      const before = events.stats.subscriptions;
      const sub = subscribe(client, 'subscription { paymentRequested { id } }');
      await untilSubscribed(events, before + 1);
      expect(sub.errors).toEqual([]);
    } finally {
      await client.dispose();
    }
  });
});

interface RawConnection {
  socket: WebSocket;
  /** 'ack' once the server acknowledged the connection, or the close code if it closed first. */
  outcome: Promise<'ack' | number>;
  closed: Promise<number>;
}

/** Resolves like `promise`, or rejects after `ms` (so a missing close fails fast instead of hanging). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A graphql-transport-ws connection by hand: connection_init with the given payload. */
function connect(token: string, extraPayload: Record<string, unknown> = {}): RawConnection {
  const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
  const settled = new Promise<'ack' | number>((resolve) => {
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}`, ...extraPayload } })));
    socket.on('message', (data) => {
      if ((JSON.parse(String(data)) as { type: string }).type === 'connection_ack') resolve('ack');
    });
    void closed.then(resolve);
    socket.on('error', () => undefined);
  });
  return { socket, outcome: within(settled, 3000, 'connection_ack or close'), closed };
}

async function closeAll(connections: RawConnection[]): Promise<void> {
  for (const c of connections) if (c.socket.readyState !== WebSocket.CLOSED) c.socket.close(1000);
  await within(Promise.all(connections.map((c) => c.closed)), 3000, 'closing the test sockets');
}

/** Waits until the server has seen every socket but `n` go away. */
async function untilServerSockets(n: number, timeoutMs = 2000): Promise<void> {
  await poll(`the server's sockets down to ${n}`, () => app.gateway.ws.wss.clients.size, (size) => size === n, timeoutMs, 10);
}

describe('WebSocket payload limit (64 KiB)', () => {
  test('a message over 64 KiB closes the socket with 1009', async () => {
    const user = await f.user();
    const conn = connect(user.token, { padding: 'x'.repeat(65 * 1024) });
    try {
      expect(await conn.outcome).toBe(1009);
    } finally {
      await closeAll([conn]);
    }
  });

  test('a message just under it is accepted', async () => {
    const user = await f.user();
    const conn = connect(user.token, { padding: 'x'.repeat(60 * 1024) });
    try {
      expect(await conn.outcome).toBe('ack');
    } finally {
      await closeAll([conn]);
    }
  });

  test('an over-long message after the handshake closes the socket with 1009 too', async () => {
    const user = await f.user();
    const conn = connect(user.token);
    try {
      expect(await conn.outcome).toBe('ack');
      const padding = 'x'.repeat(70 * 1024);
      conn.socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { paymentRequested { id } } # ${padding}` } }));
      expect(await within(conn.closed, 3000, 'close')).toBe(1009);
    } finally {
      await closeAll([conn]);
    }
  });
});

describe(`WebSocket connections per user (WS_MAX_CONNECTIONS_PER_USER=${MAX_CONNECTIONS})`, () => {
  test('the connection over the limit is closed with 4429; another user still connects; a freed slot is reused', async () => {
    await untilServerSockets(0);
    const alice = await f.user();
    const bob = await f.user();
    const open: RawConnection[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS; i++) {
        const c = connect(alice.token);
        open.push(c);
        expect(await c.outcome).toBe('ack');
      }
      const over = connect(alice.token);
      open.push(over);
      expect(await over.outcome).toBe(4429);

      const other = connect(bob.token);
      open.push(other);
      expect(await other.outcome).toBe('ack');

      // One of Alice's connections ends: the server frees her slot, and a new one is accepted.
      open[0]!.socket.close(1000);
      await open[0]!.closed;
      await untilServerSockets(MAX_CONNECTIONS); // Alice's second and Bob's
      const again = connect(alice.token);
      open.push(again);
      expect(await again.outcome).toBe('ack');
      // And she is at her limit again.
      const overAgain = connect(alice.token);
      open.push(overAgain);
      expect(await overAgain.outcome).toBe(4429);
    } finally {
      await closeAll(open);
    }
  });

  test('a refused connection never runs a subscription', async () => {
    await untilServerSockets(0);
    const carol = await f.user();
    const dev = await f.developer();
    const held = [connect(carol.token), connect(carol.token)];
    try {
      for (const c of held) expect(await c.outcome).toBe('ack');
      const hub = app.gateway.services.eventHub;
      const subscriptionsBefore = hub.stats.subscriptions;
      // Over the limit, the connection is refused (4429) before it is acknowledged: no operation can
      // ever run on it (graphql-ws runs none before connection_ack; a subscribe sent earlier closes it).
      const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      const frames: Array<{ type: string }> = [];
      socket.on('message', (d) => frames.push(JSON.parse(String(d))));
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      socket.once('open', () => {
        socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${carol.token}` } }));
      });
      socket.on('message', (d) => {
        if (JSON.parse(String(d)).type === 'connection_ack') socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { paymentRequested { id } }' } }));
      });
      expect(await within(closed, 3000, 'close')).toBe(4429);
      expect(frames.filter((x) => x.type === 'connection_ack' || x.type === 'next')).toEqual([]);
      // On the server: no subscription of carol's was registered, and an event for her finds none but her held sockets' (none).
      expect(hub.stats.subscriptions).toBe(subscriptionsBefore);
      await createPaymentRequest(app, dev.secretKey, carol.walletId);
      expect(hub.stats.subscriptions).toBe(subscriptionsBefore);
    } finally {
      await closeAll(held);
    }
  });

  test('refused (4401) connections do not use up a user’s slots', async () => {
    await untilServerSockets(0);
    const dave = await f.user();
    const bad = Array.from({ length: MAX_CONNECTIONS + 1 }, () => connect('not-a-token'));
    const good: RawConnection[] = [];
    try {
      for (const c of bad) expect(await c.outcome).toBe(4401);
      for (let i = 0; i < MAX_CONNECTIONS; i++) good.push(connect(dave.token));
      for (const c of good) expect(await c.outcome).toBe('ack');
    } finally {
      await closeAll([...bad, ...good]);
    }
  });
});
