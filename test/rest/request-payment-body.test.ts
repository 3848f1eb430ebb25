// POST /api/v1/wallet/request-payment: the body as bytes — not an object, not JSON, not a JSON
// content type, too large. Each is an Error body and creates nothing.
import { MAX_BODY_BYTES } from '../../src/http/body.js';
import { useTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, type HttpResult } from '../helpers/expect.js';
import { validateResponse } from '../helpers/openapi.js';
import { API, countRows, requestPayment, requestPaymentRaw, validBody, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let token: string;
let walletId: string;
useTestApp({ env: { ...REST_TEST_ENV }, developer: true, user: {} }, (x) => ({ app, token, walletId } = x));

async function expectNothingCreated(send: () => Promise<HttpResult>, status: number): Promise<HttpResult> {
  const before = await countRows(app, 'payment_requests');
  const res = await send();
  expectError(res, status);
  expect(await countRows(app, 'payment_requests')).toBe(before);
  return res;
}

/** A valid body padded with JSON whitespace to exactly `bytes` bytes. */
function paddedBody(bytes: number): string {
  const json = JSON.stringify(validBody(walletId));
  return json + ' '.repeat(bytes - Buffer.byteLength(json));
}

describe('not a JSON object', () => {
  test('an array is 400', async () => {
    await expectNothingCreated(() => requestPayment(app, token, [validBody(walletId)]), 400);
  });

  test('null is 400', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, 'null'), 400);
  });

  test.each(['42', '"a string"', 'true'])('the JSON scalar %s is 400', async (raw) => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, raw), 400);
  });

  test('no body at all is 400', async () => {
    await expectNothingCreated(
      () => fetchAsResult(`${app.baseUrl}${API}/wallet/request-payment`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }),
      400,
    );
  });

  test('an empty body with a JSON content type is 400', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, ''), 400);
  });
});

describe('not JSON', () => {
  test('malformed JSON is 400', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, '{"walletId": "wlt_x", "amount": 10,'), 400);
  });

  test('JSON with trailing garbage is 400', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, `${JSON.stringify(validBody(walletId))} x`), 400);
  });

  test('form-encoded bytes sent as application/json are 400', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, 'walletId=wlt_x&amount=10'), 400);
  });
});

describe('content type', () => {
  test('text/plain is 415, even when the bytes are valid JSON', async () => {
    await expectNothingCreated(() => requestPaymentRaw(app, token, JSON.stringify(validBody(walletId)), 'text/plain'), 415);
  });

  test('application/x-www-form-urlencoded is 415', async () => {
    await expectNothingCreated(
      () => requestPaymentRaw(app, token, 'walletId=wlt_x&amount=10', 'application/x-www-form-urlencoded'),
      415,
    );
  });

  test('a body without any content type is 415', async () => {
    await expectNothingCreated(
      () =>
        fetchAsResult(`${app.baseUrl}${API}/wallet/request-payment`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          body: new Blob([JSON.stringify(validBody(walletId))]),
        }),
      415,
    );
  });
});

describe('size', () => {
  test('a body over 64 KiB is 413', async () => {
    const res = await expectNothingCreated(() => requestPaymentRaw(app, token, paddedBody(MAX_BODY_BYTES + 1)), 413);
    expect(res.body.message).toMatch(/65536|64/);
  });

  test('a body of exactly 64 KiB is read', async () => {
    expect(MAX_BODY_BYTES).toBe(64 * 1024);
    expectOk(await requestPaymentRaw(app, token, paddedBody(MAX_BODY_BYTES)));
  });

  test('a streamed (chunked, no Content-Length) body over 64 KiB is 413', async () => {
    const chunk = new TextEncoder().encode(' '.repeat(16 * 1024));
    const head = new TextEncoder().encode(JSON.stringify(validBody(walletId)));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(head);
        else if (sent <= 5) controller.enqueue(chunk);
        else controller.close();
        sent++;
      },
    });
    await expectNothingCreated(
      () =>
        fetchAsResult(`${app.baseUrl}${API}/wallet/request-payment`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: stream,
          duplex: 'half',
        } as RequestInit),
      413,
    );
  });
});

/**
 * fetch, for requests `http()` cannot send (a streamed or missing body), shaped like its result;
 * the answer is checked against the OpenAPI document all the same.
 */
async function fetchAsResult(url: string, init: RequestInit): Promise<HttpResult> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    /* keep the text */
  }
  validateResponse(init.method ?? 'GET', new URL(url).pathname, res.status, res.headers.get('content-type'), body, res.headers);
  return { status: res.status, headers: res.headers, body };
}
