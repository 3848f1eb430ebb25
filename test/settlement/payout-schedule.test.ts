// The payout schedule (src/settlement/payout-schedule.ts) on a real database: the cut-offs missed
// since the last one recorded are made up, oldest first, each holding what was made before it;
// a look with nothing due does nothing, and two schedules looking at once make nothing twice.
import { factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { PayoutSchedule } from '../../src/settlement/payout-schedule.js';
import { latestCutoff } from '../../src/settlement/cutoff.js';
import { createLogger } from '../../src/logger.js';
import { checkLedger } from '../../src/ledger/ledger-check.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_SECOND: '100000' } });
});
afterAll(async () => {
  await app?.close();
});

const setting = { time: '00:00', zone: 'Europe/Berlin' };
const DAY = 86_400_000;
const schedule = () => new PayoutSchedule(app.gateway.services.payouts, () => app.gateway.services.works.begin(), { ...setting, intervalSeconds: 1 }, createLogger('silent'));

test('a restart makes up the missed cut-offs, each payout holding what was made before its cut-off; nothing twice', async () => {
  const em = app.db.orm.em.fork();
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const [{ now }] = await em.execute<Array<{ now: Date }>>('select now() as now');
  const today = latestCutoff(new Date(now), setting);
  // The schedule last ran four cut-offs ago; one payment was made between the two oldest missed
  // cut-offs, another one after all of them (dated so with SQL: only the time moves).
  await em.execute('insert into payout_runs (cutoff, payouts) values (?, 0)', [new Date(today.getTime() - 4 * DAY)]);
  const early = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 7);
  await approve(app.baseUrl, user.token, early);
  await em.execute(`update balance_transactions set created_at = ? where payment_request_id = ?`, [new Date(today.getTime() - 2.5 * DAY), early]);
  await approve(app.baseUrl, user.token, await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 3));

  const first = await schedule().runOnce();
  expect(first.cutoffs.length).toBeGreaterThanOrEqual(3); // 3 or 4 local midnights (23 to 25 hours apart)
  expect(first.cutoffs.at(-1)!.getTime()).toBe(today.getTime());
  expect(first.made).toBe(1);
  const payouts = (await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data;
  expect(payouts).toEqual([expect.objectContaining({ amount: 7, itemCount: 1, status: 'PENDING' })]);
  const heldAt = Date.parse(payouts[0].periodEnd);
  expect(first.cutoffs.map((c) => c.getTime())).toContain(heldAt);
  expect(heldAt).toBeLessThan(today.getTime() - 2 * DAY + 3_600_000); // the first cut-off after the early payment
  expect(heldAt).toBeGreaterThan(today.getTime() - 2.5 * DAY);
  expect((await http(app.baseUrl, '/api/v1/balance', { token: dev.secretKey })).body.balances).toEqual([{ currency: 'ETB', available: 3, inPayouts: 7 }]);

  // Nothing is due any more; and two schedules looking at once after the record is lost make nothing twice.
  expect(await schedule().runOnce()).toEqual({ cutoffs: [], made: 0 });
  await em.execute('delete from payout_runs where cutoff > ?', [new Date(today.getTime() - 4 * DAY)]);
  const [a, b] = await Promise.all([schedule().runOnce(), schedule().runOnce()]);
  expect(a.made + b.made).toBe(0);
  expect((await http(app.baseUrl, '/api/v1/payouts', { token: dev.secretKey })).body.data).toHaveLength(1);
  expect((await checkLedger(app.db.orm.em.fork())).mismatches).toEqual([]);
  const runs = await gql(app.baseUrl, '{ ledgerCheck { ok checkedPayouts } }', {}, app.config.adminToken);
  expect(runs.body.data.ledgerCheck).toEqual({ ok: true, checkedPayouts: 1 });
});

test('start() looks at once (a missed cut-off is made up at start) and stop() ends it; interval 0 never starts', async () => {
  const em = app.db.orm.em.fork();
  const [{ now }] = await em.execute<Array<{ now: Date }>>('select now() as now');
  const today = latestCutoff(new Date(now), setting);
  await em.execute('delete from payout_runs');
  await em.execute('insert into payout_runs (cutoff, payouts) values (?, 0)', [new Date(today.getTime() - 2 * DAY)]);
  const off = new PayoutSchedule(app.gateway.services.payouts, () => app.gateway.services.works.begin(), { ...setting, intervalSeconds: 0 }, createLogger('silent'));
  off.start();
  await off.stop();
  const [{ last }] = await em.execute<Array<{ last: Date }>>('select max(cutoff) as last from payout_runs');
  expect(new Date(last).getTime()).toBe(today.getTime() - 2 * DAY);
  const on = schedule();
  on.start();
  const deadline = Date.now() + 15_000;
  let seen = 0;
  while (Date.now() < deadline) {
    const [{ latest }] = await em.execute<Array<{ latest: Date }>>('select max(cutoff) as latest from payout_runs');
    seen = new Date(latest).getTime();
    if (seen === today.getTime()) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await on.stop();
  expect(seen).toBe(today.getTime());
});
