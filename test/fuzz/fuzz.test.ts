import http from 'node:http';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import WebSocket from 'ws';
import type { GraphQLObjectType} from 'graphql';
import { GraphQLNonNull, getNamedType, isObjectType, type GraphQLField, type GraphQLSchema } from 'graphql';
import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { getSchema } from '../../src/schema.js';
import { recordSuite, suiteSize } from '../suite-size.js';

// Fuzzing every door (REST routes, GraphQL over HTTP, graphql-ws): whatever a client sends, the
// gateway never answers 5xx, always answers the Error body or coded GraphQL errors, never shows a
// stack or SQL, logs no error, and writes nothing on a call it refused (rows counted).
// `npm run test:fuzz -- --count N [--seed S]` runs N cases per door; CI runs the default.
const { count: COUNT, seed: SEED } = suiteSize('fuzz', { count: 700, embedded: 350 });
let app: TestApp;
let schema: GraphQLSchema;
const creds: Record<string, string | undefined> = {};
const ids: string[] = [];
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '1000000', LOOKUP_LIMIT_PER_MINUTE: '1000000', WS_MAX_CONNECTIONS_PER_USER: '1000' } });
  schema = await getSchema();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 1000, username: 'fuzzuser' });
  Object.assign(creds, { none: undefined, developer: dev.secretKey, user: user.token, admin: app.config.adminToken, garbage: 'sk_test_garbage.x.y' });
  ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1), user.walletId, dev.developerId, dev.keyId, user.userId);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

const TABLES = ['payment_requests', 'transactions', 'ledger_entries', 'idempotency_keys', 'wallets', 'users', 'developers', 'secret_keys'];
/** Row counts of the tables a call could write; an Idempotency-Key call may store its (refusal) answer by design (SPEC §10). */
async function rowCounts(withKeys = true): Promise<string> {
  const tables = withKeys ? TABLES : TABLES.filter((t) => t !== 'idempotency_keys');
  const [row] = await app.db.orm.em.fork().execute(`select ${tables.map((t) => `(select count(*) from ${t}) as ${t}`).join(', ')}`);
  return JSON.stringify(row);
}

const LEAK = [/\bat [\w.<>]+ \(/, /\.(ts|js):\d+/, /"stack"/, /\bselect\b[^"]{0,80}\bfrom\b/i, /\binsert into\b/i, /syntax error at or near/i, /\brelation "/i, /node_modules/];
const leaks = (text: string) => LEAK.filter((r) => r.test(text)).map(String);
const errorLogs = (from: number) => app.logs.slice(from).filter((l) => /"level":(50|60)/.test(l));

// ---- arbitraries ---------------------------------------------------------------------------

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '%00', '..', '../../etc/passwd', "' or 1=1 --", '${7*7}', '\uFFFF', '\uD800', 'null', 'undefined', '-1', '1e309', 'NaN'),
  fc.uuid(),
  fc.constantFrom(...['0', '1']).map(() => ids[0]!),
  fc.nat({ max: 5 }).map((n) => 'x'.repeat(10 ** n)),
);
const jsonish: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  nasty,
  fc.double(),
  fc.constantFrom(null, true, 0, -0.001, 1e21, 12.345, 1_000_001, '1.00', '10', [], {}),
);
const requestPaymentBody = fc.record(
  { walletId: fc.oneof(jsonish, fc.constant(ids[1])), amount: jsonish, description: jsonish, merchantName: jsonish, extra: jsonish },
  { requiredKeys: [] },
);
const auth = fc.constantFrom('none', 'developer', 'user', 'admin', 'garbage', 'malformed');
const authHeader = (who: string): Record<string, string> =>
  who === 'malformed' ? { authorization: 'Basic Zm9vOmJhcg==' } : creds[who] ? { authorization: `Bearer ${creds[who]}` } : {};

/** Percent-encodes the UTF-8 bytes of any string (lone surrogates included, which encodeURIComponent refuses). */
const pct = (s: string): string => Array.from(Buffer.from(s, 'utf8'), (b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('');
const pathParam = nasty.map((s) => pct(String(s)).slice(0, 3000));
const restRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'PURGE'),
  path: fc.oneof(
    fc.constant('/api/v1/wallet/request-payment'),
    pathParam.map((p) => `/api/v1/wallet/payment-request/${p}`),
    pathParam.map((p) => `/api/v1/wallet/payment-request/${p}/cancel`),
    pathParam.map((p) => `/api/v1/wallet/transaction/${p}`),
    pathParam.map((p) => `/api/v1/account/${p}`),
    fc.constantFrom('/healthz', '/readyz', '/metrics', '/docs', '/docs/openapi.yaml', '/graphql', '/', '/api/v1', '/api/v1/wallet/%zz', '/api/v1/wallet/request-payment/..%2f..%2f', '/%00'),
    fc.string().map((s) => `/${pct(s)}`),
  ),
  query: fc.option(fc.string().map((s) => `?${pct(s)}=${pct(s)}&variables=%7B%22a%22%3A1%7D`)),
  who: auth,
  contentType: fc.constantFrom(undefined, 'application/json', 'application/json; charset=utf-8', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json', 'multipart/form-data; boundary=x'),
  encoding: fc.constantFrom(undefined, undefined, 'gzip', 'gzip-lie', 'br', 'identity'),
  body: fc.oneof(
    fc.constant(undefined),
    requestPaymentBody.map((b) => JSON.stringify(b)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string(),
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.nat({ max: 40 }).map((n) => `${'['.repeat(n * 10)}${']'.repeat(n * 10)}`),
    fc.constant(`{"walletId":"${'x'.repeat(70_000)}"}`),
  ),
  idempotencyKey: fc.option(fc.oneof(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) }), fc.constantFrom('k1', 'k1', ' k', 'x'.repeat(300)))),
  requestId: fc.option(fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 200 })),
});

/** A small deterministic generator (mulberry32) for the parts of a case derived from its seed. */
interface Rnd {
  nextInt(min: number, max: number): number;
}
function rng(seed: number): Rnd {
  let s = seed >>> 0;
  return {
    nextInt(min, max) {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = s;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return min + (((t ^ (t >>> 14)) >>> 0) % (max - min + 1));
    },
  };
}

/** A selection set for a type, random subset of its fields, up to `depth` levels. */
function selection(type: GraphQLObjectType, depth: number, rnd: Rnd): string {
  const fields = Object.values(type.getFields());
  const picked = fields.filter(() => rnd.nextInt(0, 2) > 0);
  const parts = (picked.length ? picked : [fields[0]!]).map((f) => {
    const named = getNamedType(f.type);
    if (isObjectType(named)) return depth > 0 ? `${f.name} ${selection(named, depth - 1, rnd)}` : '';
    return f.name;
  });
  return `{ __typename ${parts.join(' ')} }`;
}

const typeNames = ['ID!', 'ID', 'String!', 'String', 'Int', 'Float!', 'Boolean', '[ID!]!', 'RequestPaymentInput!', 'WalletStatus!', 'CreateUserInput!', 'PaymentRequestFilter'];
/** A GraphQL document built from the schema's own root fields, with random aliases, arguments, variables and fragments. */
const graphqlRequest = fc.record({
  op: fc.constantFrom('query', 'mutation', 'subscription'),
  fields: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
  flood: fc.nat({ max: 20 }),
  args: fc.array(jsonish, { maxLength: 6 }),
  varTypes: fc.array(fc.constantFrom(...typeNames), { maxLength: 6 }),
  inline: fc.boolean(),
  fragment: fc.boolean(),
  depth: fc.nat({ max: 6 }),
  who: auth,
  garbage: fc.option(fc.oneof(fc.string(), fc.constantFrom('{', '{ a { b { c } } }', 'query Q($a: ID!) { paymentRequest(id: $a) { id } }', '{ __schema { types { name } } }', 'subscription { paymentRequested { id } }', '{ paymentRequest(id: "x") { id ...F } } fragment F on PaymentRequest { ...F }'))),
  operationName: fc.option(fc.constantFrom('Q', 'Missing', '')),
  persisted: fc.boolean(),
  seed: fc.nat(),
});

type GraphqlCase = typeof graphqlRequest extends fc.Arbitrary<infer T> ? T : never;
function buildDocument(g: GraphqlCase, rnd: Rnd): { query: string; variables: Record<string, unknown> } {
  if (g.garbage !== null) return { query: g.garbage, variables: Object.fromEntries(g.args.map((a, i) => [`v${i}`, a])) };
  const root = g.op === 'query' ? schema.getQueryType() : g.op === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType();
  const all = Object.values(root!.getFields()) as GraphQLField<unknown, unknown>[];
  const variables: Record<string, unknown> = {};
  const defs: string[] = [];
  let v = 0;
  const chosen = [...g.fields, ...Array.from({ length: g.flood > 17 ? 12 : 0 }, (_, i) => i)];
  const parts = chosen.map((n, i) => {
    const field = all[n % all.length]!;
    const args = field.args
      .map((a) => {
        if (g.inline) return `${a.name}: ${JSON.stringify(g.args[v++ % Math.max(1, g.args.length)] ?? null)}`.replace(/"(\w+)":/g, '$1:');
        const name = `v${v}`;
        const type = g.varTypes[v] ?? String(a.type);
        variables[name] = g.args[v] ?? (a.type instanceof GraphQLNonNull ? null : undefined);
        v++;
        defs.push(`$${name}: ${type}`);
        return `${a.name}: $${name}`;
      })
      .join(', ');
    const named = getNamedType(field.type);
    const sel = isObjectType(named) ? selection(named, g.depth, rnd) : '';
    return `a${i}: ${field.name}${args ? `(${args})` : ''} ${sel}`;
  });
  const body = g.fragment ? `{ ...Root }` : `{ ${parts.join(' ')} }`;
  const fragment = g.fragment ? ` fragment Root on ${root!.name} { ${parts.join(' ')} }` : '';
  return { query: `${g.op} Q${defs.length ? `(${[...new Set(defs)].join(', ')})` : ''} ${body}${fragment}`, variables };
}

// ---- one call through a real client ---------------------------------------------------------

interface Reply {
  status: number;
  contentType: string;
  text: string;
}
function call(method: string, path: string, headers: Record<string, string>, body?: Buffer | string): Promise<Reply | { clientError: string }> {
  return new Promise((resolve) => {
    let req: http.ClientRequest;
    try {
      req = http.request(`${app.baseUrl}${path}`, { method, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => resolve({ clientError: e.message }));
      });
    } catch (e) {
      resolve({ clientError: `not sendable: ${(e as Error).message}` });
      return;
    }
    req.on('error', (e) => resolve({ clientError: e.message }));
    req.end(body);
  });
}

/** Problems with one HTTP reply (empty when the gateway behaved). */
function judgeHttp(reply: Reply, graphql: boolean): string[] {
  const problems: string[] = [];
  if (reply.status >= 500) problems.push(`status ${reply.status}`);
  problems.push(...leaks(reply.text).map((l) => `leak ${l}`));
  if (!/json/.test(reply.contentType) || reply.text === '') {
    if (reply.status >= 400 && reply.status !== 405 && reply.text !== '') problems.push(`non-JSON error body (${reply.contentType})`);
    return problems;
  }
  const body = JSON.parse(reply.text) as any;
  if (graphql && Array.isArray(body?.errors)) {
    for (const e of body.errors) if (typeof e?.extensions?.code !== 'string') problems.push(`uncoded GraphQL error ${JSON.stringify(e).slice(0, 200)}`);
    if (body.errors.some((e: any) => e?.extensions?.code === 'INTERNAL_SERVER_ERROR')) problems.push('INTERNAL_SERVER_ERROR');
  } else if (reply.status >= 400 && !(body?.statusCode === reply.status && typeof body?.message === 'string')) {
    problems.push(`not the Error body: ${reply.text.slice(0, 200)}`);
  }
  return problems;
}

const refused = (reply: Reply, graphql: boolean): boolean => {
  if (reply.status >= 400) return true;
  if (!graphql || !/json/.test(reply.contentType)) return false;
  const body = JSON.parse(reply.text) as any;
  return Array.isArray(body?.errors) && (body.data == null || Object.values(body.data).every((x) => x === null));
};

async function check(label: string, run: () => Promise<Reply | { clientError: string }>, graphql: boolean, idempotencyKey = false): Promise<void> {
  const logMark = app.logs.length;
  const before = await rowCounts(!idempotencyKey);
  const reply = await run();
  if ('clientError' in reply) {
    if (reply.clientError.startsWith('not sendable')) return; // Node's client refuses to send it at all
    throw new Error(`${label}: connection error ${reply.clientError}`);
  }
  const problems = judgeHttp(reply, graphql);
  if (refused(reply, graphql) && (await rowCounts(!idempotencyKey)) !== before) problems.push('a refused call changed the database');
  problems.push(...errorLogs(logMark).map((l) => `error logged: ${l.slice(0, 300)}`));
  if (problems.length) throw new Error(`${label} → ${reply.status} ${reply.text.slice(0, 300)}\n  ${problems.join('\n  ')}`);
}


const params = (door: string): fc.Parameters<unknown> => ({
  numRuns: COUNT,
  seed: SEED,
  endOnFailure: false,
  reporter: (out) => {

    recordSuite('fuzz', door, { cases: out.numRuns, failures: out.failed ? 1 : 0, seed: out.seed, counterexample: out.failed ? fc.stringify(out.counterexample) : undefined });
    if (out.failed) throw new Error(`${fc.defaultReportMessage(out) ?? 'failed'}\n${String((out.errorInstance as Error | undefined)?.message ?? out.errorInstance)}`);
  },
});

test('REST routes and other paths: any method, path, header and body', async () => {
  await fc.assert(
    fc.asyncProperty(restRequest, async (r) => {
      const headers: Record<string, string> = { ...authHeader(r.who) };
      let body: Buffer | string | undefined = r.body;
      if (r.contentType) headers['content-type'] = r.contentType;
      if (r.idempotencyKey !== null) headers['idempotency-key'] = r.idempotencyKey;
      if (r.requestId !== null) headers['x-request-id'] = r.requestId;
      if (r.encoding === 'gzip' && body !== undefined) body = gzipSync(Buffer.from(body));
      if (r.encoding) headers['content-encoding'] = r.encoding === 'gzip-lie' ? 'gzip' : r.encoding;
      const path = `${r.path}${r.query ?? ''}`;
      await check(`${r.method} ${path.slice(0, 200)} [${r.who}]`, () => call(r.method, path, headers, r.method === 'GET' || r.method === 'HEAD' ? undefined : body), r.path.startsWith('/graphql'), r.idempotencyKey !== null);
    }),
    params('rest'),
  );
}, 600_000);

test('GraphQL over HTTP: documents from the schema with aliases, depth, fragments and wrong variable types', async () => {
  await fc.assert(
    fc.asyncProperty(graphqlRequest, async (g) => {
      const doc = buildDocument(g, rng(g.seed));
      const payload: Record<string, unknown> = { query: doc.query, variables: doc.variables };
      if (g.operationName !== null) payload.operationName = g.operationName;
      if (g.persisted) payload.extensions = { persistedQuery: { version: 1, sha256Hash: 'ab'.repeat(32) } };
      const headers = { ...authHeader(g.who), 'content-type': 'application/json' };
      await check(`graphql ${doc.query.slice(0, 300)} ${JSON.stringify(doc.variables).slice(0, 200)} [${g.who}]`, () => call('POST', '/graphql', headers, JSON.stringify(payload)), true);
    }),
    params('graphql'),
  );
}, 600_000);

const wsMessage = fc.oneof(
  fc.constantFrom('init', 'init', 'init-bad', 'init-user').map((k) => ({ kind: k })),
  graphqlRequest.map((g) => ({ kind: 'subscribe', g })),
  fc.record({ kind: fc.constant('raw'), text: fc.oneof(fc.string(), fc.jsonValue().map((v) => JSON.stringify(v))) }),
  fc.constantFrom('connection_ack', 'next', 'error', 'complete', 'ping', 'pong', 'unknown').map((t) => ({ kind: 'type', t })),
);

test('graphql-ws: protocol messages in any order, any payload', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(wsMessage, { minLength: 1, maxLength: 6 }), fc.constantFrom('user', 'none', 'developer', 'garbage'), fc.nat(), async (messages, who, seed) => {
      const logMark = app.logs.length;
      const socket = new WebSocket(`${app.baseUrl.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      const frames: string[] = [];
      socket.on('message', (d) => frames.push(String(d)));
      const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        socket.once('open', () => resolve());
        socket.once('close', () => resolve());
      });
      const rnd = rng(seed);
      let n = 0;
      for (const m of messages) {
        if (socket.readyState !== WebSocket.OPEN) break;
        let text: string;
        if (m.kind === 'init') text = JSON.stringify({ type: 'connection_init', payload: authHeader(who).authorization ? { authorization: authHeader(who).authorization } : {} });
        else if (m.kind === 'init-user') text = JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${creds.user}` } });
        else if (m.kind === 'init-bad') text = JSON.stringify({ type: 'connection_init', payload: 'x' });
        else if (m.kind === 'subscribe') text = JSON.stringify({ type: 'subscribe', id: String(n++ % 3), payload: buildDocument((m as any).g, rnd) });
        else if (m.kind === 'type') text = JSON.stringify({ type: (m as any).t, id: '0', payload: {} });
        else text = (m as any).text;
        socket.send(text);
        // Let the server answer before the next frame (ordering matters to the protocol).
        await new Promise((r) => setTimeout(r, 5));
      }
      socket.close(1000);
      const { code, reason } = await closed;
      const problems: string[] = [];
      if (code === 4500 || code === 1011) problems.push(`closed ${code} ${reason}`);
      for (const f of [...frames, reason]) problems.push(...leaks(f).map((l) => `leak ${l} in ${f.slice(0, 200)}`));
      for (const f of frames) {
        const msg = JSON.parse(f) as any;
        const errors = msg.type === 'error' ? msg.payload : msg.type === 'next' ? msg.payload?.errors ?? [] : [];
        for (const e of errors) if (typeof e?.extensions?.code !== 'string' || e.extensions.code === 'INTERNAL_SERVER_ERROR') problems.push(`bad error ${JSON.stringify(e).slice(0, 200)}`);
      }
      problems.push(...errorLogs(logMark).map((l) => `error logged: ${l.slice(0, 300)}`));
      if (problems.length) throw new Error(`${messages.map((m) => m.kind).join(',')} [${who}]\n  ${problems.join('\n  ')}`);
    }),
    params('ws'),
  );
}, 600_000);
