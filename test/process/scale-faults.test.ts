import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, chownSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase, ON_SERVER, type TestDatabase } from '../helpers/db.js';
import { openDatabase, type Database } from '../../src/db/database.js';
import { poll, sleep } from '../helpers/expect.js';
import { kill, reachable, runFaultScenario, type FaultOutcome } from './fanout-faults.js';

// #32: the fan-out under faults, with real processes: NATS stopped and restarted under load, an
// instance killed, the leader killed, PostgreSQL restarted. Each scenario (test/process/
// fanout-faults.ts) ends with every event of the database delivered once to every subscriber of
// a surviving instance and to the webhook endpoint, in order per payment request. With NATS they
// run against the NATS server at TEST_NATS_URL (CI: the machine's, 127.0.0.1:4222), each on a
// stream of its own; NATS itself is stopped only as a private nats-server on a free port, and
// PostgreSQL only as a private server (initdb in a temporary directory), never the machine's.

const NATS = process.env.TEST_NATS_URL;
const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => existsSync(p));
const PG_BIN = (() => {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (existsSync(`/usr/lib/postgresql/${v}/bin/initdb`)) return `/usr/lib/postgresql/${v}/bin`;
  } catch {
    /* none */
  }
  return undefined;
})();

/** `describe` when the needs are met, else skipped with the reason in its title (listed at the end of the run). */
function describeIf(needs: Array<[boolean, string]>, title: string, fn: () => void): void {
  const missing = needs.filter(([ok]) => !ok).map(([, why]) => why);
  if (missing.length === 0) describe(title, fn);
  else describe.skip(`${title} [skipped: ${missing.join('; ')}]`, fn);
}
const SERVER: [boolean, string] = [ON_SERVER, 'needs TEST_DATABASE_URL, the gateways are separate processes on one database'];
const NATS_NEED: [boolean, string] = [Boolean(NATS), 'needs TEST_NATS_URL (a NATS server with JetStream, e.g. nats://127.0.0.1:4222)'];

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

let streams = 0;
const made: string[] = [];
const stream = () => {
  const name = `FAULTS_${process.pid}_${Date.now().toString(36)}_${streams++}`.toUpperCase();
  made.push(name);
  return name;
};

// The streams these tests made on the NATS server at TEST_NATS_URL (the machine's): gone afterwards.
afterAll(async () => {
  if (!NATS || made.length === 0) return;
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: NATS, timeout: 5000 }).catch(() => undefined);
  if (!nc) return;
  const jsm = await jetstreamManager(nc);
  for (const name of made) await jsm.streams.delete(name).catch(() => false);
  await nc.close();
});

function report(name: string, o: FaultOutcome): void {
  process.stderr.write(
    `[scale-faults] ${name}: ${o.events} events of ${o.requests} requests, ${o.deliveredToSubscribers} deliveries to subscribers, ${o.webhookRequests} webhook requests (${o.webhookRedeliveries} redelivered with the same webhook-id), ${o.failedCalls} calls failed during the fault\n`,
  );
}

/** A private nats-server with JetStream on a free port, its store in a temporary directory; stoppable and restartable. */
async function privateNats(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void>; close(): Promise<void> }> {
  const port = await freePort();
  const store = mkdtempSync(path.join(tmpdir(), 'nats-faults-'));
  let child: ChildProcess | undefined;
  const url = `nats://127.0.0.1:${port}`;
  const start = async () => {
    child = spawn(NATS_SERVER!, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: 'ignore' });
    await poll('the private NATS server up', () => reachable(url), Boolean, 15_000, 50);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };
  await start();
  return { url, start, stop, close: async () => (await stop(), rmSync(store, { recursive: true, force: true })) };
}

/**
 * A private PostgreSQL server (initdb into a temporary directory, the machine's binaries, a free
 * port, as the postgres user when run as root): restartable without touching the machine's.
 */
async function privatePostgres(): Promise<{ url: string; restart(): void; close(): Promise<void> }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'pg-faults-'));
  const data = path.join(dir, 'data');
  const port = await freePort();
  const asPostgres = process.getuid?.() === 0;
  if (asPostgres) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (cmd: string, args: string[]) =>
    asPostgres ? execFileSync('runuser', ['-u', 'postgres', '--', `${PG_BIN}/${cmd}`, ...args], { stdio: 'pipe' }) : execFileSync(`${PG_BIN}/${cmd}`, args, { stdio: 'pipe' });
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  run('pg_ctl', ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', 'start']);
  const base = `postgresql://postgres@127.0.0.1:${port}`;
  const { default: pg } = await import('pg');
  const admin = new pg.Client({ connectionString: `${base}/postgres` });
  await admin.connect();
  await admin.query('create database faults');
  await admin.end();
  return {
    url: `${base}/faults`,
    // A fast restart: every session ends, transactions in flight roll back, the server comes back on the same port.
    restart: () => run('pg_ctl', ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-m', 'fast', '-w', 'restart']),
    close: async () => {
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

describeIf([SERVER, NATS_NEED], 'the fan-out on NATS under faults', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  test('an instance killed under load: the others deliver everything; its webhook deliveries are taken over', async () => {
    const outcome = await runFaultScenario({
      db: database.db,
      dbUrl: database.url!,
      env: { NATS_URL: NATS!, NATS_STREAM: stream() },
      instances: 3,
      watched: [0, 1],
      loadMs: 8000,
      faultAtMs: 3000,
      fault: async ({ instances, leaderIndex }) => {
        // A follower (not the leader): the one at index 2 unless it leads, then index 1 (its subscribers are not checked then).
        const victim = leaderIndex() === 2 ? 1 : 2;
        await kill(instances[victim]!);
      },
    });
    report('instance killed (NATS)', outcome);
  }, 240_000);

  test('the leader killed under load: another instance takes the relay and the background work over', async () => {
    let victim = -1;
    const outcome = await runFaultScenario({
      db: database.db,
      dbUrl: database.url!,
      env: { NATS_URL: NATS!, NATS_STREAM: stream() },
      instances: 3,
      // The first instance starts first and leads; the others are watched.
      watched: [1, 2],
      loadMs: 9000,
      faultAtMs: 3000,
      fault: async ({ instances, leaderIndex }) => {
        victim = leaderIndex()!;
        expect(victim).toBe(0);
        await kill(instances[victim]!);
        await poll('a new leader', async () => leaderIndex(), (i) => i !== undefined && i !== victim, 20_000, 50);
      },
    });
    report('leader killed (NATS)', outcome);
    expect(outcome.instances.filter((g, i) => i !== victim && g.lines.some((l) => l.includes('outbox relay to NATS started'))).length).toBe(1);
  }, 240_000);
});

describeIf([SERVER, NATS_NEED, [Boolean(NATS_SERVER), 'needs a nats-server binary to run a private NATS server it can stop']], 'NATS stopped and restarted under load', () => {
  let database: TestDatabase;
  let nats: Awaited<ReturnType<typeof privateNats>>;
  beforeAll(async () => {
    database = await createTestDatabase();
    nats = await privateNats();
  });
  afterAll(async () => {
    await nats.close();
    await database.close();
  });

  test('while NATS is away the instances read PostgreSQL; when it is back they take NATS again; nothing lost, doubled or reordered', async () => {
    const outcome = await runFaultScenario({
      db: database.db,
      dbUrl: database.url!,
      env: { NATS_URL: nats.url, NATS_STREAM: stream() },
      instances: 2,
      loadMs: 12_000,
      faultAtMs: 3000,
      fault: async ({ instances }) => {
        await nats.stop();
        await poll('the instances noticed', async () => instances.every((g) => g.lines.some((l) => l.includes('reading PostgreSQL until NATS carries them again'))), Boolean, 20_000, 50);
        await sleep(3000);
        await nats.start();
        await poll('NATS carries the events again', async () => instances.every((g) => g.lines.some((l) => l.includes('NATS carries them again'))), Boolean, 30_000, 50);
      },
    });
    report('NATS stopped and restarted', outcome);
  }, 240_000);
});

for (const withNats of [true, false]) {
  describeIf(
    [SERVER, ...(withNats ? [NATS_NEED] : []), [Boolean(PG_BIN), 'needs the machine PostgreSQL binaries (initdb, pg_ctl) for a private server it can restart']],
    `PostgreSQL restarted under load (${withNats ? 'NATS' : 'no NATS'})`,
    () => {
      let server: Awaited<ReturnType<typeof privatePostgres>>;
      let db: Database;
      beforeAll(async () => {
        server = await privatePostgres();
        db = await openDatabase({ url: server.url, poolMax: 3 });
      });
      afterAll(async () => {
        await db?.close();
        await server?.close();
      });

      test('sessions end, the instances reconnect, elect a leader again and deliver everything', async () => {
        const outcome = await runFaultScenario({
          db,
          dbUrl: server.url,
          env: withNats ? { NATS_URL: NATS!, NATS_STREAM: stream() } : {},
          instances: 2,
          loadMs: 12_000,
          faultAtMs: 3000,
          settleMs: 90_000,
          fault: async ({ instances }) => {
            server.restart();
            await poll(
              'a leader again',
              async () => instances.flatMap((g) => g.lines.filter((l) => l.includes('"elected leader'))).length,
              (n) => n >= 2,
              30_000,
              100,
            );
          },
        });
        report(`PostgreSQL restarted (${withNats ? 'NATS' : 'no NATS'})`, outcome);
      }, 300_000);
    },
  );
}

describeIf([SERVER], 'the leader killed under load (no NATS)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  test('each instance goes on reading the outbox for its subscribers; another takes the background work over', async () => {
    const outcome = await runFaultScenario({
      db: database.db,
      dbUrl: database.url!,
      env: {},
      instances: 3,
      watched: [1, 2],
      loadMs: 8000,
      faultAtMs: 3000,
      fault: async ({ instances, leaderIndex }) => {
        const victim = leaderIndex()!;
        expect(victim).toBe(0);
        await kill(instances[victim]!);
        await poll('a new leader', async () => leaderIndex(), (i) => i !== undefined && i !== victim, 20_000, 50);
      },
    });
    report('leader killed (no NATS)', outcome);
  }, 240_000);
});
