/**
 * One user's verifications cannot starve the others (issue 30, item 2): 32 parallel
 * `changeTransactionPin` calls by one user with her right PIN, at the production hash settings,
 * while another user approves and a merchant reads a status. The others succeed, no answer is
 * SERVICE_UNAVAILABLE, the pool never runs out ("Timeout acquiring a connection" never logged),
 * and no database session sits idle in a transaction holding a row lock on `wallet_pins` (a connection and a row lock
 * held while a PIN is compared, as the old `select … for update` did).
 */
import { TEST_PIN, factories, gql, startTestApp, type TestApp } from '../helpers/app.js';
import { describeOnServer } from '../helpers/db.js';
import { approve, requestPayment, statusOf } from '../helpers/payments.js';

const CHANGE_PIN = 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }';

describeOnServer('a flood of one user\'s PIN verifications', 'the embedded database has one connection: no pool to starve', () => {
  let app: TestApp;
  beforeAll(async () => {
    // The production hash cost of the old scrypt form and the default pool, as the review measured.
    app = await startTestApp({ env: { PIN_HASH_COST: '15', DB_POOL_MAX: '10', USER_RATE_LIMIT_PER_SECOND: '10' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  test('32 parallel changeTransactionPin by one user: another user approves, a merchant reads, the pool holds', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const flooder = await f.user({ balance: 10 });
    const other = await f.user({ balance: 100 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, other.walletId, 10);
    const watcher = app.db.orm.em.fork();
    const held: number[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const [row] = await watcher.execute<Array<{ n: number }>>(
          // A session waiting on the gateway inside a transaction while holding a row-level lock
          // mode on wallet_pins (what `select … for update` takes); a plain read of the row, as
          // the approval's transaction makes on its BEGIN, holds none.
          `select count(distinct a.pid)::int as n from pg_stat_activity a join pg_locks l on l.pid = a.pid
            where a.datname = current_database() and a.pid <> pg_backend_pid() and a.state like 'idle in transaction%'
              and l.relation = 'wallet_pins'::regclass and l.mode in ('RowShareLock', 'RowExclusiveLock')`,
        );
        held.push(row!.n);
      }
    })();
    const flood = Array.from({ length: 32 }, () => gql(app.baseUrl, CHANGE_PIN, { c: TEST_PIN, n: TEST_PIN }, flooder.token));
    const approval = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return approve(app.baseUrl, other.token, id);
    })();
    const read = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return statusOf(app.baseUrl, dev.secretKey, id);
    })();
    const [answers, approved, status] = await Promise.all([Promise.all(flood), approval, read]);
    watching = false;
    await watch;
    const outcomes = answers.map((r) => (r.body.data?.changeTransactionPin === true ? 'ok' : (r.body.errors?.[0]?.extensions?.code as string)));
    expect(outcomes.filter((o) => o !== 'ok' && o !== 'RATE_LIMITED')).toEqual([]);
    expect(outcomes).toContain('ok');
    expect(approved.body.data?.approvePaymentRequest?.status).toBe('APPROVED');
    expect(status.paymentRequestId ?? status.id).toBe(id);
    expect(app.logs.filter((line) => /Timeout acquiring a connection|SERVICE_UNAVAILABLE/.test(line))).toEqual([]);
    // No session held the PIN row in an open transaction while PINs were compared.
    expect(Math.max(0, ...held)).toBe(0);
    expect(held.length).toBeGreaterThan(0);
  });
});
