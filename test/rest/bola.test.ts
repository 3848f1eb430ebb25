// Object-level authorisation: developer B using developer A's ids gets the same 404 as for an id
// that does not exist, and changes nothing.
import { factories, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk, type HttpResult } from '../helpers/expect.js';
import { approve, cancel, createPaymentRequest, getStatus, getTransaction, UNKNOWN_UUID, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let devA: { secretKey: string };
let devB: { secretKey: string };
let payer: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;

beforeAll(async () => {
  app = await startTestApp({ env: { ...REST_TEST_ENV } });
  f = factories(app);
  devA = await f.developer('Developer A');
  devB = await f.developer('Developer B');
  payer = await f.user({ balance: 1000 });
});
afterAll(async () => {
  await app.close();
});

/** B's answer must be the Error body of a 404, word for word what an unknown id gets. */
function expectSameAsUnknown(res: HttpResult, unknown: HttpResult): void {
  expectError(res, 404);
  expect(res.body).toEqual(unknown.body);
}

describe('GET /wallet/payment-request/{id}', () => {
  test("B reading A's PENDING request is 404, like an unknown id", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId);
    expectSameAsUnknown(await getStatus(app, devB.secretKey, id), await getStatus(app, devB.secretKey, UNKNOWN_UUID));
  });

  test("B reading A's APPROVED request is 404", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId, { amount: 1 });
    await approve(app, payer.token, id);
    expectSameAsUnknown(await getStatus(app, devB.secretKey, id), await getStatus(app, devB.secretKey, UNKNOWN_UUID));
  });

  test('A still reads its own request', async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId);
    await getStatus(app, devB.secretKey, id);
    const res = await getStatus(app, devA.secretKey, id);
    expectOk(res);
    expect(res.body.id).toBe(id);
  });
});

describe('POST /wallet/payment-request/{id}/cancel', () => {
  test("B cancelling A's PENDING request is 404 and A's request stays PENDING and unchanged", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId);
    const before = await getStatus(app, devA.secretKey, id);
    expectSameAsUnknown(await cancel(app, devB.secretKey, id), await cancel(app, devB.secretKey, UNKNOWN_UUID));
    const after = await getStatus(app, devA.secretKey, id);
    expect(after.body.status).toBe('PENDING');
    expect(after.body).toEqual(before.body);
  });

  test("B cancelling A's already CANCELLED request is 404, not 409 (no hint that it exists)", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId);
    expectOk(await cancel(app, devA.secretKey, id));
    expectSameAsUnknown(await cancel(app, devB.secretKey, id), await cancel(app, devB.secretKey, UNKNOWN_UUID));
  });

  test("B cancelling A's APPROVED request is 404, not 409, and it stays APPROVED", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId, { amount: 1 });
    const transactionId = await approve(app, payer.token, id);
    expectSameAsUnknown(await cancel(app, devB.secretKey, id), await cancel(app, devB.secretKey, UNKNOWN_UUID));
    expect((await getStatus(app, devA.secretKey, id)).body).toMatchObject({ status: 'APPROVED', transactionId });
  });

  test("after B's attempt, A can still cancel its own request", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId);
    await cancel(app, devB.secretKey, id);
    const res = await cancel(app, devA.secretKey, id);
    expectOk(res);
    expect(res.body.status).toBe('CANCELLED');
  });
});

describe('GET /wallet/transaction/{id}', () => {
  test("B reading A's transaction is 404, like an unknown id", async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId, { amount: 2 });
    const transactionId = await approve(app, payer.token, id);
    expectSameAsUnknown(
      await getTransaction(app, devB.secretKey, transactionId),
      await getTransaction(app, devB.secretKey, UNKNOWN_UUID),
    );
  });

  test('A reads its own transaction', async () => {
    const id = await createPaymentRequest(app, devA.secretKey, payer.walletId, { amount: 2 });
    const transactionId = await approve(app, payer.token, id);
    await getTransaction(app, devB.secretKey, transactionId);
    const res = await getTransaction(app, devA.secretKey, transactionId);
    expectOk(res);
    expect(res.body.id).toBe(transactionId);
  });
});
