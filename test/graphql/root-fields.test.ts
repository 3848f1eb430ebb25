import pg from 'pg';
import { useTestApp, factories, gql, type TestApp } from '../helpers/app.js';
import { requestPayment } from '../helpers/payments.js';
import { describeOnServer } from '../helpers/db.js';
import { MAX_CONCURRENT_ROOT_FIELDS, MAX_ROOT_FIELDS } from '../../src/graphql/root-fields.js';

// #4: one GraphQL document cannot starve the pool or dodge the rate limit with aliases.
let app: TestApp;
useTestApp({ env: { RATE_LIMIT_PER_SECOND: '5' } }, (x) => ({ app } = x));

const aliases = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ');

test(`more than ${MAX_ROOT_FIELDS} root fields (aliases, fragments) are refused before anything runs`, async () => {
  const user = await factories(app).user();
  // 300 aliases: the document stays under the 16 KiB limit on documents.
  const flood = await gql(app.baseUrl, `{ ${aliases(300, 'myPendingPaymentRequests { id }')} }`, {}, user.token);
  expect(flood.body.data).toBeUndefined();
  expect(flood.body.errors[0].message).toBe(`Operation selects 300 root fields; at most ${MAX_ROOT_FIELDS} are allowed`);
  expect(flood.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  const viaFragments = await gql(
    app.baseUrl,
    `query { ...A ...B } fragment A on Query { ${aliases(6, 'myPendingPaymentRequests { id }')} } fragment B on Query { ${aliases(6, 'myPendingPaymentRequests { id }').replace(/a(\d)/g, 'b$1')} }`,
    {},
    user.token,
  );
  expect(viaFragments.body.errors[0].message).toMatch(/selects 12 root fields/);
  const fine = await gql(app.baseUrl, `{ __typename ${aliases(MAX_ROOT_FIELDS, 'myPendingPaymentRequests { id }')} }`, {}, user.token);
  expect(fine.body.errors).toBeUndefined();
});

test('with a secret key every root field counts against the rate limit', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 10 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const res = await gql(app.baseUrl, `query($id: ID!) { ${aliases(8, 'paymentRequest(id: $id) { id }')} }`, { id }, dev.secretKey);
  const limited = (res.body.errors ?? []).filter((e: any) => e.extensions.code === 'RATE_LIMITED');
  // Within a second: the create, the request and 7 more root fields > 5 points: refused part-way (the first refusal nulls the non-null data).
  expect(limited.length).toBeGreaterThanOrEqual(1);
  expect(limited[0].message).toBe('Too many requests');
});

describeOnServer('a statement held on a lock', 'it takes a lock on another connection and watches pg_stat_activity (the embedded database is one session)', () => {
  test(`at most ${MAX_CONCURRENT_ROOT_FIELDS} root fields of one operation hold a database connection at once`, async () => {
    const user = await factories(app).user();
    const locker = new pg.Client({ connectionString: app.database.url });
    const observer = new pg.Client({ connectionString: app.database.url });
    await Promise.all([locker.connect(), observer.connect()]);
    try {
      await locker.query('begin');
      await locker.query('lock table payment_requests in access exclusive mode');
      const pending = gql(app.baseUrl, `{ ${aliases(MAX_ROOT_FIELDS, 'myPendingPaymentRequests { id }')} }`, {}, user.token);
      const waiting = async () =>
        Number(
          (
            await observer.query(
              `select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> $1 and query ilike '%join wallets w on w.id = pr.wallet_id%'`,
              [(await locker.query('select pg_backend_pid() as pid')).rows[0].pid],
            )
          ).rows[0].n,
        );
      let max = 0;
      while (max < MAX_CONCURRENT_ROOT_FIELDS) max = Math.max(max, await waiting());
      // Watch for a while: with the gate, no more statements join the queue on the lock.
      for (let i = 0; i < 20; i++) {
        max = Math.max(max, await waiting());
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(max).toBe(MAX_CONCURRENT_ROOT_FIELDS);
      await locker.query('commit');
      const res = await pending;
      expect(res.body.errors).toBeUndefined();
      expect(Object.keys(res.body.data)).toHaveLength(MAX_ROOT_FIELDS);
    } finally {
      await locker.query('rollback').catch(() => undefined);
      await Promise.all([locker.end(), observer.end()]);
    }
  });
});
