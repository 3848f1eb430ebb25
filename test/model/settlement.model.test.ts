import fc from 'fast-check';
import { factories, gql, http, startSecondInstance, startTestApp, TEST_PIN, type TestApp } from '../helpers/app.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';
import { checkLedger } from '../../src/ledger/ledger-check.js';
import { recordSuite, suiteSize } from '../suite-size.js';

// Property test of settlement (SPEC §16, issue 34): random sequences of payments (AUTOMATIC and
// MANUAL), captures, partial refunds, fee changes, payouts made (on either of two gateway
// instances on one PostgreSQL server, sometimes on both at once), paid and failed, and approvals
// racing each other on the two instances. After every step: the ledger check passes (Σ net =
// available per developer and currency, Σ items = amount per payout, every account = Σ its
// entries, the books balance), no two payouts of a developer and currency overlap, every new
// payment's fee is exactly round_half_up(gross × percent / 100, 2) + fixed capped at the gross
// (computed here in integer cents), and each developer's available balance is what the answers of
// the doors add up to. `npm test` runs a few sequences; `npm run test:model -- --runs N [--seed S]`
// more (the seed is printed; a failure prints the failing sequence; `--seed S` replays it).
const { count: RUNS, seed: SEED } = suiteSize('settlement', { count: 4, embedded: 4 });

type On = 0 | 1;
type Cmd =
  | { k: 'pay'; d: number; u: number; cents: number; manual: boolean; on: On }
  | { k: 'capture'; p: number; part: number; on: On }
  | { k: 'refund'; p: number; part: number; on: On }
  | { k: 'run'; on: On }
  | { k: 'fee'; d: number; bp: number; fixed: number }
  | { k: 'paid' | 'failed'; q: number };
type Step = { k: 'one'; cmd: Cmd } | { k: 'two'; a: Cmd; b: Cmd };

const on = fc.constantFrom<On>(0, 1);
const pay = fc.record({ k: fc.constant('pay' as const), d: fc.nat(1), u: fc.nat(2), cents: fc.integer({ min: 1, max: 50_000 }), manual: fc.boolean(), on });
const capture = fc.record({ k: fc.constant('capture' as const), p: fc.nat(30), part: fc.integer({ min: 1, max: 100 }), on });
const refund = fc.record({ k: fc.constant('refund' as const), p: fc.nat(30), part: fc.integer({ min: 1, max: 100 }), on });
const run = fc.record({ k: fc.constant('run' as const), on });
const fee = fc.record({ k: fc.constant('fee' as const), d: fc.nat(1), bp: fc.integer({ min: 0, max: 1000 }), fixed: fc.integer({ min: 0, max: 150 }) });
const settle = fc.record({ k: fc.constantFrom('paid' as const, 'failed' as const), q: fc.nat(10) });
/** Commands that may run at the same time, one on each instance. */
const racing = fc.oneof({ weight: 4, arbitrary: pay }, { weight: 1, arbitrary: run }, { weight: 1, arbitrary: refund }, { weight: 1, arbitrary: capture });
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('one' as const), cmd: fc.oneof({ weight: 5, arbitrary: pay }, capture, refund, run, fee, settle) }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('two' as const), a: racing, b: racing }) },
);
const program = fc.array(step, { minLength: 1, maxLength: 14 });

/** round_half_up(gross × bp / 10000, 2) + fixed, at most the gross, all in integer cents (bp: percent × 100). */
export function expectedFeeCents(grossCents: number, bp: number, fixedCents: number): number {
  const g = BigInt(grossCents);
  const percentPart = (2n * g * BigInt(bp) + 10_000n) / 20_000n; // floor(x + 1/2), x ≥ 0
  const fee = percentPart + BigInt(fixedCents);
  return Number(fee < g ? fee : g);
}

const cents = (amount: number | string): number => Math.round(Number(amount) * 100);
const money = (c: number): number => c / 100;

describeOnServer('settlement under random sequences on two instances', `${ONE_CONNECTION}, and the second instance needs its own pool`, () => {
  let a: TestApp;
  let b: TestApp;
  const env = { RATE_LIMIT_PER_SECOND: '100000', KEY_CACHE_TTL_MS: '0' };
  beforeAll(async () => {
    a = await startTestApp({ env });
    b = await startSecondInstance(a, env);
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('Σ net = available and Σ items = amount after every step; fees exact; payouts never overlap', async () => {
    let failures = 0;
    let counterexample: string | undefined;
    const apps = () => [a, b] as const;
    const admin = () => a.config.adminToken;
    const property = fc.asyncProperty(program, async (steps) => {
      const f = factories(a);
      const devs = [await f.developer('Model A'), await f.developer('Model B')];
      const users = [await f.user({ balance: 1_000_000 }), await f.user({ balance: 1_000_000 }), await f.user({ balance: 1_000_000 })];
      const schedule = devs.map(() => ({ bp: 0, fixed: 0 }));
      const available = devs.map(() => 0);
      const payments: Array<{ d: number; tx: string; manual: boolean; heldCents: number; capturedCents: number | null; refundedCents: number; fee: { bp: number; fixed: number } }> = [];
      const seenPayouts = new Set<string>();
      const settled = new Set<string>();
      const em = a.db.orm.em.fork();

      const exec = async (cmd: Cmd): Promise<void> => {
        switch (cmd.k) {
          case 'pay': {
            const app = apps()[cmd.on];
            const created = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
              token: devs[cmd.d]!.secretKey,
              body: { walletId: users[cmd.u]!.walletId, amount: money(cmd.cents), description: 'model', merchantName: 'Model', ...(cmd.manual ? { capture: 'MANUAL' } : {}) },
            });
            if (created.status !== 200) throw new Error(`request-payment ${created.status} ${JSON.stringify(created.body)}`);
            const feeNow = { ...schedule[cmd.d]! };
            const approved = await gql(
              app.baseUrl,
              'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { transactionId } }',
              { id: created.body.paymentRequestId, pin: TEST_PIN },
              users[cmd.u]!.token,
            );
            if (approved.body.errors) throw new Error(`approve: ${JSON.stringify(approved.body.errors)}`);
            const tx = approved.body.data.approvePaymentRequest.transactionId as string;
            payments.push({ d: cmd.d, tx, manual: cmd.manual, heldCents: cmd.cents, capturedCents: cmd.manual ? null : cmd.cents, refundedCents: 0, fee: feeNow });
            if (!cmd.manual) available[cmd.d]! += cmd.cents - expectedFeeCents(cmd.cents, feeNow.bp, feeNow.fixed);
            return;
          }
          case 'capture': {
            const held = payments.filter((p) => p.manual && p.capturedCents === null);
            const p = held[cmd.p % Math.max(1, held.length)];
            if (!p) return;
            p.capturedCents = 0; // claimed by this command (a racing one picks another or none)
            const amount = Math.max(1, Math.floor((p.heldCents * cmd.part) / 100));
            const res = await http(apps()[cmd.on].baseUrl, `/api/v1/wallet/transaction/${p.tx}/capture`, { token: devs[p.d]!.secretKey, body: { amount: money(amount) } });
            if (res.status !== 200) throw new Error(`capture ${res.status} ${JSON.stringify(res.body)}`);
            p.capturedCents = amount;
            p.fee = { ...schedule[p.d]! };
            available[p.d]! += amount - expectedFeeCents(amount, p.fee.bp, p.fee.fixed);
            return;
          }
          case 'refund': {
            const refundable = payments.filter((p) => p.capturedCents !== null && p.capturedCents > p.refundedCents);
            const p = refundable[cmd.p % Math.max(1, refundable.length)];
            if (!p) return;
            const amount = Math.max(1, Math.floor(((p.capturedCents! - p.refundedCents) * cmd.part) / 100));
            p.refundedCents += amount; // claimed; given back when refused
            const res = await gql(apps()[cmd.on].baseUrl, 'mutation($id: ID!, $a: Float) { refundTransaction(id: $id, amount: $a) { id } }', { id: p.tx, a: money(amount) }, admin());
            const code = res.body.errors?.[0]?.extensions?.code;
            if (code === 'INSUFFICIENT_FUNDS') {
              p.refundedCents -= amount; // the fee stayed with the wallet company: the available balance may not cover it
              return;
            }
            if (code) throw new Error(`refund: ${JSON.stringify(res.body.errors)}`);
            available[p.d]! -= amount;
            return;
          }
          case 'run': {
            const res = await gql(apps()[cmd.on].baseUrl, 'mutation { runPayouts }', {}, admin());
            if (res.body.errors) throw new Error(`runPayouts: ${JSON.stringify(res.body.errors)}`);
            return;
          }
          case 'fee': {
            const res = await gql(
              a.baseUrl,
              'mutation($d: ID!, $p: Float!, $f: Float!) { setFeeSchedule(developerId: $d, percent: $p, fixed: $f) { percent } }',
              { d: devs[cmd.d]!.developerId, p: cmd.bp / 100, f: money(cmd.fixed) },
              admin(),
            );
            if (res.body.errors) throw new Error(`setFeeSchedule: ${JSON.stringify(res.body.errors)}`);
            schedule[cmd.d] = { bp: cmd.bp, fixed: cmd.fixed };
            return;
          }
          case 'paid':
          case 'failed': {
            const pending = [...seenPayouts].filter((id) => !settled.has(id));
            const id = pending[cmd.q % Math.max(1, pending.length)];
            if (!id) return;
            settled.add(id);
            const res =
              cmd.k === 'paid'
                ? await gql(a.baseUrl, 'mutation($id: ID!) { markPayoutPaid(id: $id, bankReference: "BANK-1") { status } }', { id }, admin())
                : await gql(a.baseUrl, 'mutation($id: ID!) { markPayoutFailed(id: $id, reason: "Returned by the bank") { status amount } }', { id }, admin());
            if (res.body.errors) throw new Error(`${cmd.k}: ${JSON.stringify(res.body.errors)}`);
            if (cmd.k === 'failed') {
              const [row] = await em.execute<Array<{ developerId: string; amount: string }>>('select developer_id as "developerId", amount::text as amount from payouts where id = ?', [id]);
              available[devs.findIndex((d) => d.developerId === row!.developerId)]! += cents(row!.amount);
            }
            return;
          }
        }
      };

      /** What must hold after every step. */
      const check = async (): Promise<void> => {
        const ledger = await checkLedger(a.db.orm.em.fork());
        expect(ledger.mismatches).toEqual([]);
        const ids = devs.map((d) => d.developerId);
        const overlaps = await em.execute(
          `select x.id from payouts x join payouts y on y.developer_id = x.developer_id and y.currency = x.currency and y.id <> x.id
             and x.period_start < y.period_end and y.period_start < x.period_end where x.developer_id = any(array[?]::uuid[])`,
          [ids],
        );
        expect(overlaps).toEqual([]);
        // New payouts leave the model's available balance (they hold what was available at their moment).
        const made = await em.execute<Array<{ id: string; developerId: string; amount: string }>>(
          `select id, developer_id as "developerId", amount::text as amount from payouts where developer_id = any(array[?]::uuid[])`,
          [ids],
        );
        for (const p of made.filter((p) => !seenPayouts.has(p.id))) {
          seenPayouts.add(p.id);
          available[ids.indexOf(p.developerId)]! -= cents(p.amount);
        }
        for (const [i, dev] of devs.entries()) {
          const balance = await http(a.baseUrl, '/api/v1/balance', { token: dev.secretKey });
          const etb = balance.body.balances.find((x: { currency: string }) => x.currency === 'ETB');
          expect([i, cents(etb?.available ?? 0)]).toEqual([i, available[i]]);
        }
        // Every payment's fee is the schedule's at the moment the money moved.
        const fees = await em.execute<Array<{ transactionId: string; amount: string; fee: string }>>(
          `select transaction_id as "transactionId", amount::text as amount, fee::text as fee from balance_transactions
            where type = 'payment' and developer_id = any(array[?]::uuid[])`,
          [ids],
        );
        for (const row of fees) {
          const p = payments.find((x) => x.tx === row.transactionId)!;
          expect([row.transactionId, cents(row.fee)]).toEqual([row.transactionId, expectedFeeCents(cents(row.amount), p.fee.bp, p.fee.fixed)]);
        }
      };

      for (const s of steps) {
        if (s.k === 'one') await exec(s.cmd);
        else await Promise.all([exec({ ...s.a, on: 0 } as Cmd), exec({ ...s.b, on: 1 } as Cmd)]);
        await check();
      }
    });
    try {
      await fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: true });
    } catch (err) {
      failures = 1;
      counterexample = (err as Error).message.slice(0, 2000);
      throw err;
    } finally {
      recordSuite('settlement', 'model', { cases: RUNS, failures, seed: SEED, counterexample });
    }
  }, 3_600_000);
});

test('the model computes fees in integer cents as the gateway must', () => {
  expect(expectedFeeCents(10_000, 290, 30)).toBe(320); // 100.00 at 2.9 % + 0.30
  expect(expectedFeeCents(1050, 150, 0)).toBe(16); // 0.1575 → 0.16
  expect(expectedFeeCents(10, 500, 0)).toBe(1); // 0.005 → 0.01, half up
  expect(expectedFeeCents(50, 0, 100)).toBe(50); // capped at the gross
});
