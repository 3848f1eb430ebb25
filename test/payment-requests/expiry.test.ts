import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import pg from 'pg';
import { approve, balances, cancel, countTransactions, ledgerMismatches, reject, requestPayment, statusOf, untilPast } from '../helpers/payments.js';
import { until, withDeadline } from '../helpers/expect.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';

// Requests live 1 s here; the background sweeper is parked so each test sweeps when it means to.
let app: TestApp;
let f: ReturnType<typeof factories>;
beforeAll(async () => {
  app = await startTestApp({ env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
  f = factories(app);
});
afterAll(async () => {
  await app.close();
});

test('from expiresAt on every read says EXPIRED and every decision is refused, before the sweeper ran', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
  await untilPast((await statusOf(app.baseUrl, dev.secretKey, id)).expiresAt);
  const status = await statusOf(app.baseUrl, dev.secretKey, id);
  expect(status.status).toBe('EXPIRED');
  expect(status.updatedAt).toBe(status.expiresAt);
  const [row] = await app.db.orm.em.fork().execute('select status from payment_requests where id = ?', [id]);
  expect(row.status).toBe('PENDING'); // not swept yet: the read rule alone says EXPIRED

  const a = await approve(app.baseUrl, user.token, id);
  expect(a.body.errors[0].extensions).toEqual({ code: 'PAYMENT_REQUEST_EXPIRED', statusCode: 409 });
  expect((await reject(app.baseUrl, user.token, id)).body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_EXPIRED');
  const c = await cancel(app.baseUrl, dev.secretKey, id);
  expect(c.status).toBe(409);
  expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
  expect(await countTransactions(app.db, id)).toBe(0);
});

test('the sweeper writes EXPIRED once and the owner receives paymentRequestUpdated', async () => {
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const client = wsClient(app.baseUrl, user.token);
  const sub = subscribe(client, 'subscription { paymentRequestUpdated { id status updatedAt transactionId } }');
  await untilSubscribed(app.gateway.services.eventHub, 1);
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
  await untilPast((await statusOf(app.baseUrl, dev.secretKey, id)).expiresAt);
  expect(await app.gateway.sweeper.sweep()).toBeGreaterThanOrEqual(1);
  const event = await sub.next();
  expect(event.paymentRequestUpdated).toEqual({ id, status: 'EXPIRED', updatedAt: expect.any(String), transactionId: null });
  expect(await app.gateway.sweeper.sweep()).toBe(0);
  // No second EXPIRED: the next event this user receives is a later change of another request.
  const later = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  expect((await cancel(app.baseUrl, dev.secretKey, later)).status).toBe(200);
  expect((await sub.next()).paymentRequestUpdated).toMatchObject({ id: later, status: 'CANCELLED' });
  expect(sub.values.map((v) => v.paymentRequestUpdated.id)).toEqual([id, later]);
  const a = await approve(app.baseUrl, user.token, id);
  expect(a.body.errors[0].extensions.code).toBe('PAYMENT_REQUEST_NOT_PENDING');
  sub.dispose();
  await client.dispose();
});

describeOnServer('races with the sweeper', ONE_CONNECTION, () => {
  test('two instances sweeping at once (FOR UPDATE SKIP LOCKED) expire each request exactly once', async () => {
    const second = await startTestApp({ database: app.database, env: { PAYMENT_REQUEST_TTL_SECONDS: '1', EXPIRY_SWEEP_INTERVAL_MS: '600000' } });
    try {
      const dev = await f.developer();
      const user = await f.user({ balance: 100 });
      const ids = [];
      for (let i = 0; i < 30; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
      await untilPast((await statusOf(app.baseUrl, dev.secretKey, ids.at(-1)!)).expiresAt);
      const [a, b] = await Promise.all([app.gateway.sweeper.sweep(), second.gateway.sweeper.sweep()]);
      expect(a + b).toBe(30);
      const rows = await app.db.orm.em
        .fork()
        .execute<Array<{ n: string }>>(`select count(*) as n from payment_requests where id in (${ids.map(() => '?').join(',')}) and status = 'EXPIRED'`, ids);
      expect(Number(rows[0]!.n)).toBe(30);
    } finally {
      await second.close();
    }
  });

  // Approve racing expiry, both outcomes made to happen: a trigger (test only) parks one side on
  // an advisory lock this test holds, at the point that decides the race, while the other side runs.
  // The parked side waits without the gateway's lock_timeout, so it cannot give up on its own.
  const sql = <T>(text: string, params: unknown[] = []) => app.db.orm.em.fork().execute<T[]>(text, params);
  /** Until a session waits for the advisory lock `key` (the parked side has reached its trigger). */
  const untilParked = (director: pg.Client, key: number, what: string) =>
    until(
      async () => (await director.query(`select 1 from pg_locks where locktype = 'advisory' and objid = $1 and not granted`, [key])).rows.length > 0,
      10_000,
      what,
    );
  /** Until the database's own clock is past the request's expires_at (the clock both sides use). */
  const untilOverdue = (id: string) =>
    until(async () => (await sql<{ overdue: boolean }>('select expires_at <= now() as overdue from payment_requests where id = ?', [id]))[0]!.overdue, 10_000, 'expires_at passing');

  const eventTypes = async (id: string) => (await sql<{ type: string }>('select type from events where payment_request_id = ? order by sequence', [id])).map((e) => e.type);

  /**
   * Runs `body` while a test trigger `name` parks the statements it fires on (`fires`: when, on
   * payment_requests; `onlyIf`: an optional condition inside it) at the advisory lock `key`, held
   * by the `director` connection it hands to `body`. On the way out the director's connection
   * ends first (releasing anything parked), then the trigger and its function are dropped.
   */
  const withParkingTrigger = async (key: number, name: string, fires: string, onlyIf: string | null, body: (director: pg.Client) => Promise<void>) => {
    const director = new pg.Client({ connectionString: app.database.url });
    await director.connect();
    try {
      await director.query('select pg_advisory_lock($1)', [key]);
      const park = `perform set_config('lock_timeout', '0', true); perform pg_advisory_xact_lock(${key});`;
      await sql(`create or replace function ${name}() returns trigger language plpgsql as $$
        begin ${onlyIf ? `if ${onlyIf} then ${park} end if;` : park} return null; end $$`);
      await sql(`create trigger ${name} ${fires} execute function ${name}()`);
      await body(director);
    } finally {
      await director.end();
      await sql(`drop trigger if exists ${name} on payment_requests`);
      await sql(`drop function if exists ${name}()`);
    }
  };

  test('the decision wins: an approval that claimed the row before expiresAt commits APPROVED; the sweeper skips the row and never expires it', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    await app.gateway.sweeper.sweep(); // nothing else is due: what a sweep counts below is this request
    // Parks the approval right after its update claimed the row (the row lock is held).
    await withParkingTrigger(8101, 'test_hold_approvals', `after update on payment_requests for each row when (new.status = 'APPROVED')`, null, async (director) => {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
      let answered = false;
      const approval = approve(app.baseUrl, user.token, id).finally(() => (answered = true));
      await untilParked(director, 8101, 'the approval claiming the row (it must start within the 1 s TTL)');
      expect(answered).toBe(false);
      // The request is now overdue by the database's clock, and its row is claimed by the approval.
      await untilOverdue(id);
      // SKIP LOCKED: the sweep passes the claimed row by instead of waiting for it.
      expect(await withDeadline(app.gateway.sweeper.sweep(), 5_000, 'a sweep while an approval holds the row')).toBe(0);
      await director.query('select pg_advisory_unlock(8101)');
      const res = await withDeadline(approval, 10_000, 'the approval after its release');
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.approvePaymentRequest.status).toBe('APPROVED');
      expect(await app.gateway.sweeper.sweep()).toBe(0);
      expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('APPROVED');
      expect((await sql<{ status: string }>('select status from payment_requests where id = ?', [id]))[0]!.status).toBe('APPROVED');
      expect(await countTransactions(app.db, id)).toBe(1);
      expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 90, developer: 10 });
      expect(await eventTypes(id)).toEqual(['payment_request.created', 'payment_request.approved']);
    });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });

  test('the expiry wins: an approval that began before expiresAt but reaches the row after the sweeper wrote EXPIRED is refused; no money moves', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    await app.gateway.sweeper.sweep();
    // Parks the approval's update before it reads or locks any row; its transaction (and so its
    // now()) has begun. Only the decision's update sets transaction_id; the sweeper's does not.
    await withParkingTrigger(8102, 'test_hold_decisions', 'before update on payment_requests for each statement', `current_query() like '%transaction_id =%'`, async (director) => {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
      let answered = false;
      const approval = approve(app.baseUrl, user.token, id).finally(() => (answered = true));
      await untilParked(director, 8102, 'the approval reaching its update (it must start within the 1 s TTL)');
      // Past expiresAt the sweeper expires the request and commits while the approval is parked.
      await untilOverdue(id);
      expect(await app.gateway.sweeper.sweep()).toBe(1);
      expect(answered).toBe(false);
      await director.query('select pg_advisory_unlock(8102)');
      const res = await withDeadline(approval, 10_000, 'the approval after its release');
      expect(res.body.data?.approvePaymentRequest ?? null).toBeNull();
      expect(res.body.errors[0].extensions).toEqual({ code: 'PAYMENT_REQUEST_NOT_PENDING', statusCode: 409 });
      expect(await app.gateway.sweeper.sweep()).toBe(0); // written EXPIRED exactly once
      expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('EXPIRED');
      expect((await sql<{ status: string }>('select status from payment_requests where id = ?', [id]))[0]!.status).toBe('EXPIRED');
      expect(await countTransactions(app.db, id)).toBe(0);
      expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
      expect(await eventTypes(id)).toEqual(['payment_request.created', 'payment_request.expired']);
    });
    expect(await ledgerMismatches(app.db)).toEqual([]);
  });
});
