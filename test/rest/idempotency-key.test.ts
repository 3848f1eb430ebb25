// The pure half of idempotency (src/rest/idempotency.ts): the header's syntax and a call's fingerprint.
import { fingerprint, parseIdempotencyKey } from '../../src/rest/idempotency.js';
import { refusalOf } from '../helpers/expect.js';

describe('parseIdempotencyKey: 1-255 printable ASCII characters, no surrounding spaces', () => {
  test.each([['a'], ['order-1001'], ['a b'], ['~!@#$%^&*()'], ['x'.repeat(255)], ['550e8400-e29b-41d4-a716-446655440000']])('%p is a key', (key) => {
    expect(parseIdempotencyKey(key)).toBe(key);
  });

  test.each([[''], [' a'], ['a '], ['x'.repeat(256)], ['tab\there'], ['new\nline'], ['café'], ['\u007f']])('%p is refused', (key) => {
    expect(refusalOf(() => parseIdempotencyKey(key))).toEqual({
      code: 'BAD_USER_INPUT',
      statusCode: 400,
      message: 'Idempotency-Key must be 1-255 printable characters',
    });
  });
});

describe('fingerprint: the route and the body, so a key reused elsewhere is noticed', () => {
  const body = { walletId: 'wlt_1', amount: 12.5, description: 'Order', merchantName: 'Shop' };
  const print = fingerprint('POST', '/api/v1/wallet/request-payment', body);

  test('is a SHA-256 in hex and the same for the same call', () => {
    expect(print).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprint('POST', '/api/v1/wallet/request-payment', { ...body })).toBe(print);
  });

  test('does not depend on the order of keys, at any depth', () => {
    const reordered = { merchantName: 'Shop', description: 'Order', amount: 12.5, walletId: 'wlt_1' };
    expect(fingerprint('POST', '/api/v1/wallet/request-payment', reordered)).toBe(print);
    expect(fingerprint('POST', '/p', { a: { x: 1, y: [{ b: 1, a: 2 }] } })).toBe(fingerprint('POST', '/p', { a: { y: [{ a: 2, b: 1 }], x: 1 } }));
  });

  test('differs for another method, path, value, key, array order or type', () => {
    const others = [
      fingerprint('PUT', '/api/v1/wallet/request-payment', body),
      fingerprint('POST', '/api/v1/wallet/payment-request/x/cancel', body),
      fingerprint('POST', '/api/v1/wallet/request-payment', { ...body, amount: 12.51 }),
      fingerprint('POST', '/api/v1/wallet/request-payment', { ...body, amount: '12.5' }),
      fingerprint('POST', '/api/v1/wallet/request-payment', { ...body, extra: null }),
      fingerprint('POST', '/api/v1/wallet/request-payment', [body]),
      fingerprint('POST', '/api/v1/wallet/request-payment', undefined),
      fingerprint('POST', '/p', [1, 2]),
      fingerprint('POST', '/p', [2, 1]),
    ];
    expect(new Set([print, ...others]).size).toBe(others.length + 1);
  });

  test('a body without content and a null body are the same call', () => {
    expect(fingerprint('POST', '/p', undefined)).toBe(fingerprint('POST', '/p', null));
  });
});
