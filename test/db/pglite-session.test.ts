import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { sessionServer } from '../../src/db/pglite-session.js';

// The embedded database's socket server (src/db/pglite-session.ts): several connections share
// PGlite's one session. pglite-socket's own queue let two connections' extended-protocol batches
// interleave and stopped for good after a failed message: four CLI runs beside a gateway hung
// (test/cli/cli.test.ts's "user:create" group on the embedded database).
let db: PGlite;
let server: ReturnType<typeof sessionServer>;
let url: string;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

beforeAll(async () => {
  db = await PGlite.create('memory://');
  server = sessionServer(db, { host: '127.0.0.1', port: 0, maxConnections: 16 });
  await server.start();
  url = `postgresql://postgres@${server.getServerConn()}/postgres`;
  await db.exec('create table t (id int primary key, who text not null)');
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await server.stop();
  await db.close();
});

test('connections running statements and failing transactions side by side each get their own answers', async () => {
  await db.exec("insert into t values (0, 'first')");
  const conns = await Promise.all([1, 2, 3, 4].map(() => connect()));
  const problems: string[] = [];
  await Promise.all(
    conns.map(async (c, n) => {
      for (let i = 0; i < 20; i++) {
        // A transaction whose insert fails in the middle of the others' statements.
        await c.query('begin');
        await c.query('insert into t values ($1, $2)', [0, `c${n}`]).then(
          () => problems.push(`c${n}: a duplicate key was inserted`),
          (err: Error) => {
            if (!/duplicate key/.test(err.message)) problems.push(`c${n}: ${err.message}`);
          },
        );
        await c.query('rollback');
        const want = n * 1000 + i;
        const r = await c.query('select $1::int as v, $2::text as who', [want, `c${n}`]);
        if (r.rows[0]?.v !== want || r.rows[0]?.who !== `c${n}`) problems.push(`c${n} asked ${want}, got ${JSON.stringify(r.rows)}`);
      }
    }),
  );
  expect(problems).toEqual([]);
  expect(await db.query('select id, who from t')).toMatchObject({ rows: [{ id: 0, who: 'first' }] });
}, 30_000);

test("a transaction keeps the session: another connection's statement runs after its commit and sees its row", async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  await a.query('begin');
  await a.query('insert into t values ($1, $2)', [1, 'a']);
  let bDone = false;
  const read = b.query('select who from t where id = $1', [1]).then((r) => {
    bDone = true;
    return r.rows;
  });
  // a's transaction goes on while b waits; b did not run inside it.
  await a.query('insert into t values ($1, $2)', [2, 'a']);
  expect(bDone).toBe(false);
  await a.query('commit');
  expect(await read).toEqual([{ who: 'a' }]);
});

test('a connection that goes away inside a transaction is rolled back and the others go on', async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  await a.query('begin');
  await a.query('insert into t values ($1, $2)', [3, 'gone']);
  const waiting = b.query('select count(*)::int as n from t where id = $1', [3]);
  a.end().catch(() => undefined);
  expect((await waiting).rows).toEqual([{ n: 0 }]);
  expect(db.isInTransaction()).toBe(false);
});
