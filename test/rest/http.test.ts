// Generic HTTP behaviour of the REST door: unknown paths, wrong methods, request ids.
import { useTestApp, http, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, UUID_RE, type HttpResult } from '../helpers/expect.js';
import {
  API,
  cancel,
  createPaymentRequest,
  getStatus,
  getTransaction,
  lookupAccount,
  requestPayment,
  requestPaymentRaw,
  REST_TEST_ENV,
  UNKNOWN_UUID,
  validBody,
} from '../helpers/rest.js';

let app: TestApp;
let token: string;
let walletId: string;
useTestApp({ env: { ...REST_TEST_ENV }, developer: true, user: {} }, (x) => ({ app, token, walletId } = x));

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

describe('unknown paths', () => {
  test.each([`${API}/nope`, `${API}/wallet`, `${API}/wallet/transactions`, `${API}/account`, `${API}/account/x/y`, API, `${API}/`])(
    'an unknown path under /api/v1 (%s) is 404 with the Error body',
    async (path) => {
      expectError(await http(app.baseUrl, path, { token }), 404);
    },
  );

  test.each(['/nope', '/', '/api', '/api/v2/account/alice'])(
    'an unknown path outside /api/v1 (%s) is 404 with the Error body',
    async (path) => {
      expectError(await http(app.baseUrl, path), 404);
    },
  );

  test('an unknown path is 404 even without credentials', async () => {
    expectError(await http(app.baseUrl, `${API}/nope`), 404);
  });
});

describe('wrong method on a known path', () => {
  const cases: Array<[string, string, string]> = [
    ['DELETE', `${API}/account/x`, 'GET'],
    ['POST', `${API}/account/x`, 'GET'],
    ['GET', `${API}/wallet/request-payment`, 'POST'],
    ['PUT', `${API}/wallet/request-payment`, 'POST'],
    ['DELETE', `${API}/wallet/payment-request/${UNKNOWN_UUID}`, 'GET'],
    ['GET', `${API}/wallet/payment-request/${UNKNOWN_UUID}/cancel`, 'POST'],
    ['PATCH', `${API}/wallet/transaction/${UNKNOWN_UUID}`, 'GET'],
  ];

  test.each(cases)('%s %s is 405 with the Error body and an Allow header naming %s', async (method, path, allowed) => {
    const res = await http(app.baseUrl, path, { method, token });
    expectError(res, 405);
    const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allow).toContain(allowed);
    expect(allow).not.toContain(method);
  });

  test('405 comes before authentication (no credentials needed to learn the method is wrong)', async () => {
    const res = await http(app.baseUrl, `${API}/wallet/request-payment`, { method: 'GET' });
    expectError(res, 405);
    expect(res.headers.get('allow')).toContain('POST');
  });
});

describe('X-Request-Id', () => {
  const responses: Array<[string, () => Promise<HttpResult>, number]> = [
    ['request-payment 200', () => requestPayment(app, token, validBody(walletId)), 200],
    ['request-payment 400', () => requestPayment(app, token, {}), 400],
    ['request-payment 401', () => requestPayment(app, undefined, validBody(walletId)), 401],
    ['request-payment 404', () => requestPayment(app, token, validBody('wlt_unknown')), 404],
    ['request-payment 413', () => requestPaymentRaw(app, token, `{"a":"${'x'.repeat(70_000)}"}`), 413],
    ['request-payment 415', () => requestPaymentRaw(app, token, '{}', 'text/plain'), 415],
    ['status 400', () => getStatus(app, token, 'nope'), 400],
    ['status 404', () => getStatus(app, token, UNKNOWN_UUID), 404],
    ['cancel 404', () => cancel(app, token, UNKNOWN_UUID), 404],
    ['transaction 404', () => getTransaction(app, token, UNKNOWN_UUID), 404],
    ['account 404', () => lookupAccount(app, token, 'nobody'), 404],
    ['unknown path 404', () => http(app.baseUrl, `${API}/nope`), 404],
    ['wrong method 405', () => http(app.baseUrl, `${API}/account/x`, { method: 'DELETE' }), 405],
  ];

  test.each(responses)('%s carries a fresh X-Request-Id', async (_name, send, status) => {
    const res = await send();
    expect(res.status).toBe(status);
    expect(res.headers.get('x-request-id')).toMatch(SANE_ID);
  });

  test('the status endpoint 200 carries one too', async () => {
    const id = await createPaymentRequest(app, token, walletId);
    const res = await getStatus(app, token, id);
    expectOk(res);
    expect(res.headers.get('x-request-id')).toMatch(SANE_ID);
  });

  test('two calls get two different ids', async () => {
    const a = await lookupAccount(app, token, 'nobody');
    const b = await lookupAccount(app, token, 'nobody');
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  test.each(['req-123', 'abc.DEF_0:9', '0f8fad5b-d9cb-469f-a165-70867728950e', 'r'.repeat(128)])(
    'a sane incoming id (%s) is echoed',
    async (incoming) => {
      const echoed = await http(app.baseUrl, `${API}/account/nobody`, { token, headers: { 'x-request-id': incoming } });
      expect(echoed.headers.get('x-request-id')).toBe(incoming);
    },
  );

  test('a sane incoming id is echoed on an error response too', async () => {
    const res = await http(app.baseUrl, `${API}/wallet/request-payment`, { method: 'POST', headers: { 'x-request-id': 'err-42' } });
    expectError(res, 401);
    expect(res.headers.get('x-request-id')).toBe('err-42');
  });

  test.each([
    ['300 characters', 'r'.repeat(300)],
    ['129 characters', 'r'.repeat(129)],
    ['spaces', 'has spaces in it'],
    ['a quote', 'abc"def'],
    ['a slash', 'a/b'],
    ['header-injection text', 'abc;drop'],
  ])('an insane incoming id (%s) is replaced by a new one', async (_what, incoming) => {
    const res = await http(app.baseUrl, `${API}/account/nobody`, { token, headers: { 'x-request-id': incoming } });
    expectError(res, 404);
    const id = res.headers.get('x-request-id');
    expect(id).not.toBe(incoming);
    expect(id).toMatch(SANE_ID);
    expect(id).toMatch(UUID_RE);
  });
});
