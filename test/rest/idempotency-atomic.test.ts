import { useTestApp, http, type TestApp, type factories } from '../helpers/app.js';

// #2: the Idempotency-Key record commits in the create's own transaction, so no crash between
// the create's commit and the record can leave the key IN_PROGRESS (and a retry answering 409).
let app: TestApp;
let f: ReturnType<typeof factories>;
useTestApp({}, (x) => ({ app, f } = x));

const sql = <T>(text: string, params: unknown[] = []) => app.db.orm.em.fork().execute<T[]>(text, params);
// fetch on purpose: one of these answers is the 500 of a simulated crash inside the door, which the document does not describe.
const create = (secretKey: string, key: string, walletId: string) =>
  fetch(`${app.baseUrl}/api/v1/wallet/request-payment`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify({ walletId, amount: 1, description: 'Atomic', merchantName: 'Shop' }),
  });

test('the record and the payment request are written by the same database transaction', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: dev.secretKey,
    headers: { 'Idempotency-Key': 'same-tx' },
    body: { walletId: user.walletId, amount: 1, description: 'Atomic', merchantName: 'Shop' },
  });
  expect(res.status).toBe(200);
  const [pr] = await sql<{ xmin: string; id: string }>(`select xmin::text, id from payment_requests where developer_id = ? and idempotency_key = 'same-tx'`, [dev.developerId]);
  const [record] = await sql<{ xmin: string; state: string; body: any }>(
    `select xmin::text, state, response_body as body from idempotency_keys where developer_id = ? and key = 'same-tx'`,
    [dev.developerId],
  );
  expect(record!.state).toBe('COMPLETED');
  expect(record!.body).toEqual(res.body);
  expect(record!.xmin).toBe(pr!.xmin); // the same transaction id wrote both rows
});

test('the key is claimed by that same transaction too: one commit per create (#10)', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const res = await create(dev.secretKey, 'one-commit', user.walletId);
  expect(res.status).toBe(200);
  // now() is the transaction's start: a claim committed earlier, on its own, would carry an earlier time.
  const [row] = await sql<{ same: boolean }>(
    `select k.created_at = pr.created_at and k.locked_at = pr.created_at as same
       from idempotency_keys k join payment_requests pr on pr.developer_id = k.developer_id and pr.idempotency_key = k.key
      where k.developer_id = ? and k.key = 'one-commit'`,
    [dev.developerId],
  );
  expect(row).toEqual({ same: true });
});

test('a failure while recording the answer undoes the create; the retry creates exactly one request', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  // The record's completion fails (as if the process died right there).
  await sql(`create or replace function test_fail_completion() returns trigger language plpgsql as $$
               begin if new.key = 'crash-1' and new.state = 'COMPLETED' then raise exception 'simulated crash'; end if; return new; end $$`);
  await sql(`create trigger test_fail_completion before update on idempotency_keys for each row execute function test_fail_completion()`);
  try {
    const failed = await create(dev.secretKey, 'crash-1', user.walletId);
    expect(failed.status).toBe(500);
    // #10: the error is logged with the statement's shape, not the values it carried.
    const logged = app.logs.filter((l) => l.includes('simulated crash'));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((l) => l.includes('crash-1') || l.includes(dev.developerId))).toEqual([]);
    expect(logged.some((l) => l.includes('update idempotency_keys set'))).toBe(true);
    expect(await sql(`select 1 from payment_requests where developer_id = ? and idempotency_key = 'crash-1'`, [dev.developerId])).toEqual([]);
  } finally {
    await sql(`drop trigger test_fail_completion on idempotency_keys`);
    await sql(`drop function test_fail_completion()`);
  }
  const retry = await create(dev.secretKey, 'crash-1', user.walletId);
  expect(retry.status).toBe(200);
  const body = (await retry.json()) as { paymentRequestId: string };
  const again = await create(dev.secretKey, 'crash-1', user.walletId);
  expect(again.status).toBe(200);
  expect(((await again.json()) as { paymentRequestId: string }).paymentRequestId).toBe(body.paymentRequestId);
  expect(await sql(`select id from payment_requests where developer_id = ? and idempotency_key = 'crash-1'`, [dev.developerId])).toEqual([{ id: body.paymentRequestId }]);
});

test('a key with quotes, backslashes and SQL in it is stored and replayed as sent (the claim and record ride on BEGIN/COMMIT as literals)', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const key = String.raw`o'neil\'); drop table idempotency_keys; -- \\ $1 E'x'`;
  const first = await create(dev.secretKey, key, user.walletId);
  expect(first.status).toBe(200);
  const { paymentRequestId } = (await first.json()) as { paymentRequestId: string };
  const again = await create(dev.secretKey, key, user.walletId);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(((await again.json()) as { paymentRequestId: string }).paymentRequestId).toBe(paymentRequestId);
  const rows = await sql<{ key: string; state: string }>(`select key, state from idempotency_keys where developer_id = ?`, [dev.developerId]);
  expect(rows).toEqual([{ key, state: 'COMPLETED' }]);
});
