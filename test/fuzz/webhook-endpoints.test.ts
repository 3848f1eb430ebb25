// Issue #31 item 4: a merchant's own operations on one webhook endpoint, 8 at a time (rotate the
// secret, enable, test, delete, and payment requests whose deliveries go to a receiver that
// answers 500, so attempts are recorded and the endpoint's failure clock runs meanwhile), must
// never answer 5xx. It used to: DELETEs were deadlock victims of the worker recording an attempt
// (delivery row, then endpoint row), enables gave up behind foreign-key locks, and enables
// deadlocked each other; test/webhooks/endpoint-locks.test.ts puts the first two in place on
// purpose, this suite looks for whatever comes next. `npm test` sends 600 requests;
// `npm run test:fuzz -- --count 2500` the 2,500. Counts answers, never times them.
import { factories, http, startTestApp, type TestApp } from '../helpers/app.js';
import { describeOnServer, ONE_CONNECTION } from '../helpers/db.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import { recordSuite, suiteSize } from '../suite-size.js';

const { count: COUNT, seed: SEED } = suiteSize('fuzz-webhook-endpoints', { count: 600, embedded: 300 });

/** A small deterministic generator from the suite's seed (which operation comes next). */
function generator(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0x100000000;
  };
}

const OPERATIONS = ['rotate-secret', 'enable', 'test', 'create', 'create', 'create', 'rotate-secret', 'enable', 'test', 'delete'] as const;

describeOnServer('a merchant\'s operations on its own webhook endpoint, 8 at a time, beside its deliveries', ONE_CONNECTION, () => {
  let app: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    app = await startTestApp({
      env: {
        // Retries every second and a quick poll: attempts are recorded throughout the run.
        WEBHOOK_RETRY_SCHEDULE: Array(11).fill('1').join(','),
        WEBHOOK_POLL_INTERVAL_MS: '50',
        RATE_LIMIT_PER_SECOND: '100000',
        WEBHOOK_TEST_LIMIT_PER_MINUTE: '100000',
      },
    });
    receiver = await startReceiver({ respond: () => 500 });
  });
  afterAll(async () => {
    await receiver?.close();
    await app?.close();
  });

  test(`${COUNT} requests: never a 5xx, no delivery pass lost`, async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 1_000_000 });
    const register = async (): Promise<string> => (await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey, body: { url: receiver.url } })).body.id as string;
    let endpoint = await register();
    const next = generator(SEED);
    const answers: Record<string, number> = {};
    const failures: string[] = [];
    let sent = 0;
    const client = async (): Promise<void> => {
      while (sent < COUNT) {
        sent++;
        const op = OPERATIONS[Math.floor(next() * OPERATIONS.length)]!;
        const id = endpoint;
        let status: number;
        if (op === 'create') {
          status = (await http(app.baseUrl, '/api/v1/wallet/request-payment', {
            token: dev.secretKey,
            body: { walletId: user.walletId, amount: 1, description: 'Fuzz', merchantName: 'Fuzz' },
          })).status;
        } else if (op === 'delete') {
          status = (await http(app.baseUrl, `/api/v1/webhook-endpoints/${id}`, { method: 'DELETE', token: dev.secretKey })).status;
          if (status === 200) endpoint = await register();
        } else {
          status = (await http(app.baseUrl, `/api/v1/webhook-endpoints/${id}/${op}`, { method: 'POST', token: dev.secretKey })).status;
        }
        answers[`${op} ${status}`] = (answers[`${op} ${status}`] ?? 0) + 1;
        // 200, or 404 for an endpoint another client deleted meanwhile; nothing else.
        if (status !== 200 && !(status === 404 && op !== 'create')) failures.push(`${op} answered ${status}`);
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    const lost = app.logs.filter((l) => /webhook delivery pass failed|deadlock/.test(l));
    recordSuite('fuzz', 'webhook-endpoints', { cases: COUNT, failures: failures.length + lost.length, seed: SEED, counterexample: failures[0] ?? lost[0] });
    expect({ failures, lost }).toEqual({ failures: [], lost: [] });
    // The run did what it is for: attempts were recorded while the endpoints were worked on.
    expect(answers['create 200']).toBeGreaterThan(0);
    expect((await app.db.sql.query<{ n: number }>('select count(*)::int as n from webhook_attempts'))[0]!.n).toBeGreaterThan(0);
  }, 600_000);
});
