import pg from 'pg';
import pino from 'pino';
import { useTestApp, factories, http, type TestApp } from '../helpers/app.js';
import { describeOnServer } from '../helpers/db.js';
import { requestPayment } from '../helpers/payments.js';
import { sql } from '../../src/db/sql.js';
import { OutboxReader, inSubjectOrder, type OutboxRow } from '../../src/events/outbox.js';
import { settledHorizon } from '../../src/events/event.service.js';
import { poll } from '../helpers/expect.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

const silent = pino({ level: 'silent' });

/** A reader of this database with a small batch, fed every user's rows; reads only when told to. */
function reader(batch: number) {
  const got: OutboxRow[] = [];
  let reads = 0;
  const r = new OutboxReader({
    query: (name, text, values) => app.db.sql.run(sql(name, text), values),
    log: silent,
    intervalMs: 60_000,
    interested: () => true,
    anyInterest: () => true,
    deliver: ({ rows }) => void got.push(...rows),
    onRead: () => reads++,
    batch,
  });
  /** Reads until a read comes back short (everything visible now was handed over). */
  const drain = async () => {
    while (await r.readOnce());
  };
  return { r, got, drain, reads: () => reads };
}

test('a batch is what committed since the last one: every row once, in pages of the batch size, nothing before attach', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 100 });
  const before = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  const { r, got, drain, reads } = reader(3);
  await r.attach();
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) ids.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
  await drain();
  const mine = got.filter((row) => row.userId === user.userId);
  expect(mine.map((row) => row.subjectId)).toEqual(ids);
  expect(mine.map((row) => row.subjectId)).not.toContain(before);
  expect(new Set(got.map((row) => row.id)).size).toBe(got.length);
  expect(reads()).toBeGreaterThanOrEqual(3); // 8 rows (and maybe others') in pages of 3
  const after = got.length;
  await drain();
  expect(got).toHaveLength(after); // nothing new, nothing again
  const last = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
  await drain();
  expect(got.slice(after).filter((row) => row.userId === user.userId).map((row) => row.subjectId)).toEqual([last]);
  expect(mine[0]).toMatchObject({ type: 'payment_request.created', sequence: 1 });
  expect(JSON.parse(mine[0]!.payload)).toMatchObject({ type: 'payment_request.created', data: { paymentRequest: { id: ids[0] } } });
});

test('inSubjectOrder puts each subject\'s rows in sequence order in the places its rows take, others stay', () => {
  const row = (subjectId: string, sequence: number) => ({ subjectId, sequence });
  expect(inSubjectOrder([row('a', 3), row('b', 1), row('a', 2), row('c', 5), row('a', 4)])).toEqual([row('a', 2), row('b', 1), row('a', 3), row('c', 5), row('a', 4)]);
  expect(inSubjectOrder([])).toEqual([]);
});

describeOnServer('the outbox across transactions and instances', 'a held transaction and a second connection exist on a server only (the embedded database is one session)', () => {
  test('a transaction running across batches is read once when it commits, whatever its position', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const { r, got, drain } = reader(2);
    await r.attach();
    const held = new pg.Client({ connectionString: app.database.url! });
    await held.connect();
    try {
      const first = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      const [pr] = await app.db.orm.em.fork().execute<Array<{ id: string }>>('select id from payment_requests where id = ?', [first]);
      // A transaction that writes an event and stays open while others commit and are read.
      await held.query('begin');
      await held.query(`select pg_current_xact_id()`);
      await held.query(
        `insert into events (id, type, developer_id, subject_id, payment_request_id, user_id, sequence, payload, created_at)
         values ('evt_heldheldheldheldheld1', 'payment_request.approved', $1, $2::text, $2::uuid, $3, 2, '{"id":"evt_heldheldheldheldheld1"}', now())`,
        [dev.developerId, pr!.id, user.userId],
      );
      const during: string[] = [];
      for (let i = 0; i < 5; i++) during.push(await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1));
      await drain();
      const ofUser = () => got.filter((row) => row.userId === user.userId).map((row) => row.id);
      expect(ofUser()).not.toContain('evt_heldheldheldheldheld1');
      expect(got.filter((row) => row.userId === user.userId).map((row) => row.subjectId)).toEqual([first, ...during]);
      await held.query('commit');
      await drain();
      expect(ofUser().filter((id) => id === 'evt_heldheldheldheldheld1')).toHaveLength(1);
      await drain();
      expect(new Set(got.map((row) => row.id)).size).toBe(got.length);
    } finally {
      await held.query('rollback').catch(() => undefined);
      await held.end();
    }
  });

  test('GET /events stops below a transaction running in this database, but not for long below one of another database', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const listed = async () =>
      ((await http(app.baseUrl, '/api/v1/events', { token: dev.secretKey })).body.data as Array<{ data: { paymentRequest: { id: string } } }>).map(
        (e) => e.data.paymentRequest.id,
      );
    const first = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const holdIn = async (url: string) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query('begin');
      await c.query('select pg_current_xact_id()'); // an xid: the server's oldest running transaction
      return c;
    };
    // Another database's long transaction: the page may wait for it briefly, then goes past it.
    const otherDb = new URL(app.database.url!);
    otherDb.pathname = '/postgres';
    const foreign = await holdIn(otherDb.toString());
    try {
      const second = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      const ids = await poll('the second request listed', listed, (l) => l.includes(second), 10_000, 100);
      expect(ids).toEqual([first, second]);
    } finally {
      await foreign.query('rollback');
      await foreign.end();
    }
    // This database's running transaction: nothing after it is listed until it ends.
    const local = await holdIn(app.database.url!);
    let third: string;
    try {
      third = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      // What decides it (no waiting needed): the running transaction is the API's settled horizon,
      // and the later commit's row lies above it.
      const [{ xid }] = (await local.query<{ xid: string }>('select pg_current_xact_id()::text as xid')).rows as [{ xid: string }];
      expect(await settledHorizon(app.db.sql)).toBe(xid);
      const [row] = await app.db.orm.em.fork().execute<Array<{ above: boolean }>>('select xid > ?::xid8 as above from events where payment_request_id = ?', [xid, third]);
      expect(row!.above).toBe(true);
      expect(await listed()).not.toContain(third);
    } finally {
      await local.query('rollback');
      await local.end();
    }
    expect(await listed()).toContain(third);
  });

  test('two events of one request whose transactions took their xids in the other order are handed over in sequence order', async () => {
    const f = factories(app);
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
    const { r, got, drain } = reader(100);
    await r.attach();
    const [early, late] = [new pg.Client({ connectionString: app.database.url! }), new pg.Client({ connectionString: app.database.url! })];
    await early.connect();
    await late.connect();
    const insert = (c: pg.Client, sequence: number) =>
      c.query(
        `insert into events (id, type, subject_id, developer_id, payment_request_id, user_id, sequence, payload, created_at)
         values ($1, 'payment_request.cancelled', $3::text, $2, $3::uuid, $5, $4, json_build_object('id', $1::text), now())`,
        [`evt_xidorder${sequence}${id.replace(/-/g, '').slice(0, 12)}`, dev.developerId, id, sequence, user.userId],
      );
    try {
      // The transaction that writes the later event takes its xid first (as one whose first statement
      // claims an Idempotency-Key does, before it waits for the request's row lock).
      await late.query('begin');
      await late.query('select pg_current_xact_id()');
      await early.query('begin');
      await early.query('select pg_current_xact_id()');
      await insert(early, 2);
      await early.query('commit');
      await insert(late, 3);
      await late.query('commit');
      await drain();
      expect(got.filter((row) => row.subjectId === id).map((row) => row.sequence)).toEqual([2, 3]);
    } finally {
      await early.end();
      await late.end();
    }
  });
});
