import fc from 'fast-check';
import type { Client } from 'graphql-ws';
import { TEST_PIN, startTestApp, factories, gql, http, type TestApp } from '../helpers/app.js';
import { ledgerMismatches } from '../helpers/payments.js';
import { subscribe, untilSubscribed, wsClient, type Sub } from '../helpers/ws.js';
import { recordSuite, suiteSize } from '../suite-size.js';

// Model-based test: random interleavings (with several calls in flight) of create / approve /
// reject / cancel / expire / top-up / refund / suspend / activate / revoke over 2 developers and
// 2 users, through the real doors (REST with secret keys, GraphQL with user tokens and the admin
// token). A model decides which answers each call may get (a batch in flight may have run in any
// order); after every batch the database must agree with the model and with itself, and at the end
// each user's subscriber must have seen exactly its own events.
// `npm run test:model -- --runs N [--seed S]`; CI runs the default.
const { count: RUNS, seed: SEED } = suiteSize('model', { count: 12, embedded: 6 });
const TTL_MS = 2000;
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    env: { PAYMENT_REQUEST_TTL_SECONDS: String(TTL_MS / 1000), EXPIRY_SWEEP_INTERVAL_MS: '100', KEY_CACHE_TTL_MS: '0', RATE_LIMIT_PER_SECOND: '100000', WS_MAX_CONNECTIONS_PER_USER: '100' },
  });
}, 60_000);
afterAll(async () => {
  await app?.close();
});

type Status = 'PENDING' | 'APPROVED' | 'REJECTED' | 'CANCELLED' | 'EXPIRED';
interface PR {
  id: string;
  d: number;
  u: number;
  amount: number;
  status: Status;
  expiresAt: number;
  txId?: string;
  refunded: boolean;
}
interface Model {
  balance: number[];
  active: boolean[];
  revoked: boolean[];
  prs: PR[];
}
const clone = (m: Model): Model => ({ balance: [...m.balance], active: [...m.active], revoked: [...m.revoked], prs: m.prs.map((p) => ({ ...p })) });

type Cmd =
  | { k: 'create'; d: number; u: number; amount: number }
  | { k: 'approve' | 'reject' | 'cancel' | 'expire' | 'refund'; p: number }
  | { k: 'topup'; u: number; amount: number }
  | { k: 'suspend' | 'activate'; u: number }
  | { k: 'revoke'; d: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant('create' as const), d: fc.nat(1), u: fc.nat(1), amount: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constantFrom('approve' as const, 'reject' as const, 'cancel' as const, 'refund' as const), p: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('expire' as const), p: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('topup' as const), u: fc.nat(1), amount: fc.integer({ min: 1, max: 80 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constantFrom('suspend' as const, 'activate' as const), u: fc.nat(1) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('revoke' as const), d: fc.nat(1) }) },
);
/** A program: batches of 1–3 commands sent together (in flight at the same time). */
const program = fc.array(fc.array(cmd, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 10 });

interface World {
  devs: Array<{ developerId: string; secretKey: string; keyId: string }>;
  users: Array<{ userId: string; walletId: string; token: string }>;
}

/** What a call answered: ok with its data, or the error code. */
type Outcome = { ok: true; data: any } | { ok: false; code: string };
const MARGIN_MS = 300;

/** Runs one command through its door. */
async function execute(w: World, m: Model, c: Cmd): Promise<Outcome | 'skip'> {
  const admin = app.config.adminToken;
  const gqlOutcome = async (query: string, variables: Record<string, unknown>, token: string, field: string): Promise<Outcome> => {
    const res = await gql(app.baseUrl, query, variables, token);
    if (res.body.errors?.length) return { ok: false, code: res.body.errors[0].extensions.code };
    return { ok: true, data: res.body.data[field] };
  };
  switch (c.k) {
    case 'create': {
      const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
        token: w.devs[c.d]!.secretKey,
        body: { walletId: w.users[c.u]!.walletId, amount: c.amount, description: 'model', merchantName: 'Model' },
      });
      return res.status === 200 ? { ok: true, data: res.body } : { ok: false, code: String(res.status) };
    }
    case 'approve':
    case 'reject': {
      const pr = m.prs[c.p % Math.max(1, m.prs.length)];
      if (!pr) return 'skip';
      const field = c.k === 'approve' ? 'approvePaymentRequest' : 'rejectPaymentRequest';
      const verification = c.k === 'approve' ? `, verification: { pin: "${TEST_PIN}" }` : '';
      return gqlOutcome(`mutation($id: ID!) { ${field}(id: $id${verification}) { id status transactionId } }`, { id: pr.id }, w.users[pr.u]!.token, field);
    }
    case 'cancel': {
      const pr = m.prs[c.p % Math.max(1, m.prs.length)];
      if (!pr) return 'skip';
      const res = await http(app.baseUrl, `/api/v1/wallet/payment-request/${pr.id}/cancel`, { method: 'POST', token: w.devs[pr.d]!.secretKey });
      return res.status === 200 ? { ok: true, data: res.body } : { ok: false, code: String(res.status) };
    }
    case 'expire': {
      const pr = m.prs[c.p % Math.max(1, m.prs.length)];
      if (!pr || pr.status !== 'PENDING') return 'skip';
      const wait = pr.expiresAt + MARGIN_MS - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait)); // the moment the request expires
      return { ok: true, data: null };
    }
    case 'refund': {
      const pr = m.prs[c.p % Math.max(1, m.prs.length)];
      if (!pr?.txId) return 'skip';
      return gqlOutcome('mutation($id: ID!) { refundTransaction(id: $id) { id status } }', { id: pr.txId }, admin, 'refundTransaction');
    }
    case 'topup':
      return gqlOutcome('mutation($w: String!, $a: Float!) { topUpWallet(walletId: $w, amount: $a) { balance } }', { w: w.users[c.u]!.walletId, a: c.amount }, admin, 'topUpWallet');
    case 'suspend':
    case 'activate':
      return gqlOutcome(
        'mutation($w: String!, $s: WalletStatus!) { setWalletStatus(walletId: $w, status: $s) { status } }',
        { w: w.users[c.u]!.walletId, s: c.k === 'suspend' ? 'SUSPENDED' : 'ACTIVE' },
        admin,
        'setWalletStatus',
      );
    case 'revoke':
      return gqlOutcome('mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: w.devs[c.d]!.keyId }, admin, 'revokeSecretKey');
  }
}

/**
 * The model's judgement of one command's outcome, given the state before it and the time window
 * [sent, answered] of the call: the next state, or a reason it is not an allowed answer.
 */
function step(m0: Model, c: Cmd, o: Outcome | 'skip', sent: number, answered: number, prIndex: number | undefined): Model | string {
  if (o === 'skip') return m0;
  const m = clone(m0);
  const pr = prIndex === undefined ? undefined : m.prs[prIndex];
  const expiredSurely = (p: PR) => sent > p.expiresAt + MARGIN_MS;
  const validSurely = (p: PR) => answered < p.expiresAt - MARGIN_MS;
  const decide = (p: PR, to: Status, money: boolean): Model | string => {
    if (p.status !== 'PENDING') return !o.ok && o.code.match(/PAYMENT_REQUEST_NOT_PENDING|409/) ? m : `${c.k} of ${p.status}: ${JSON.stringify(o)}`;
    // Expired by the clock (PAYMENT_REQUEST_EXPIRED) or already by the sweeper (NOT_PENDING).
    if (!o.ok && /PAYMENT_REQUEST_EXPIRED|PAYMENT_REQUEST_NOT_PENDING|409/.test(o.code) && !validSurely(p)) {
      p.status = 'EXPIRED';
      return m;
    }
    if (expiredSurely(p)) return `${c.k} after expiry answered ${JSON.stringify(o)}`;
    if (money) {
      if (!m.active[p.u]) return !o.ok && o.code === 'WALLET_NOT_ACTIVE' ? m : `approve on a suspended wallet: ${JSON.stringify(o)}`;
      if (m.balance[p.u]! < p.amount) return !o.ok && o.code === 'INSUFFICIENT_FUNDS' ? m : `approve without funds: ${JSON.stringify(o)}`;
    }
    if (!o.ok || o.data.status !== to) return `${c.k} of a valid request answered ${JSON.stringify(o)}`;
    p.status = to;
    if (money) {
      m.balance[p.u]! -= p.amount;
      if (!o.data.transactionId) return 'approved without a transactionId';
      p.txId = o.data.transactionId;
    }
    return m;
  };
  switch (c.k) {
    case 'create':
      if (m.revoked[c.d]) return !o.ok && o.code === '401' ? m : `revoked key created: ${JSON.stringify(o)}`;
      if (!m.active[c.u]) return !o.ok && o.code === '400' ? m : `create on a suspended wallet: ${JSON.stringify(o)}`;
      if (!o.ok) return `create refused: ${o.code}`;
      m.prs.push({ id: o.data.paymentRequestId, d: c.d, u: c.u, amount: c.amount, status: 'PENDING', expiresAt: Date.parse(o.data.expiresAt), refunded: false });
      return m;
    case 'approve':
      return decide(pr!, 'APPROVED', true);
    case 'reject':
      return decide(pr!, 'REJECTED', false);
    case 'cancel':
      if (m.revoked[pr!.d]) return !o.ok && o.code === '401' ? m : `revoked key cancelled: ${JSON.stringify(o)}`;
      return decide(pr!, 'CANCELLED', false);
    case 'expire':
      if (pr!.status === 'PENDING') pr!.status = 'EXPIRED';
      return m;
    case 'refund':
      if (pr!.refunded) return !o.ok ? m : 'refunded twice';
      if (!o.ok) return `refund refused: ${o.code}`;
      pr!.refunded = true;
      m.balance[pr!.u]! += pr!.amount;
      return m;
    case 'topup':
      if (!o.ok) return m.active[c.u] ? `top-up refused: ${o.code}` : m;
      m.balance[c.u]! += c.amount;
      return m;
    case 'suspend':
    case 'activate':
      if (!o.ok) return `status change refused: ${o.code}`;
      m.active[c.u] = c.k === 'activate';
      return m;
    case 'revoke':
      if (!o.ok) return m.revoked[c.d] ? m : `revoke refused: ${o.code}`;
      m.revoked[c.d] = true;
      return m;
  }
}

const permutations = <T>(xs: T[]): T[][] => (xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest])));

/** The database agrees with itself and with the model. */
async function invariants(w: World, m: Model): Promise<string[]> {
  const em = app.db.orm.em.fork();
  const problems: string[] = [];
  const mismatches = await ledgerMismatches(app.db);
  if (mismatches.length) problems.push(`ledger ≠ balances: ${JSON.stringify(mismatches)}`);
  const negative = await em.execute(`select id from wallets where balance < 0 union all select developer_id::text from developer_balances where balance < 0`);
  if (negative.length) problems.push(`negative balance: ${JSON.stringify(negative)}`);
  const ids = m.prs.map((p) => p.id);
  if (ids.length) {
    const rows = await em.execute<Array<{ id: string; status: string; n: number }>>(
      `select p.id, p.status, (select count(*)::int from transactions t where t.payment_request_id = p.id) as n from payment_requests p where p.id = any(?::uuid[])`,
      [`{${ids.join(',')}}`],
    );
    for (const r of rows) if ((r.status === 'APPROVED') !== (r.n === 1)) problems.push(`${r.id}: ${r.status} with ${r.n} transactions`);
  }
  for (const [u, user] of w.users.entries()) {
    const [row] = await em.execute<Array<{ balance: string; status: string }>>('select balance, status from wallets where id = ?', [user.walletId]);
    if (Number(row!.balance) !== m.balance[u]) problems.push(`wallet ${u}: database ${row!.balance}, model ${m.balance[u]}`);
    if ((row!.status === 'ACTIVE') !== m.active[u]) problems.push(`wallet ${u}: database ${row!.status}, model active=${m.active[u]}`);
  }
  return problems;
}

let runs = 0;
test('random interleavings keep the money, the state machine and every subscriber right', async () => {
  const result = await fc.check(
    fc.asyncProperty(program, async (batches) => {
      runs++;
      const f = factories(app);
      const w: World = { devs: [await f.developer('A'), await f.developer('B')], users: [await f.user({ balance: 100 }), await f.user({ balance: 30 })] };
      let m: Model = { balance: [100, 30], active: [true, true], revoked: [false, false], prs: [] };
      const hub = app.gateway.services.eventHub;
      const before = hub.stats.subscriptions;
      const clients: Client[] = w.users.map((u) => wsClient(app.baseUrl, u.token));
      const subs: Array<{ requested: Sub<any>; updated: Sub<any> }> = clients.map((c) => ({
        requested: subscribe(c, 'subscription { paymentRequested { id } }'),
        updated: subscribe(c, 'subscription { paymentRequestUpdated { id status } }'),
      }));
      try {
        await untilSubscribed(hub, before + 4);
        for (const batch of batches) {
          const base = m;
          const targets = batch.map((c) => ('p' in c && base.prs.length ? c.p % base.prs.length : undefined));
          const calls = await Promise.all(
            batch.map(async (c) => {
              const sent = Date.now();
              const o = await execute(w, base, c);
              return { c, o, sent, answered: Date.now() };
            }),
          );
          // Some order of the batch must explain every answer, and leave the database as it is.
          // Several orders can explain the same answers and end differently (suspend and activate
          // of one wallet both succeed in either order; the later one wins), so each order that
          // explains the answers is checked against the database until one agrees.
          const reasons: string[] = [];
          const disagreements: string[] = [];
          let next: Model | undefined;
          for (const order of permutations(calls.map((_, i) => i))) {
            let s: Model | string = base;
            for (const i of order) {
              if (typeof s === 'string') break;
              s = step(s, calls[i]!.c, calls[i]!.o, calls[i]!.sent, calls[i]!.answered, targets[i]);
            }
            if (typeof s === 'string') {
              reasons.push(s);
              continue;
            }
            const problems = await invariants(w, s);
            if (problems.length === 0) {
              next = s;
              break;
            }
            disagreements.push(`order ${order.join(',')}: ${problems.join('; ')}`);
          }
          if (!next && disagreements.length === 0) throw new Error(`no order of ${JSON.stringify(calls.map((x) => [x.c, x.o]))} is allowed: ${reasons.join('; ')}`);
          if (!next) throw new Error(`after ${JSON.stringify(batch)}: ${disagreements.join(' | ')}`);
          m = next;
        }
        // Every subscriber saw exactly its own user's events: each creation and each decision; a
        // request still PENDING in the model may meanwhile have been expired by the sweeper.
        const deadline = Date.now() + 5000;
        const wanted = w.users.map((_, u) => ({
          requested: m.prs.filter((p) => p.u === u).map((p) => p.id).sort(),
          updated: m.prs.filter((p) => p.u === u && p.status !== 'PENDING').map((p) => `${p.id}:${p.status}`).sort(),
          optional: new Set(m.prs.filter((p) => p.u === u && p.status === 'PENDING').map((p) => `${p.id}:EXPIRED`)),
        }));
        const seen = () =>
          subs.map((s, u) => {
            const updated = s.updated.values.map((v) => `${v.paymentRequestUpdated.id}:${v.paymentRequestUpdated.status}`);
            return {
              requested: s.requested.values.map((v) => v.paymentRequested.id as string).sort(),
              updated: updated.filter((e) => !wanted[u]!.optional.has(e)).sort(),
            };
          });
        const expected = wanted.map(({ requested, updated }) => ({ requested, updated }));
        while (JSON.stringify(seen()) !== JSON.stringify(expected) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        expect(seen()).toEqual(expected);
      } finally {
        for (const s of subs) {
          s.requested.dispose();
          s.updated.dispose();
        }
        await Promise.all(clients.map((c) => c.dispose()));
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  recordSuite('model', 'interleavings', { cases: result.numRuns, failures: result.failed ? 1 : 0, seed: SEED });
  process.stderr.write(`[model] ${result.numRuns} programs (${runs} executions with shrinking), seed ${SEED}\n`);
  if (result.failed) throw new Error(`${fc.defaultReportMessage(result)}\n${String((result.errorInstance as Error | undefined)?.message ?? result.errorInstance)}`);
}, 3_600_000);
