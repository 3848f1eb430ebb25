// The event catalogue in the contract (issue 20, SPEC §14): the OpenAPI document's `webhooks`
// section has every event type with its payload, and the events a real gateway writes are
// exactly those payloads.
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../src/events/events.js';
import { factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { approve, cancel, reject, requestPayment } from '../helpers/payments.js';
import { openApi, openApiAjv, resolvePointer } from '../helpers/openapi.js';

const deref = (node: any): any => (node && typeof node.$ref === 'string' ? deref(resolvePointer(node.$ref)) : node);

/** The payload schema of one webhook, compiled against the document's components. */
function payloadValidator(type: string) {
  const schema = openApi.webhooks[type].post.requestBody.content['application/json'].schema;
  return openApiAjv().compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"urn:wallet-gateway:openapi#/$defs/')));
}

test('lists every event type and webhook.test, each a signed POST of its payload', () => {
  expect(Object.keys(openApi.webhooks).sort()).toEqual([...EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE].sort());
  for (const [type, item] of Object.entries<any>(openApi.webhooks)) {
    const op = item.post;
    expect([type, Object.keys(item)]).toEqual([type, ['post']]);
    expect([type, op.parameters.map((p: any) => deref(p)).map((p: any) => [p.in, p.name, p.required])]).toEqual([
      type,
      [
        ['header', 'webhook-id', true],
        ['header', 'webhook-timestamp', true],
        ['header', 'webhook-signature', true],
      ],
    ]);
    const media = op.requestBody.content['application/json'];
    expect([type, op.requestBody.required, deref(media.schema).properties.type.const]).toEqual([type, true, type]);
    expect([type, Object.keys(op.responses)]).toEqual([type, ['2XX', 'default']]);
    const validate = payloadValidator(type);
    expect([type, validate(media.example), validate.errors ?? null]).toEqual([type, true, null]);
  }
});

describe('the events a gateway writes', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '100', SANDBOX_TEST_WALLETS: 'false' } });
  });
  afterAll(async () => {
    await app.close();
  });

  test('each is exactly the payload its webhook documents', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const merchantFields = { metadata: { order: '1001' }, reference: 'order-1001' };
    const approved = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5, merchantFields);
    const txId = (await approve(app.baseUrl, user.token, approved)).body.data.approvePaymentRequest.transactionId;
    await gql(app.baseUrl, 'mutation($id: ID!) { refundTransaction(id: $id, amount: 2) { id } }', { id: txId }, app.config.adminToken);
    await reject(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
    await cancel(app.baseUrl, dev.secretKey, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
    // Two held (MANUAL) payments: one captured in part, one voided.
    for (const end of ['capture', 'void'] as const) {
      const held = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3, { capture: 'MANUAL' });
      const heldTx = (await approve(app.baseUrl, user.token, held)).body.data.approvePaymentRequest.transactionId;
      const body = end === 'capture' ? { body: { amount: 2 } } : {};
      expect((await http(app.baseUrl, `/api/v1/wallet/transaction/${heldTx}/${end}`, { method: 'POST', token: dev.secretKey, ...body })).status).toBe(200);
    }
    // A payout made and paid, another made and failed.
    const admin = app.config.adminToken;
    const payouts = async () => (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
    await gql(app.baseUrl, 'mutation { runPayouts }', {}, admin);
    await gql(app.baseUrl, 'mutation($id: ID!) { markPayoutPaid(id: $id, bankReference: "B-1") { id } }', { id: (await payouts())[0].id }, admin);
    await approve(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 4));
    await gql(app.baseUrl, 'mutation { runPayouts }', {}, admin);
    await gql(app.baseUrl, 'mutation($id: ID!) { markPayoutFailed(id: $id, reason: "Closed") { id } }', { id: (await payouts())[0].id }, admin);
    await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    // The last one expires (1 s) and the sweeper writes its event.
    let events: any[] = [];
    const deadline = Date.now() + 20_000;
    do {
      events = (await http(app.baseUrl, '/api/v1/events', { token: dev.secretKey })).body.data;
      if (!events.some((e) => e.type === 'payment_request.expired')) await new Promise((r) => setTimeout(r, 100));
    } while (!events.some((e) => e.type === 'payment_request.expired') && Date.now() < deadline);
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(EVENT_TYPES));
    for (const event of events) {
      const validate = payloadValidator(event.type);
      expect([event.type, validate(event), validate.errors ?? null]).toEqual([event.type, true, null]);
    }
  });
});
