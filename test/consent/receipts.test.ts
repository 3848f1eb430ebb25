/**
 * Consent receipts (#24, SPEC §15): at approval the gateway signs a compact JWS (EdDSA, kid,
 * typ consent+jwt) over exactly what the payer approved; it is in the status body, the
 * transaction body and the approved event; anyone verifies it with GET /.well-known/jwks.json;
 * one changed byte fails; rotation keeps old receipts verifiable; the key is required in
 * production and kept across restarts in development.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalJWKSet, calculateJwkThumbprint, compactVerify, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { WalletGateway, ConsentReceiptError, consentReceiptVerifier } from '@wallet-gateway/client';
import { factories, gql, http, startSecondInstance, startTestApp, useTestApp, type TestApp } from '../helpers/app.js';
import { approve, requestPayment, statusOf } from '../helpers/payments.js';
import { OTHER_TEST_CONSENT_KEY, TEST_CONSENT_KEY, publicPemOf } from '../helpers/consent-keys.js';
import { DEV_KEY_FILE } from '../../src/startup-keys.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

const b64 = (s: string): Buffer => Buffer.from(s, 'base64url');

/** A funded user, a developer and one APPROVED request of `amount`; everything a test reads about it. */
async function approved(amount = 12.5, merchantName = 'Corner Café') {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 1_000_000 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, amount, { merchantName });
  const before = await statusOf(app.baseUrl, dev.secretKey, id);
  const res = await approve(app.baseUrl, user.token, id);
  expect(res.body.errors).toBeUndefined();
  const status = await statusOf(app.baseUrl, dev.secretKey, id);
  return { dev, user, id, before, status, receipt: status.consentReceipt as string };
}

async function jwks(base = app.baseUrl): Promise<JSONWebKeySet> {
  const res = await http(base, '/.well-known/jwks.json');
  expect(res.status).toBe(200);
  return res.body as JSONWebKeySet;
}

const verifyWith = async (set: JSONWebKeySet, receipt: string) =>
  jwtVerify(receipt, createLocalJWKSet(set), { algorithms: ['EdDSA'], typ: 'consent+jwt' });

test('GET /.well-known/jwks.json: no authentication, cacheable JSON, the Ed25519 key with its RFC 7638 thumbprint as kid', async () => {
  const res = await http(app.baseUrl, '/.well-known/jwks.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('public, max-age=300');
  expect(res.body.keys).toHaveLength(1);
  const [key] = res.body.keys;
  expect(Object.keys(key).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
  expect(key).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
  expect(key.kid).toBe(await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: key.x }, 'sha256'));
  expect(JSON.stringify(res.body)).not.toMatch(/"d"/); // never the private part
});

test('the receipt is null until APPROVED, then the same in the status body, the GraphQL type, the transaction body and the approved event', async () => {
  const { dev, id, before, status, receipt } = await approved();
  expect(before.consentReceipt).toBeNull();
  expect(receipt).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  // Every read answers the same receipt (kept with the request, not signed per read).
  expect((await statusOf(app.baseUrl, dev.secretKey, id)).consentReceipt).toBe(receipt);
  const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${status.transactionId}`, { token: dev.secretKey });
  expect(tx.status).toBe(200);
  expect(tx.body.consentReceipt).toBe(receipt);
  const graph = await gql(app.baseUrl, 'query($id: ID!) { paymentRequest(id: $id) { consentReceipt } }', { id }, dev.secretKey);
  expect(graph.body.data.paymentRequest.consentReceipt).toBe(receipt);
  const events = await http(app.baseUrl, '/api/v1/events?type=payment_request.approved', { token: dev.secretKey });
  expect(events.status).toBe(200);
  const event = events.body.data.find((e: { data: { paymentRequest: { id: string } } }) => e.data.paymentRequest.id === id);
  expect(event.data.paymentRequest.consentReceipt).toBe(receipt);
  expect(event.data.transaction.consentReceipt).toBe(receipt);
});

test('it verifies with jose against the published keys; the header and the claims are exactly the pinned ones', async () => {
  const { id, status, receipt } = await approved(12.5, 'Corner Café');
  const set = await jwks();
  const { payload, protectedHeader } = await verifyWith(set, receipt);
  expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: set.keys[0]!.kid, typ: 'consent+jwt' });
  expect(payload).toEqual({
    paymentRequestId: id,
    transactionId: status.transactionId,
    amount: '12.50',
    currency: 'ETB',
    merchantName: 'Corner Café',
    verification: 'pin',
    iat: Math.floor(new Date(status.updatedAt).getTime() / 1000),
  });
});

test('the amount is the exact decimal, never through a float', async () => {
  const cases: Array<[number, string]> = [
    [0.1, '0.10'],
    [999999.99, '999999.99'],
    [7, '7.00'],
  ];
  for (const [amount, text] of cases) {
    const { receipt } = await approved(amount);
    expect([amount, (await verifyWith(await jwks(), receipt)).payload.amount]).toEqual([amount, text]);
  }
});

test('a receipt with one changed byte fails: in the payload, in the signature, in the header', async () => {
  const { receipt } = await approved();
  const set = await jwks();
  const [header, payload, signature] = receipt.split('.') as [string, string, string];
  const flip = (segment: string, at: number): string => {
    const bytes = b64(segment);
    bytes[at] = bytes[at]! ^ 0x01;
    return bytes.toString('base64url');
  };
  // The payload's amount "12.50" → "12.51" (one byte), and a byte in the middle of the payload.
  const amountAt = b64(payload).indexOf('12.50') + 4;
  const tampered = [
    [header, flip(payload, amountAt), signature],
    [header, flip(payload, Math.floor(b64(payload).length / 2)), signature],
    [header, payload, flip(signature, 0)],
    [header, payload, flip(signature, 63)],
    [flip(header, 5), payload, signature],
  ].map((parts) => parts.join('.'));
  expect(JSON.parse(b64(tampered[0]!.split('.')[1]!).toString()).amount).toBe('12.51');
  await expect(verifyWith(set, receipt)).resolves.toBeDefined();
  for (const t of tampered) {
    expect(t).not.toBe(receipt);
    await expect(verifyWith(set, t)).rejects.toThrow();
    await expect(compactVerify(t, createLocalJWKSet(set))).rejects.toThrow();
  }
});

test('no user, wallet or developer identifier anywhere in the receipt', async () => {
  const { dev, user, receipt } = await approved();
  const [header, payload] = receipt.split('.') as [string, string];
  const text = b64(header).toString() + b64(payload).toString();
  for (const secret of [user.userId, user.walletId, user.username, user.phone, dev.developerId, dev.keyId]) {
    expect([secret, text.includes(secret)]).toEqual([secret, false]);
  }
  expect(Object.keys(decodeProtectedHeader(receipt)).sort()).toEqual(['alg', 'kid', 'typ']);
});

test("the typed client's verifyConsentReceipt fetches the keys, verifies, returns the claims and throws on a changed byte", async () => {
  const { dev, id, receipt } = await approved(12.5, 'Typed Shop');
  let fetches = 0;
  const gateway = new WalletGateway({
    secretKey: dev.secretKey,
    baseUrl: app.baseUrl,
    fetch: (request) => {
      if (new URL(request.url).pathname === '/.well-known/jwks.json') fetches++;
      return fetch(request);
    },
  });
  const claims = await gateway.verifyConsentReceipt(receipt);
  expect(claims).toMatchObject({ paymentRequestId: id, amount: '12.50', currency: 'ETB', merchantName: 'Typed Shop', verification: 'pin' });
  await gateway.verifyConsentReceipt(receipt);
  expect(fetches).toBe(1); // kept, not fetched per receipt
  const [h, p, s] = receipt.split('.') as [string, string, string];
  const sig = b64(s);
  sig[10] = sig[10]! ^ 0x80;
  await expect(gateway.verifyConsentReceipt([h, p, sig.toString('base64url')].join('.'))).rejects.toBeInstanceOf(ConsentReceiptError);
  await expect(gateway.verifyConsentReceipt('not-a-receipt')).rejects.toBeInstanceOf(ConsentReceiptError);
});

describe('rotation', () => {
  let rotated: TestApp;
  afterAll(async () => {
    await rotated?.close();
  });

  test('after a rotation the new key signs, the previous key stays published, and receipts it signed still verify', async () => {
    const old = await approved();
    const oldKid = decodeProtectedHeader(old.receipt).kid;
    // Another instance on the same database, rotated: a new signing key, the old one's public half still published.
    rotated = await startSecondInstance(app, { CONSENT_SIGNING_KEY: OTHER_TEST_CONSENT_KEY, CONSENT_PREVIOUS_PUBLIC_KEYS: publicPemOf(TEST_CONSENT_KEY) });
    const set = await jwks(rotated.baseUrl);
    expect(set.keys).toHaveLength(2);
    expect(set.keys[1]!.kid).toBe(oldKid);
    expect(set.keys[0]!.kid).not.toBe(oldKid);
    await expect(verifyWith(set, old.receipt)).resolves.toBeDefined();

    const f = factories(rotated);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(rotated.baseUrl, dev.secretKey, user.walletId, 5);
    await approve(rotated.baseUrl, user.token, id);
    const fresh = (await statusOf(rotated.baseUrl, dev.secretKey, id)).consentReceipt as string;
    expect(decodeProtectedHeader(fresh).kid).toBe(set.keys[0]!.kid);
    await expect(verifyWith(set, fresh)).resolves.toBeDefined();
    // A set without the old key does not verify the old receipt: publishing it is what keeps it valid.
    await expect(verifyWith({ keys: [set.keys[0]!] }, old.receipt)).rejects.toThrow();
    // The typed client of the rotated gateway verifies both.
    const client = new WalletGateway({ secretKey: dev.secretKey, baseUrl: rotated.baseUrl });
    await expect(client.verifyConsentReceipt(old.receipt)).resolves.toMatchObject({ paymentRequestId: old.id });
    await expect(client.verifyConsentReceipt(fresh)).resolves.toMatchObject({ paymentRequestId: id });
  });

  test('a verifier refetches the key set on an unknown kid, but not sooner than its floor', async () => {
    const old = await approved();
    const f = factories(rotated);
    const dev = await f.developer();
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(rotated.baseUrl, dev.secretKey, user.walletId, 5);
    await approve(rotated.baseUrl, user.token, id);
    const fresh = (await statusOf(rotated.baseUrl, dev.secretKey, id)).consentReceipt as string;
    /** One key set URL whose answer moves from the old gateway to the rotated one, as a rotation does. */
    const routed = () => {
      const state = { base: app.baseUrl, fetches: 0 };
      const fetchKeys = (request: Request) => {
        state.fetches++;
        return fetch(`${state.base}${new URL(request.url).pathname}`);
      };
      return { state, fetchKeys };
    };
    // A long floor: the unknown kid right after a fetch is refused without another fetch.
    const slow = routed();
    const patient = consentReceiptVerifier('http://keys.example/.well-known/jwks.json', { fetch: slow.fetchKeys, minRefetchMs: 60_000 });
    await expect(patient(old.receipt)).resolves.toMatchObject({ paymentRequestId: old.id });
    slow.state.base = rotated.baseUrl;
    await expect(patient(fresh)).rejects.toBeInstanceOf(ConsentReceiptError);
    expect(slow.state.fetches).toBe(1);
    // No floor: the unknown kid fetches the set again and verifies.
    const quick = routed();
    const eager = consentReceiptVerifier('http://keys.example/.well-known/jwks.json', { fetch: quick.fetchKeys, minRefetchMs: 0 });
    await expect(eager(old.receipt)).resolves.toMatchObject({ paymentRequestId: old.id });
    quick.state.base = rotated.baseUrl;
    await expect(eager(fresh)).resolves.toMatchObject({ paymentRequestId: id });
    expect(quick.state.fetches).toBe(2);
  });
});

test('development without CONSENT_SIGNING_KEY: a key is made once under DATA_DIR (0600) and two starts on it publish the same kid', async () => {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'consent-key-'));
  try {
    const env = { CONSENT_SIGNING_KEY: '', DATA_DIR: dataDir };
    const first = await startTestApp({ database: app.database, env });
    const kid1 = (await jwks(first.baseUrl)).keys[0]!.kid;
    await first.close();
    const mode = (await stat(path.join(dataDir, DEV_KEY_FILE))).mode & 0o777;
    expect(mode.toString(8)).toBe('600');
    const second = await startTestApp({ database: app.database, env });
    const kid2 = (await jwks(second.baseUrl)).keys[0]!.kid;
    await second.close();
    expect(kid2).toBe(kid1);
    expect(kid1).not.toBe((await jwks()).keys[0]!.kid); // not the configured test key
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('the signing key is never in the logs (after approvals and key reads)', async () => {
  await approved();
  await http(app.baseUrl, '/.well-known/jwks.json');
  const keyBody = TEST_CONSENT_KEY.split('\n')[1]!;
  expect(keyBody.length).toBeGreaterThan(40);
  expect(app.logs.length).toBeGreaterThan(0);
  expect(app.logs.filter((line) => line.includes(keyBody))).toEqual([]);
});
