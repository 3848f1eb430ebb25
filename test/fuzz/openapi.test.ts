import fc from 'fast-check';
import { startTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { allowedRequest, apiOperations, forbiddenRequest, type ApiRequest, type Known } from '../helpers/openapi-arbitraries.js';
import { recordSuite, suiteSize } from '../suite-size.js';

// The contract fuzzer, driven by schema/openapi.yaml (#18): for every REST operation, requests
// built by fast-check from the document's own schemas.
// - every input the document allows is accepted: never 400 (404 for an id that names nothing, 409
//   or 422 for a state or a reused key are fine), what it forbids is refused with 400: the
//   document says exactly what the server enforces (finding 5);
// - never a 5xx, and every response validates against the document (the `http()` helper).
// `npm run test:fuzz -- --count N` sends N requests in all; `npm test` the default.
const { count: COUNT, seed: SEED } = suiteSize('fuzz-openapi', { count: 520, embedded: 260 });
const OPERATIONS = apiOperations();
const PER_OPERATION = Math.max(8, Math.ceil(COUNT / (2 * OPERATIONS.length)));

let app: TestApp;
let secretKey: string;
const known: Record<string, string[]> = {};
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '1000000', LOOKUP_LIMIT_PER_MINUTE: '1000000' } });
  const f = factories(app);
  const dev = await f.developer();
  secretKey = dev.secretKey;
  const user = await f.user({ balance: 1000 });
  const pending = await requestPayment(app.baseUrl, secretKey, user.walletId, 1, { reference: 'order-1' });
  const paid = await requestPayment(app.baseUrl, secretKey, user.walletId, 2, { reference: 'order-1' });
  const tx = (await approve(app.baseUrl, user.token, paid)).body.data.approvePaymentRequest.transactionId as string;
  const endpoint = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: secretKey, body: { url: 'http://127.0.0.1:9/hook' } });
  const events = await http(app.baseUrl, '/api/v1/events', { token: secretKey });
  Object.assign(known, {
    walletId: [user.walletId],
    identifier: [user.username, user.phone],
    requestId: [pending, paid],
    transactionId: [tx],
    reference: ['order-1'],
    endpointId: [endpoint.body.id as string],
    eventId: (events.body.data as Array<{ id: string }>).map((e) => e.id),
    after: (events.body.data as Array<{ id: string }>).map((e) => e.id),
  });
}, 60_000);
afterAll(async () => {
  await app?.close();
});

const knownIds: Known = Object.fromEntries(['walletId', 'identifier', 'requestId', 'transactionId', 'reference', 'endpointId', 'eventId', 'after'].map((k) => [k, () => known[k] ?? []]));
// Webhook URLs stay on loopback (a closed port): the gateway must never be made to deliver to a generated public host.
const overrides = { url: fc.webPath().map((p) => `http://127.0.0.1:9${p.startsWith('/') ? p : `/${p}`}`) };

async function send(req: ApiRequest) {
  const qs = new URLSearchParams(req.query).toString();
  return http(app.baseUrl, `${req.path}${qs ? `?${qs}` : ''}`, {
    method: req.method,
    token: secretKey,
    headers: req.headers,
    ...(req.body !== undefined ? { body: req.body } : {}),
  });
}

const show = (req: ApiRequest, res: { status: number; body: unknown }) =>
  `${req.method} ${req.path} query=${JSON.stringify(req.query)} headers=${JSON.stringify(req.headers)} body=${JSON.stringify(req.body)?.slice(0, 300)} → ${res.status} ${JSON.stringify(res.body)?.slice(0, 200)}`;

const totals = { allowed: { cases: 0, failures: 0 }, forbidden: { cases: 0, failures: 0 } };
afterAll(() => {
  recordSuite('fuzz', 'openapi-allowed', { ...totals.allowed, seed: SEED });
  recordSuite('fuzz', 'openapi-forbidden', { ...totals.forbidden, seed: SEED });
});

describe.each(OPERATIONS.map((op) => [`${op.method} ${op.template}`, op] as const))('%s', (_name, op) => {
  test('every input the document allows is accepted (never 400, never 5xx), every response as documented', async () => {
    await fc.assert(
      fc.asyncProperty(allowedRequest(op, knownIds, overrides), async (req) => {
        totals.allowed.cases++;
        const res = await send(req);
        if (res.status === 400 || res.status >= 500) {
          totals.allowed.failures++;
          throw new Error(`allowed by the document, refused by the server: ${show(req, res)}`);
        }
      }),
      { numRuns: PER_OPERATION, seed: SEED, endOnFailure: true },
    );
  });

  test('every input the document forbids is refused with 400, never 5xx, every response as documented', async () => {
    const forbidden = forbiddenRequest(op, knownIds, overrides);
    if (!forbidden) {
      // Nothing to forbid: no body and no parameter with a constraint (X-Request-Id takes any text).
      expect(op.body).toBeUndefined();
      return;
    }
    await fc.assert(
      fc.asyncProperty(forbidden, async ({ request, violation }) => {
        totals.forbidden.cases++;
        const res = await send(request);
        if (res.status !== 400) {
          totals.forbidden.failures++;
          throw new Error(`forbidden by the document (${violation}), answered ${res.status}: ${show(request, res)}`);
        }
      }),
      { numRuns: PER_OPERATION, seed: SEED, endOnFailure: true },
    );
  });
});
