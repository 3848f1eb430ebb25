// The unit of work (src/db/unit-of-work.ts) on a real database: what its transactions commit,
// what they hand to the commit listener and when, joining, and committing early for an effect
// outside the database.
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { UnitsOfWork, type Committed, type OutgoingEvent } from '../../src/db/unit-of-work.js';
import { sql } from '../../src/db/sql.js';

let database: TestDatabase;
let works: UnitsOfWork;
const committed: Committed[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  works = new UnitsOfWork(database.db.sql, () => database.db.orm.em.fork());
  works.onCommit((c) => committed.push(c));
  await database.db.sql.query('create table uow_probe (id int primary key, note text)');
});
afterAll(async () => {
  await database.close();
});
beforeEach(async () => {
  committed.length = 0;
  await database.db.sql.query('delete from uow_probe');
});

const event = (id: string): OutgoingEvent => ({ id, type: 'payment_request.created', subjectId: 's', sequence: 1, userId: null, payload: {} });
const rows = async () => (await database.db.sql.query<{ id: number }>('select id from uow_probe order by id')).map((r) => r.id);
const INSERT = sql('uow_probe_insert', 'insert into uow_probe (id, note) values ($1, $2)');

test('a transaction commits its statements and then hands what it wrote to the listener, once; its after-commit callbacks run after', async () => {
  const work = works.begin();
  const order: string[] = [];
  works.onCommit((c) => {
    committed.push(c);
    order.push('listener');
  });
  const result = await work.transaction(async (tx) => {
    await tx.run(INSERT, [1, 'a']);
    tx.wrote([event('e1')], true);
    tx.afterCommit(() => order.push('callback'));
    // Inside the transaction the unit of work's own statements see its writes.
    expect(await work.query('select id from uow_probe')).toEqual([{ id: 1 }]);
    expect(committed).toEqual([]);
    return 'done';
  });
  expect(result).toBe('done');
  expect(await rows()).toEqual([1]);
  expect(committed).toEqual([{ events: [event('e1')], deliveries: true }]);
  expect(order).toEqual(['listener', 'callback']);
  works.onCommit((c) => committed.push(c));
});

test('a failure rolls everything back and hands nothing over', async () => {
  const work = works.begin();
  let called = false;
  await expect(
    work.transaction(async (tx) => {
      await tx.run(INSERT, [2, 'b']);
      tx.wrote([event('e2')], false);
      tx.afterCommit(() => (called = true));
      throw new Error('boom');
    }),
  ).rejects.toThrow('boom');
  expect(await rows()).toEqual([]);
  expect(committed).toEqual([]);
  expect(called).toBe(false);
});

test('a transaction opened inside another of the same unit of work runs in it: one commit, and a failure of the outer undoes the inner', async () => {
  const work = works.begin();
  await expect(
    work.transaction(async () => {
      await work.transaction(async (tx) => {
        await tx.run(INSERT, [3, 'inner']);
        tx.wrote([event('e3')], false);
      });
      // The inner body returned, but nothing is committed or handed over before the outer commits.
      expect(committed).toEqual([]);
      throw new Error('outer failed');
    }),
  ).rejects.toThrow('outer failed');
  expect(await rows()).toEqual([]);
  expect(committed).toEqual([]);
  await work.transaction(async () => {
    await work.transaction(async (tx) => {
      await tx.run(INSERT, [4, 'inner']);
      tx.wrote([event('e4')], false);
    });
  });
  expect(await rows()).toEqual([4]);
  expect(committed.map((c) => c.events.map((e) => e.id))).toEqual([['e4']]);
});

test('the statements riding on BEGIN and COMMIT run in the same transaction, and their rows reach the body', async () => {
  const work = works.begin();
  await work.transaction(
    async (_tx, begun) => {
      expect(begun).toEqual([{ id: 5 }]);
      return 6;
    },
    {
      begin: { text: "insert into uow_probe (id, note) values ($1, 'begin') returning id", values: [5] },
      commit: (n) => ({ text: "insert into uow_probe (id, note) values ($1, 'commit')", values: [n] }),
    },
  );
  expect(await rows()).toEqual([5, 6]);
  await expect(
    work.transaction(
      async () => {
        throw new Error('no');
      },
      { begin: { text: "insert into uow_probe (id, note) values ($1, 'begin')", values: [7] } },
    ),
  ).rejects.toThrow('no');
  expect(await rows()).toEqual([5, 6]);
});

test('outside() commits what the open transaction did before the effect runs, with no connection held; a later failure runs `abandon`', async () => {
  const work = works.begin();
  const result = await work.transaction(
    async () => {
      await work.query("insert into uow_probe (id, note) values (8, 'before')");
      return work.outside(async () => {
        // Committed and visible to everyone while the effect runs.
        expect(await rows()).toEqual([8]);
        return 9;
      });
    },
    { commit: (n) => ({ text: "insert into uow_probe (id, note) values ($1, 'after')", values: [n] }) },
  );
  expect(result).toBe(9);
  // The commit statement ran on its own once the body returned.
  expect(await rows()).toEqual([8, 9]);
  await expect(
    work.transaction(
      async () => {
        await work.query("insert into uow_probe (id, note) values (10, 'claimed')");
        await work.outside(async () => undefined);
        throw new Error('after the effect');
      },
      { abandon: { text: 'delete from uow_probe where id = $1', values: [10] } },
    ),
  ).rejects.toThrow('after the effect');
  expect(await rows()).toEqual([8, 9]);
});

test('outside() refuses to run inside a transaction body of its own, and the ORM refuses while a transaction is open', async () => {
  const work = works.begin();
  await expect(work.transaction(() => work.transaction(() => work.outside(async () => 1)))).rejects.toThrow(/inside a transaction body/);
  await work.transaction(async () => {
    expect(() => work.em).toThrow(/not while a transaction is open/);
  });
  expect(work.em).toBeDefined();
});
