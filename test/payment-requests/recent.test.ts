/** `myRecentPaymentRequests` (user token): the wallet app's "recent" list, so a payment decided elsewhere shows after sign-in. */
import { useTestApp, gql, type FileFixture, type TestApp } from '../helpers/app.js';
import { approve, reject, requestPayment } from '../helpers/payments.js';

let app: TestApp;
let f: FileFixture['f'];
let sk: string;
useTestApp({ developer: true }, (x) => ({ app, f, token: sk } = x));

const RECENT = 'query($limit: Int) { myRecentPaymentRequests(limit: $limit) { id status merchantName description amount } }';

test('my decided requests, the latest decision first; pending ones and other users’ never', async () => {
  const user = await f.user({ balance: 100 });
  const other = await f.user({ balance: 100 });
  const paid = await requestPayment(app.baseUrl, sk, user.walletId, 3, { description: 'Paid first' });
  const rejected = await requestPayment(app.baseUrl, sk, user.walletId, 4, { description: 'Rejected next' });
  await requestPayment(app.baseUrl, sk, user.walletId, 5, { description: 'Still pending' });
  const theirs = await requestPayment(app.baseUrl, sk, other.walletId, 6);
  expect((await approve(app.baseUrl, user.token, paid)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  expect((await reject(app.baseUrl, user.token, rejected)).body.data.rejectPaymentRequest.status).toBe('REJECTED');
  await approve(app.baseUrl, other.token, theirs);

  const res = await gql(app.baseUrl, RECENT, {}, user.token);
  expect(res.body.data.myRecentPaymentRequests).toEqual([
    { id: rejected, status: 'REJECTED', merchantName: 'Test Shop', description: 'Rejected next', amount: 4 },
    { id: paid, status: 'APPROVED', merchantName: 'Test Shop', description: 'Paid first', amount: 3 },
  ]);
  expect((await gql(app.baseUrl, RECENT, { limit: 1 }, user.token)).body.data.myRecentPaymentRequests.map((r: { id: string }) => r.id)).toEqual([rejected]);
});

test('an overdue request (PENDING in its row, past expiresAt, before the sweeper ran) is listed as EXPIRED, never PENDING (#30: one read model)', async () => {
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, sk, user.walletId, 2, { description: 'Lapsed' });
  await app.db.orm.em
    .fork()
    .execute(`update payment_requests set created_at = now() - interval '10 minutes', updated_at = now() - interval '10 minutes', expires_at = now() - interval '1 minute' where id = ?`, [id]);
  const [row] = await app.db.orm.em.fork().execute<Array<{ status: string }>>('select status from payment_requests where id = ?', [id]);
  expect(row!.status).toBe('PENDING'); // the sweeper has not run: only the read model says EXPIRED
  const res = await gql(app.baseUrl, RECENT, {}, user.token);
  expect(res.body.data.myRecentPaymentRequests).toEqual([{ id, status: 'EXPIRED', merchantName: 'Test Shop', description: 'Lapsed', amount: 2 }]);
});

test('a secret key is FORBIDDEN', async () => {
  const res = await gql(app.baseUrl, RECENT, {}, sk);
  expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
});
