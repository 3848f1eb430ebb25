// POST /api/v1/wallet/request-payment: every input rule of SPEC §7 is a 400 with the Error body,
// and a refused call creates nothing.
import { useTestApp, factories, http, type TestApp } from '../helpers/app.js';
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

  test('lengths count characters, not UTF-16 units: 255 emoji are a valid description, 256 are not', async () => {
    expect((await post({ ...base(), description: '😀'.repeat(255) })).status).toBe(200);
    const res = await post({ ...base(), description: '😀'.repeat(256) });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('description must be at most 255 characters');
  });
});
