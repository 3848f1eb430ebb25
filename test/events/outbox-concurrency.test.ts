// The outbox reader's cursor (src/events/outbox-reader.ts, the snapshot difference) under many
// transactions on a real PostgreSQL server that commit in an order unlike the one they began in,
// while a reader reads between and during the commits in small pages: every event is handed over
// exactly once, none is skipped, none is handed over before its transaction committed.
import pg from 'pg';
import pino from 'pino';
import { startTestApp, factories, type TestApp } from '../helpers/app.js';
import { describeOnServer } from '../helpers/db.js';
import { requestPayment } from '../helpers/payments.js';
import { sql } from '../../src/db/sql.js';
import { OutboxReader, type OutboxRow } from '../../src/events/outbox.js';

describeOnServer('the outbox cursor under concurrent commits', 'concurrent transactions need a server (the embedded database is one session)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app.close();
  });

  /** A reader of every user's rows, in pages of `batch`; reads only when told to. */
  function reader(batch: number) {
    const got: OutboxRow[] = [];
    const r = new OutboxReader({
      query: (name, text, values) => app.db.sql.run(sql(name, text), values),
      log: pino({ level: 'silent' }),
      intervalMs: 3_600_000,
      interested: () => true,
      anyInterest: () => true,
      deliver: ({ rows }) => void got.push(...rows),
      batch,
    });
    /**
     * Reads until everything committed before the call was handed over: the batch under way (its
     * pages all belong to a snapshot that may predate the call), then one more batch, whose
     * snapshot is taken now.
     */
    const drain = async () => {
      for (let batches = 0; batches < 2; batches++) {
        for (let pages = 0; await r.readOnce(); pages++) if (pages > 10_000) throw new Error('the reader never came back short');
      }
    };
    return { r, got, drain };
  }

  /** A transaction on its own connection that has taken its xid and written one event, not committed yet. */
  async function openWriter(developerId: string, paymentRequestId: string, n: number) {
    const c = new pg.Client({ connectionString: app.database.url! });
    await c.connect();
    await c.query('begin');
    await c.query('select pg_current_xact_id()');
    const id = `evt_concurrent${String(n).padStart(8, '0')}x${paymentRequestId.replace(/-/g, '').slice(0, 8)}`;
    await c.query(
      `insert into events (id, type, developer_id, subject_id, payment_request_id, user_id, sequence, payload, created_at)
       values ($1, 'payment_request.cancelled', $2, $3::text, $3::uuid,
               (select w.user_id from payment_requests pr join wallets w on w.id = pr.wallet_id where pr.id = $3::uuid), 2, json_build_object('id', $1::text), now())`,
      [id, developerId, paymentRequestId],
    );
    return { id, client: c };
  }

  /** A fixed permutation of 0..n-1 far from the start order (odd indexes descending, then even ones ascending). */
  const scrambled = (n: number) => [
    ...Array.from({ length: n }, (_, i) => i)
      .filter((i) => i % 2 === 1)
      .reverse(),
    ...Array.from({ length: n }, (_, i) => i).filter((i) => i % 2 === 0),
  ];

  test('60 transactions committing out of their start order, read in pages of 3 between and during the commits: each event once, none missing, none early', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 1000 });
    const N = 60;
    const requests: string[] = [];
    for (let i = 0; i < N; i++) requests.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
    const { r, got, drain } = reader(3);
    await r.attach();
    const committed = new Set<string>();
    const mine = () => got.filter((row) => row.id.startsWith('evt_concurrent')).map((row) => row.id);
    /** Every event handed over so far had been sent its COMMIT when it was read (one reader at a time: drain and the loop never overlap). */
    const noneEarly = () => expect(mine().filter((id) => !committed.has(id))).toEqual([]);

    const writers: Array<{ id: string; client: pg.Client }> = [];
    try {
      // Wave 1: 30 transactions begin in order; half of them commit in a scrambled order, with
      // reads in between, while the rest stay open.
      for (let i = 0; i < N / 2; i++) writers.push(await openWriter(dev.developerId, requests[i]!, i));
      const wave1 = scrambled(N / 2);
      for (const [k, i] of wave1.slice(0, N / 4).entries()) {
        committed.add(writers[i]!.id);
        await writers[i]!.client.query('commit');
        if (k % 2 === 0) await drain();
        noneEarly();
      }
      // Wave 2: 30 more begin while wave 1's other half is still open.
      for (let i = N / 2; i < N; i++) writers.push(await openWriter(dev.developerId, requests[i]!, i));
      await drain();
      noneEarly();
      // Everything left commits in a scrambled order, concurrently with reads in a loop.
      const rest = [...wave1.slice(N / 4), ...scrambled(N / 2).map((i) => i + N / 2)];
      let committing = true;
      const reading = (async () => {
        while (committing) {
          await r.readOnce();
          noneEarly();
        }
      })();
      await Promise.all(
        rest.map(async (i, k) => {
          // Staggered so that commits and the reads interleave in many ways.
          for (let turn = 0; turn < k % 5; turn++) await new Promise((resolve) => setImmediate(resolve));
          committed.add(writers[i]!.id); // (marked before the COMMIT is sent: the reader may see it before the reply)
          await writers[i]!.client.query('commit');
        }),
      );
      committing = false;
      await reading;
      await drain();
    } finally {
      for (const w of writers) {
        await w.client.query('rollback').catch(() => undefined);
        await w.client.end();
      }
    }
    const ids = mine();
    const expected = writers.map((w) => w.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]); // none twice
    expect(expected.filter((id) => !ids.includes(id))).toEqual([]); // none skipped
    expect(new Set(ids)).toEqual(new Set(expected));
    // Nothing more on later reads.
    const before = got.length;
    await drain();
    expect(got).toHaveLength(before);
  });
});
