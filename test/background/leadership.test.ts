import net from 'node:net';
import pino from 'pino';
import { AdvisoryLeadership, LEADERSHIP_APPLICATION_NAME, SoleLeadership } from '../../src/background/leadership.js';
import { LeaderWork } from '../../src/background/leader-work.js';
import { createTestDatabase, describeOnServer, type TestDatabase } from '../helpers/db.js';
import { poll } from '../helpers/expect.js';

const silent = pino({ level: 'silent' });

test('on the embedded database the one process leads from its start to its close, and its tasks run meanwhile', async () => {
  const leadership = new SoleLeadership(silent);
  const calls: string[] = [];
  const work = new LeaderWork(leadership, [{ name: 't', start: () => void calls.push('start'), stop: async () => void calls.push('stop') }], silent);
  expect(leadership.isLeader).toBe(false);
  await leadership.start();
  expect([leadership.isLeader, work.active, calls]).toEqual([true, true, ['start']]);
  await leadership.close();
  expect([leadership.isLeader, work.active, calls]).toEqual([false, false, ['start', 'stop']]);
});

describeOnServer('leadership through an advisory lock', 'several sessions bidding for one lock exist on a server only (the embedded database is one session)', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database.close();
  });

  const INTERVAL = 200;
  let key = 91_000;
  /** Instances bidding for a lock of their own test (each test its own key). */
  function instances(n: number, url = database.url!) {
    key++;
    return Array.from({ length: n }, () => {
      const changes: boolean[] = [];
      const l = new AdvisoryLeadership({ url, log: silent, intervalMs: INTERVAL, key });
      l.onChange((leader) => void changes.push(leader));
      return { l, changes };
    });
  }
  const leaders = (xs: Array<{ l: AdvisoryLeadership }>) => xs.filter((x) => x.l.isLeader).length;
  const until = (what: string, check: () => boolean) => poll(what, async () => check(), (ok) => ok, 15_000, 20);

  test('one of three is the leader; when it steps down another takes over at once; never two at a time', async () => {
    const xs = instances(3);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, leaders(xs))), 5);
    try {
      for (const x of xs) await x.l.start();
      expect(leaders(xs)).toBe(1);
      expect(xs[0]!.l.isLeader).toBe(true); // the first bid finds the lock free
      const handedAt = Date.now();
      await xs[0]!.l.close();
      await until('another instance leads', () => leaders(xs) === 1);
      // The resignation NOTIFY makes the others bid within 50 ms instead of at their next interval.
      expect(Date.now() - handedAt).toBeLessThan(INTERVAL * 10);
      expect(xs[0]!.changes).toEqual([true, false]);
      expect(most).toBe(1);
    } finally {
      clearInterval(watch);
      for (const x of xs) await x.l.close();
    }
  });

  test('a leader whose session the database ends stops leading at once; one instance leads again', async () => {
    const xs = instances(2);
    try {
      for (const x of xs) await x.l.start();
      const [first, second] = xs as [(typeof xs)[0], (typeof xs)[0]];
      expect(first.l.isLeader).toBe(true);
      // The leader's session (the one holding the lock) is terminated, as a restart or an operator would.
      const em = database.db.orm.em.fork();
      const ended = await em.execute<Array<{ pid: number }>>(
        `select pg_terminate_backend(l.pid), l.pid from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.objid = ? and l.granted and a.application_name = ?`,
        [key, LEADERSHIP_APPLICATION_NAME],
      );
      expect(ended).toHaveLength(1);
      await until('the first stopped leading', () => first.changes.length >= 2);
      expect(first.changes.slice(0, 2)).toEqual([true, false]);
      // Whichever bids first (the first, reconnecting, or the second at its interval) leads; one does.
      await until('one instance leads again', () => leaders(xs) === 1);
      expect(second.changes.length + first.changes.length).toBeLessThanOrEqual(3);
    } finally {
      for (const x of xs) await x.l.close();
    }
  });

  test('a leader whose connection stalls stops its work within an interval or two; its session ends and another instance takes over', async () => {
    // A proxy in front of the database that can stop forwarding: a network that drops everything, as the leader sees it.
    const target = new URL(database.url!);
    let stalled = false;
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => sockets.delete(s));
      }
      client.on('data', (d) => void (stalled || upstream.write(d)));
      upstream.on('data', (d) => void (stalled || client.write(d)));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
    const viaProxy = new URL(database.url!);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String((proxy.address() as net.AddressInfo).port);
    const [first] = instances(1, viaProxy.toString());
    const work: string[] = [];
    new LeaderWork(first!.l, [{ name: 'w', start: () => void work.push('start'), stop: async () => void work.push('stop') }], silent);
    const second = new AdvisoryLeadership({ url: database.url!, log: silent, intervalMs: INTERVAL, key });
    try {
      await first!.l.start();
      await second.start();
      expect([first!.l.isLeader, second.isLeader]).toEqual([true, false]);
      stalled = true;
      const from = Date.now();
      await until('the stalled leader stopped its work', () => work.includes('stop'));
      expect(Date.now() - from).toBeLessThan(INTERVAL * 10);
      // It gave up its socket: its session ends, the lock is free, the other instance bids and wins.
      await until('the other instance leads', () => second.isLeader);
      expect(first!.l.isLeader).toBe(false);
      expect(work).toEqual(['start', 'stop']);
    } finally {
      await first!.l.close();
      await second.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });
});
