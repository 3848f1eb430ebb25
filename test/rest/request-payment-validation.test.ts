// POST /api/v1/wallet/request-payment: every input rule of SPEC §7 is a 400 with the Error body,
// and a refused call creates nothing.
import { useTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';
import { expectError, type HttpResult } from '../helpers/expect.js';
import { countRows, requestPayment, requestPaymentRaw, validBody, type PaymentRequestBody, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let token: string;
let walletId: string;
useTestApp({ env: { ...REST_TEST_ENV }, developer: true, user: { balance: 100 } }, (x) => ({ app, token, walletId } = x));

/** Sends the call and checks it was refused with 400 (naming `mentions`) and created nothing. */
async function expectRefused(send: () => Promise<HttpResult>, mentions?: string | RegExp): Promise<HttpResult> {
  const before = await countRows(app, 'payment_requests');
  const res = await send();
  expectError(res, 400, typeof mentions === 'string' ? new RegExp(`\\b${mentions}\\b`) : mentions);
  expect(await countRows(app, 'payment_requests')).toBe(before);
  return res;
}

const refuse = (body: unknown, mentions?: string | RegExp) => expectRefused(() => requestPayment(app, token, body), mentions);

/** The valid body with `field` removed. */
function without(field: string): PaymentRequestBody {
  const body = validBody(walletId);
  delete body[field];
  return body;
}

describe('required fields', () => {
  test.each(['walletId', 'amount', 'description', 'merchantName'])('missing %s is 400 naming it', async (field) => {
    await refuse(without(field), field);
  });

  test.each(['walletId', 'amount', 'description', 'merchantName'])('%s: null is 400 naming it', async (field) => {
    await refuse(validBody(walletId, { [field]: null }), field);
  });

  test('an empty object is 400 and names every missing field', async () => {
    const res = await refuse({});
    for (const field of ['walletId', 'amount', 'description', 'merchantName']) expect(res.body.message).toContain(field);
  });
});

describe('unknown fields', () => {
  test('an unknown extra field is 400 and the message names it', async () => {
    const res = await refuse(validBody(walletId, { currency: 'ETB' }));
    expect(res.body.message).toContain('currency');
  });

  test('an unknown field whose name is not a plain word is named too', async () => {
    const res = await refuse(validBody(walletId, { 'callback-url': 'https://example.com' }));
    expect(res.body.message).toContain('callback-url');
  });

  test('an unknown field with a quote in its name is named, escaped', async () => {
    const res = await refuse(validBody(walletId, { 'a"b': 1 }));
    expect(res.body.message).toContain(JSON.stringify('a"b'));
  });

  test('a misspelt field is 400 naming the misspelling', async () => {
    const body = without('amount');
    body.ammount = 10;
    const res = await refuse(body);
    expect(res.body.message).toContain('ammount');
  });

  test('"__proto__" as a field is an unknown field, not a prototype', async () => {
    const raw = JSON.stringify(validBody(walletId)).replace('{', '{"__proto__":{"amount":1},');
    const res = await expectRefused(() => requestPaymentRaw(app, token, raw));
    expect(res.body.message).toContain('__proto__');
  });

  test('"constructor" as a field is an unknown field', async () => {
    const res = await refuse(validBody(walletId, { constructor: 'x' }));
    expect(res.body.message).toContain('constructor');
  });
});

describe('amount', () => {
  test('a numeric string is 400 (amount must be a JSON number)', async () => {
    await refuse(validBody(walletId, { amount: '10' }), 'amount');
  });

  test.each([[true], [[10]], [{ value: 10 }]])('a non-number (%p) is 400', async (amount) => {
    await refuse(validBody(walletId, { amount }), 'amount');
  });

  test('0 is 400', async () => {
    await refuse(validBody(walletId, { amount: 0 }), 'amount');
  });

  test('-0 is 400', async () => {
    const raw = JSON.stringify(validBody(walletId, { amount: 7 })).replace('"amount":7', '"amount":-0');
    await expectRefused(() => requestPaymentRaw(app, token, raw), 'amount');
  });

  test('0.009 (below the 0.01 minimum) is 400', async () => {
    await refuse(validBody(walletId, { amount: 0.009 }), 'amount');
  });

  test('a negative amount is 400', async () => {
    await refuse(validBody(walletId, { amount: -5 }), 'amount');
  });

  test('over MAX_AMOUNT (1000000.01) is 400', async () => {
    expect(app.config.maxAmount).toBe(1_000_000);
    await refuse(validBody(walletId, { amount: 1_000_000.01 }), 'amount');
  });

  test('far over MAX_AMOUNT (1e21) is 400', async () => {
    await refuse(validBody(walletId, { amount: 1e21 }), 'amount');
  });

  test.each([10.123, 0.015, 1.005, 0.1 + 0.2])('%p (more than 2 decimal places) is 400, not rounded', async (amount) => {
    await refuse(validBody(walletId, { amount }), 'amount');
  });

  test('1e400 (Infinity after JSON parsing) is 400', async () => {
    const raw = JSON.stringify(validBody(walletId, { amount: 7 })).replace('"amount":7', '"amount":1e400');
    await expectRefused(() => requestPaymentRaw(app, token, raw), 'amount');
  });

  test('-1e400 (-Infinity after JSON parsing) is 400', async () => {
    const raw = JSON.stringify(validBody(walletId, { amount: 7 })).replace('"amount":7', '"amount":-1e400');
    await expectRefused(() => requestPaymentRaw(app, token, raw), 'amount');
  });
});

describe('walletId', () => {
  test('empty string is 400', async () => {
    await refuse(validBody(walletId, { walletId: '' }), 'walletId');
  });

  test('whitespace only is 400', async () => {
    await refuse(validBody(walletId, { walletId: '   ' }), 'walletId');
  });

  test.each([[123], [true], [{ id: 'x' }], [['wlt_x']]])('a non-string (%p) is 400', async (value) => {
    await refuse(validBody(walletId, { walletId: value }), 'walletId');
  });
});

describe('description', () => {
  test('empty is 400', async () => {
    await refuse(validBody(walletId, { description: '' }), 'description');
  });

  test('whitespace only is 400', async () => {
    await refuse(validBody(walletId, { description: ' \t\n ' }), 'description');
  });

  test('256 characters is 400', async () => {
    await refuse(validBody(walletId, { description: 'd'.repeat(256) }), 'description');
  });

  test('a non-string is 400', async () => {
    await refuse(validBody(walletId, { description: 42 }), 'description');
  });
});

describe('merchantName', () => {
  test('101 characters is 400', async () => {
    await refuse(validBody(walletId, { merchantName: 'M'.repeat(101) }), 'merchantName');
  });

  test('empty is 400', async () => {
    await refuse(validBody(walletId, { merchantName: '' }), 'merchantName');
  });

  test('whitespace only is 400', async () => {
    await refuse(validBody(walletId, { merchantName: '   ' }), 'merchantName');
  });

  test('a non-string is 400', async () => {
    await refuse(validBody(walletId, { merchantName: ['Acme'] }), 'merchantName');
  });
});

describe('text fields', () => {
  let dev: { secretKey: string };
  let walletId: string;
  beforeAll(async () => {
    const f = factories(app);
    dev = await f.developer();
    walletId = (await f.user({ balance: 10 })).walletId;
  });
  const post = (body: Record<string, unknown>) => http(app.baseUrl, '/api/v1/wallet/request-payment', { token: dev.secretKey, body });
  const base = () => ({ walletId, amount: 1, description: 'ok', merchantName: 'Shop' });

  for (const field of ['description', 'merchantName', 'walletId'] as const) {
    test(`${field} with a NUL or other control character is a 400 that names it`, async () => {
      const res = await post({ ...base(), [field]: 'a\u0000b' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, message: `${field} must not contain control characters` });
    });
  }

  // What the payer reads is what was sent (#30): the invisible and bidirectional controls
  // `reference` refuses are refused in the text the payer reads, at both creates, and nothing is made.
  const HIDDEN: Array<[string, string]> = [
    ['right-to-left override', 'Shop \u202Egnp.exe'],
    ['C0 control (BEL)', 'Sh\u0007op'],
    ['vertical tab inside', 'Sh\u000Bop'],
    ['left-to-right isolate', 'Shop\u2066x\u2069'],
    ['right-to-left mark', 'Shop\u200F'],
    ['zero-width space', 'Sh\u200Bop'],
    ['zero-width joiner', 'Sh\u200Dop'],
    ['soft hyphen', 'Sh\u00ADop'],
    ['byte order mark inside', 'Sh\uFEFFop'],
    ['word joiner', 'Sh\u2060op'],
    ['C1 control (NEL)', 'Sh\u0085op'],
    ['Arabic letter mark', 'Sh\u061Cop'],
    ['private use', 'Sh\uE000op'],
  ];
  for (const path of ['/api/v1/wallet/request-payment', '/api/v1/wallet/payment-links']) {
    for (const field of ['description', 'merchantName'] as const) {
      test(`${path}: ${field} with an invisible or bidirectional control is a 400 that names it, and nothing is created`, async () => {
        const [{ n: before }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from payment_requests');
        for (const [what, text] of HIDDEN) {
          const res = await http(app.baseUrl, path, { token: dev.secretKey, body: { ...base(), ...(path.endsWith('links') ? { walletId: undefined } : {}), [field]: text } });
          expect({ what, status: res.status, body: res.body }).toEqual({
            what,
            status: 400,
            body: { statusCode: 400, message: `${field} must not contain control, invisible or bidirectional characters` },
          });
        }
        const [{ n: after }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from payment_requests');
        expect(after).toBe(before);
      });
    }
  }

  test('GraphQL (requestPayment, createPaymentLink): the same refusal is BAD_USER_INPUT naming the field, and nothing is created', async () => {
    const [{ n: before }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from payment_requests');
    const request = 'mutation($input: RequestPaymentInput!) { requestPayment(input: $input) { paymentRequestId } }';
    const link = 'mutation($input: PaymentLinkInput!) { createPaymentLink(input: $input) { paymentRequestId } }';
    for (const [query, input] of [
      [request, { ...base(), merchantName: 'Shop \u202Egnp.exe' }],
      [request, { ...base(), description: 'Order\u2066 7' }],
      [link, { amount: 1, description: 'ok', merchantName: 'Shop \u202Egnp.exe' }],
      [link, { amount: 1, description: 'Order\u200B 7', merchantName: 'Shop' }],
    ] as const) {
      const res = await gql(app.baseUrl, query, { input }, dev.secretKey);
      const field = 'merchantName' in input && input.merchantName !== 'Shop' ? 'merchantName' : 'description';
      expect({ code: res.body.errors?.[0]?.extensions?.code, message: res.body.errors?.[0]?.message }).toEqual({
        code: 'BAD_USER_INPUT',
        message: `${field} must not contain control, invisible or bidirectional characters`,
      });
    }
    const [{ n: after }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from payment_requests');
    expect(after).toBe(before);
  });

  test('line breaks and tabs inside a description stay allowed; white space around it is trimmed, a BOM around it too', async () => {
    const res = await post({ ...base(), description: '\uFEFF Two flat whites\n\tand a croissant ', merchantName: 'Café Ñandú 日本' });
    expect(res.status).toBe(200);
    const read = await http(app.baseUrl, `/api/v1/wallet/payment-request/${res.body.paymentRequestId}`, { token: dev.secretKey });
    expect(read.body).toMatchObject({ description: 'Two flat whites\n\tand a croissant', merchantName: 'Café Ñandú 日本' });
  });

  test('lengths count characters, not UTF-16 units: 255 emoji are a valid description, 256 are not', async () => {
    expect((await post({ ...base(), description: '😀'.repeat(255) })).status).toBe(200);
    const res = await post({ ...base(), description: '😀'.repeat(256) });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('description must be at most 255 characters');
  });
});
