// One Jest worker's embedded PostgreSQL, in a process of its own (started by
// test/helpers/global-setup.ts, one per worker slot; used through test/helpers/environment.js).
//
// Plain JavaScript, run by Node directly. Out of the Jest worker on purpose: PGlite's WebAssembly
// memory then is not in the worker's heap, a worker recycled by Jest (workerIdleMemoryLimit)
// finds its database still loaded, and PostgreSQL's work runs beside the worker's on the other core.
//
// PGlite is loaded from the migrated template (pg.tar) on the first `acquire` of an index (0: a
// file's database, here; 1: a second one it holds at the same time, in a process this one
// starts; ...). Every `acquire` stops that index's previous socket server (rolling back whatever
// a connection left open), puts the database back to the migrated state (session reset, every
// table emptied, sequences restarted; a fresh PGlite when a file changed the schema) and serves
// it on a new loopback port; `release` stops it.
//
// Served as the gateway serves its embedded database (src/db/pglite-session.ts: one connection
// holds the session from a statement's first message to its end, and for a whole transaction).
//
// Control: HTTP on 127.0.0.1, its port printed as the first line of stdout. The process exits
// when its stdin closes (the Jest process that started it is gone).
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { databaseControl, startDatabaseProcess } from './database-process.js';

// The gateway's own session server (TypeScript, loaded with Node's type stripping).
const { sessionServer } = await import('../../src/db/pglite-session.ts');

const template = process.argv[2];
if (!template) throw new Error('usage: node test/helpers/pglite-server.js <template directory>');

/** What must be the same as the template's after a reset: tables, columns, triggers, functions, sequences. */
const FINGERPRINT = `
  select md5(coalesce(string_agg(x, ',' order by x), '')) as f from (
    select c.relkind::text || ':' || c.relname || ':' || coalesce((select string_agg(a.attname || ' ' || a.atttypid::text, ';' order by a.attnum)
      from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), '') as x
      from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'public'
    union all select 't:' || tgrelid::regclass::text || ':' || tgname from pg_trigger where not tgisinternal
    union all select 'p:' || p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public'
  ) s`;

/** PGlite's own start parameters, with a smaller buffer pool (the tests' databases are small). */
const START_PARAMS = [...(PGlite.defaultStartParams ?? []), '-c', 'shared_buffers=16MB'];

/** This process's database: { pglite, tables, fingerprint, used, server } once loaded. */
let database;

/**
 * The processes serving the other indexes (1: a second database a file holds at the same time,
 * 2: a third), started on first use and kept for the run: one PGlite per process keeps each
 * process's memory well under a gigabyte.
 */
const others = new Map();

async function load() {
  const tar = new Blob([await readFile(path.join(template, 'pg.tar'))]);
  const pglite = await PGlite.create('memory://', { loadDataDir: tar, startParams: START_PARAMS });
  const { rows } = await pglite.query(
    `select quote_ident(tablename) as t from pg_tables where schemaname = 'public' and tablename <> 'mikro_orm_migrations' order by 1`,
  );
  const fingerprint = (await pglite.query(FINGERPRINT)).rows[0].f;
  return { pglite, tables: rows.map((r) => r.t), fingerprint, used: false, server: undefined };
}

/** Back to the migrated template: a clean session, empty tables, restarted sequences; a new PGlite if a file changed the schema. */
async function reset() {
  const { pglite, fingerprint, tables } = database;
  await pglite.exec('discard all');
  if ((await pglite.query(FINGERPRINT)).rows[0].f !== fingerprint) {
    await pglite.close();
    database = await load();
    return;
  }
  // Triggers off for the truncation only: the append-only audit log refuses TRUNCATE, rightly, to the gateway.
  if (tables.length > 0) {
    await pglite.exec(`set session_replication_role = replica; truncate ${tables.join(', ')} restart identity cascade; set session_replication_role = default`);
  }
}

async function stopServer() {
  const s = database?.server;
  if (database) database.server = undefined;
  await s?.stop();
}

/** The control port of the process serving `index` (> 0). */
async function other(index) {
  if (!others.has(index)) others.set(index, startDatabaseProcess(template));
  return (await others.get(index)).port;
}

const actions = {
  async acquire(params) {
    const index = Number(params.get('index') ?? 0);
    const maxConnections = Number(params.get('maxConnections') ?? 20);
    if (index > 0) return databaseControl(await other(index), 'acquire', { maxConnections });
    await stopServer();
    if (!database) database = await load();
    else if (database.used) await reset();
    database.used = true;
    database.server = sessionServer(database.pglite, { host: '127.0.0.1', port: 0, maxConnections });
    await database.server.start();
    return { url: `postgresql://postgres@${database.server.getServerConn()}/postgres` };
  },
  async release(params) {
    const index = Number(params.get('index') ?? 0);
    if (index > 0) return others.has(index) ? databaseControl(await other(index), 'release') : {};
    await stopServer();
    return {};
  },
};

// One request at a time: the actions change the one database.
let queue = Promise.resolve();
const control = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://control');
  const action = actions[url.pathname.slice(1)];
  queue = queue.then(async () => {
    try {
      if (!action) throw new Error(`unknown action ${url.pathname}`);
      const body = await action(url.searchParams);
      res.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body));
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain', connection: 'close' }).end(String(err?.stack ?? err));
    }
  });
});
control.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${control.address().port}\n`);
});

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
