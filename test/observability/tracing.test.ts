// OpenTelemetry tracing of the real process (`node dist/src/main.js`, what `npm start` runs) with
// OTEL_EXPORTER_OTLP_ENDPOINT pointing at a real OTLP/HTTP receiver this test starts: one trace
// per request from the HTTP span through the GraphQL operation and its resolver to the SQL
// statements (their shape only), the trace id in the request's log lines, webhook deliveries as
// client spans whose traceparent reaches the merchant, WebSocket operations as spans of their own.
import { rm } from 'node:fs/promises';
import { createTestDatabase, migratedDataDir, type TestDatabase } from '../helpers/db.js';
import { spawnGatewayOn, type GatewayProcess } from '../process/gateway-process.js';
import { startOtlpReceiver, SPAN_KIND, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { TEST_PIN, testConfig } from '../helpers/app.js';
import { subscribe, wsClient } from '../helpers/ws.js';
import { until, withDeadline } from '../helpers/expect.js';

let database: TestDatabase | undefined;
let dataDir: string | undefined;
let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
let merchant: Receiver;
let gateway: GatewayProcess;
const admin = testConfig().adminToken;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  merchant = await startReceiver();
  let db: Record<string, string>;
  if (process.env.TEST_DATABASE_URL) {
    database = await createTestDatabase();
    db = { DATABASE_URL: database.url! };
  } else {
    dataDir = await migratedDataDir('wg-tracing-');
    db = { DATA_DIR: dataDir };
  }
  gateway = await spawnGatewayOn(db, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'wallet-gateway-test',
    WEBHOOK_POLL_INTERVAL_MS: '100',
  });
}, 120_000);

afterAll(async () => {
  if (gateway && gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
  await merchant?.close();
  await otlp?.close();
  await database?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** A JSON request to the gateway under test. */
async function call(path: string, opts: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(`${gateway.baseUrl}${path}`, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...opts.headers,
    },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const gql = (query: string, variables: Record<string, unknown>, token: string) => call('/graphql', { token, body: { query, variables } });

/** The spans of one trace once `ready` holds for them (the exporter batches every 50 ms). */
async function traceOf(traceId: string, ready: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  const spans = () => otlp.spans.filter((s) => s.traceId === traceId);
  await until(() => ready(spans()), 15_000, `the spans of trace ${traceId}`);
  return spans();
}

/** The chain of span names from `span` up to its trace's root. */
function ancestry(spans: ReceivedSpan[], span: ReceivedSpan): string[] {
  const names = [span.name];
  let parent = spans.find((s) => s.spanId === span.parentSpanId);
  while (parent) {
    names.push(parent.name);
    parent = spans.find((s) => s.spanId === parent!.parentSpanId);
  }
  return names;
}

/** The gateway's JSON log lines so far. */
const logLines = (): Array<Record<string, unknown>> =>
  gateway.lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

describe('with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let secretKey: string;
  let walletId: string;
  let userToken: string;
  let endpointId: string;
  const phone = `0977${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;

  beforeAll(async () => {
    expect(logLines().some((l) => l.msg === 'tracing on')).toBe(true);
    const dev = await gql('mutation { createDeveloper(name: "Traced Shop") { id } }', {}, admin);
    const key = await gql('mutation($d: ID!) { issueSecretKey(developerId: $d) { secretKey } }', { d: dev.body.data.createDeveloper.id }, admin);
    secretKey = key.body.data.issueSecretKey.secretKey;
    const user = await gql(
      'mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId } }',
      { i: { username: `traced_${Date.now().toString(36)}`, phone, balance: 100, pin: TEST_PIN } },
      admin,
    );
    walletId = user.body.data.createUser.walletId;
    const { mintUserToken } = await import('../../src/auth/user-tokens.js');
    userToken = await mintUserToken(testConfig(), user.body.data.createUser.userId);
    const endpoint = await call('/api/v1/webhook-endpoints', { token: secretKey, body: { url: merchant.url } });
    expect(endpoint.status).toBe(200);
    endpointId = endpoint.body.id;
  });

  test('a REST create is one trace: HTTP span → GraphQL operation → resolver → SQL statements (shapes only); its log line carries the trace id', async () => {
    const requestId = `trace-create-${Date.now()}`;
    const description = `Traced order ${Date.now()}`;
    const created = await call('/api/v1/wallet/request-payment', {
      token: secretKey,
      headers: { 'X-Request-Id': requestId },
      body: { walletId, amount: 12.5, description, merchantName: 'Traced Shop', reference: 'order-secret-ref-42' },
    });
    expect(created.status).toBe(200);

    await until(() => logLines().some((l) => l.msg === 'request' && l.requestId === requestId), 10_000, 'the request log line');
    const line = logLines().find((l) => l.msg === 'request' && l.requestId === requestId)!;
    expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const traceId = line.trace_id as string;

    const name = 'POST /api/v1/wallet/request-payment';
    const spans = await traceOf(traceId, (s) => s.some((x) => x.name === name) && s.some((x) => x.name.startsWith('pg.query')));
    const http = spans.find((s) => s.name === name)!;
    expect(http).toMatchObject({ kind: SPAN_KIND.SERVER, parentSpanId: undefined, scope: '@opentelemetry/instrumentation-http' });
    expect(http.attributes).toMatchObject({ 'http.route': '/api/v1/wallet/request-payment', 'http.response.status_code': 200, 'http.request.method': 'POST' });
    expect(http.resource['service.name']).toBe('wallet-gateway-test');

    const operation = spans.find((s) => s.name === 'mutation RequestPayment')!;
    expect(operation).toMatchObject({ parentSpanId: http.spanId, kind: SPAN_KIND.INTERNAL });
    expect(operation.attributes).toMatchObject({ 'graphql.operation.type': 'mutation', 'graphql.operation.name': 'RequestPayment' });
    const resolver = spans.find((s) => s.name === 'resolve Mutation.requestPayment')!;
    expect(resolver.parentSpanId).toBe(operation.spanId);

    // The insert of the request runs in the resolver, as a child (through its transaction).
    const sql = spans.filter((s) => s.name.startsWith('pg.query'));
    expect(sql.every((s) => s.kind === SPAN_KIND.CLIENT && s.attributes['db.system.name'] === 'postgresql')).toBe(true);
    const insert = sql.find((s) => String(s.attributes['db.query.text']).includes('insert into payment_requests'));
    expect(insert).toBeDefined();
    expect(ancestry(spans, insert!)).toEqual([insert!.name, resolver.name, operation.name, name]);
    expect(sql.some((s) => /^commit;?$/i.test(String(s.attributes['db.query.text'])))).toBe(true);

    // Values never leave the gateway: not the wallet, the description, the reference, the key.
    const everything = JSON.stringify(spans);
    for (const value of [walletId, description, 'order-secret-ref-42', secretKey, '12.5']) expect(everything).not.toContain(value);
    expect(String(insert!.attributes['db.query.text'])).toContain('?');

    // Every span of the trace descends from the HTTP span: no background pass (the outbox reader,
    // the webhook worker woken by this commit) joined the request's trace.
    for (const span of spans) expect(ancestry(spans, span).at(-1)).toBe(name);
    expect(spans.some((s) => /lease_token|pg_snapshot_xip/.test(String(s.attributes['db.query.text'])))).toBe(false);

    // One trace per request: the create's spans share its trace and nothing else does.
    expect(new Set(otlp.spans.filter((s) => s.name === name).map((s) => s.traceId)).size).toBe(otlp.spans.filter((s) => s.name === name).length);
  });

  test('the path of an account look-up never reaches a span: the route template stands in for it', async () => {
    const res = await call(`/api/v1/account/${phone}`, { token: secretKey });
    expect(res.status).toBe(200);
    const name = 'GET /api/v1/account/:identifier';
    await until(() => otlp.spans.some((s) => s.name === name), 15_000, 'the look-up span');
    const span = otlp.spans.find((s) => s.name === name)!;
    expect(span.attributes['url.path']).toBe('/api/v1/account/:identifier');
    const spans = await traceOf(span.traceId, (s) => s.some((x) => x.name === 'query WalletId'));
    expect(spans.find((s) => s.name === 'query WalletId')!.parentSpanId).toBe(span.spanId);
    expect(JSON.stringify(otlp.spans)).not.toContain(phone.slice(1));
  });

  test('a webhook delivery is a client span, and its traceparent arrives at the merchant', async () => {
    const created = await call('/api/v1/wallet/request-payment', { token: secretKey, body: { walletId, amount: 1, description: 'Hooked', merchantName: 'Traced Shop' } });
    const id = created.body.paymentRequestId as string;
    const [delivery] = (await merchant.until((r) => r.some((x) => x.json.data.paymentRequest?.id === id))).filter((x) => x.json.data.paymentRequest?.id === id);
    const traceparent = String(delivery!.headers.traceparent);
    const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(traceparent) ?? [];
    expect(traceId).toBeDefined();
    const spansOfDelivery = await traceOf(traceId!, (s) => s.some((x) => x.spanId === spanId));
    const span = spansOfDelivery.find((s) => s.spanId === spanId);
    expect(span).toMatchObject({ name: 'POST webhook', kind: SPAN_KIND.CLIENT, spanId });
    expect(span!.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.response.status_code': 200,
      'server.address': '127.0.0.1',
      'server.port': merchant.port,
      'webhook.event_id': delivery!.id,
      'webhook.attempt': 1,
    });
    expect(JSON.stringify(span)).not.toContain('/hooks'); // never the path (it may hold a merchant's token)
  });

  test('a test send (POST /webhook-endpoints/{id}/test) is a client span of that request’s trace, and its traceparent arrives too', async () => {
    const before = merchant.received.length;
    const res = await call(`/api/v1/webhook-endpoints/${endpointId}/test`, { token: secretKey, body: {} });
    expect(res.status).toBe(200);
    const [sent] = (await merchant.until((r) => r.length > before)).slice(before);
    const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(sent!.headers.traceparent)) ?? [];
    const name = 'POST /api/v1/webhook-endpoints/:endpointId/test';
    const spans = await traceOf(traceId!, (s) => s.some((x) => x.name === name) && s.some((x) => x.spanId === spanId));
    const client = spans.find((s) => s.spanId === spanId)!;
    expect(client).toMatchObject({ name: 'POST webhook', kind: SPAN_KIND.CLIENT });
    expect(client.attributes['webhook.test']).toBe(true);
    expect(ancestry(spans, client).at(-1)).toBe(name);
  });

  test('WebSocket operations are spans of their own: the subscribe, and an approve', async () => {
    const client = wsClient(gateway.baseUrl, userToken);
    const sub = subscribe(client, 'subscription { paymentRequested { id } }');
    await until(() => otlp.spans.some((s) => s.name === 'subscription paymentRequested'), 15_000, 'the subscribe span');
    const created = await call('/api/v1/wallet/request-payment', { token: secretKey, body: { walletId, amount: 2, description: 'Over WS', merchantName: 'Traced Shop' } });
    const id = created.body.paymentRequestId as string;
    // A request of an earlier test, committed up to one poll before the subscription, may come first.
    let seen = (await sub.next()).paymentRequested.id;
    while (seen !== id) seen = (await sub.next()).paymentRequested.id;
    expect(seen).toBe(id);
    const approved = await withDeadline(
      new Promise<any>((resolve, reject) => {
        client.subscribe({ query: `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { status } }`, variables: { id } }, { next: resolve, error: reject, complete: () => undefined });
      }),
      10_000,
      'the approval over the socket',
    );
    expect(approved.data.approvePaymentRequest.status).toBe('APPROVED');
    await until(() => otlp.spans.some((s) => s.name === 'mutation approvePaymentRequest'), 15_000, 'the approve span');
    const subscribeSpan = otlp.spans.find((s) => s.name === 'subscription paymentRequested')!;
    const approve = otlp.spans.find((s) => s.name === 'mutation approvePaymentRequest')!;
    for (const span of [subscribeSpan, approve]) {
      expect(span).toMatchObject({ kind: SPAN_KIND.SERVER, parentSpanId: undefined });
      expect(span.attributes['network.protocol.name']).toBe('websocket');
    }
    const spans = await traceOf(approve.traceId, (s) => s.some((x) => x.name === 'resolve Mutation.approvePaymentRequest') && s.some((x) => x.name.startsWith('pg.query')));
    const resolver = spans.find((s) => s.name === 'resolve Mutation.approvePaymentRequest')!;
    expect(resolver.parentSpanId).toBe(approve.spanId);
    sub.dispose();
    await client.dispose();
  });

  test('probes and scrapes make no traces; SIGTERM exports what is left and exits 0', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) expect((await fetch(`${gateway.baseUrl}${path}`)).status).toBe(200);
    const graphql = await gql('{ __typename }', {}, secretKey);
    expect(graphql.status).toBe(200);
    gateway.child.kill('SIGTERM');
    expect(await withDeadline(gateway.exited, 15_000, 'the exit')).toEqual({ code: 0, signal: null });
    // Exported before the exit, although the batch delay had not passed for it.
    expect(otlp.spans.some((s) => s.name === 'POST /graphql')).toBe(true);
    expect(otlp.spans.some((s) => s.name === 'query __typename' || s.name === 'query')).toBe(true);
    expect(otlp.spans.some((s) => /healthz|readyz|metrics/.test(s.name) || /healthz|readyz|metrics/.test(String(s.attributes['url.path'])))).toBe(false);
  });
});
