// The fault scenarios of the fan-out (#32), shared by test/process/scale-faults.test.ts: several
// real gateway processes (`node dist/src/main.js`, one instance each) on one database, wallet
// users subscribed on every instance over graphql-ws, a developer with a webhook endpoint, a load
// of creates and cancels spread over the instances, and a fault in the middle. Afterwards every
// event the database holds for those users must have reached every subscriber of a surviving
// instance once, and the webhook endpoint once (per webhook-id), in order per payment request.
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import pg from 'pg';
import { spawnGatewayOn, seed, type GatewayProcess } from './gateway-process.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';
import type { Database } from '../../src/db/database.js';
import { poll, sleep } from '../helpers/expect.js';

export const FAULT_ENV = {
  LEADER_ELECT_INTERVAL_MS: '500',
  OUTBOX_POLL_INTERVAL_MS: '300',
  WEBHOOK_POLL_INTERVAL_MS: '200',
  WEBHOOK_TIMEOUT_MS: '2000',
  WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1',
  SANDBOX_TEST_WALLETS: 'false',
  LOG_LEVEL: 'info',
  DB_POOL_MAX: '5',
};

/** Which status each event type gives a payment request (what a subscriber sees). */
const STATUS_OF: Record<string, string> = {
  'payment_request.created': 'PENDING',
  'payment_request.approved': 'APPROVED',
  'payment_request.rejected': 'REJECTED',
  'payment_request.cancelled': 'CANCELLED',
  'payment_request.expired': 'EXPIRED',
};

/**
 * One wallet user's two subscriptions on one instance, recording `requestId:status` in arrival
 * order: all of them (`seen`), and per subscription (`bySubscription`: order is kept within one
 * subscription; two operations on one socket are two streams, and graphql-ws sends each as its
 * own resolver finishes).
 */
interface Watcher {
  instance: number;
  userId: string;
  seen: string[];
  bySubscription: string[][];
  client: Client;
  errors: unknown[];
}

export interface FaultContext {
  instances: GatewayProcess[];
  /** Starts one more instance (a replacement) with the scenario's environment. */
  startInstance(): Promise<GatewayProcess>;
  /** Which instance leads now (its index), from the logs. */
  leaderIndex(): number | undefined;
}

export interface FaultScenario {
  /** The database the gateways use (a URL for them) and an ORM on it for the checks. */
  db: Database;
  dbUrl: string;
  env: Record<string, string>;
  instances: number;
  /** Instances whose subscribers are checked (the others may be killed). Default: all. */
  watched?: number[];
  /** How long the load runs, and when the fault comes. */
  loadMs: number;
  faultAtMs: number;
  fault(ctx: FaultContext): Promise<void>;
  /** How long everything may take to arrive after the load (an outage's retries). */
  settleMs?: number;
}

export interface FaultOutcome {
  events: number;
  requests: number;
  deliveredToSubscribers: number;
  webhookRequests: number;
  webhookRedeliveries: number;
  failedCalls: number;
  instances: GatewayProcess[];
}

async function call(baseUrl: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: any } | undefined> {
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, json: await res.json().catch(() => undefined) };
  } catch {
    return undefined; // the instance died, or the database was away: the database says what happened
  }
}

async function openSubscriptions(baseUrl: string): Promise<number> {
  try {
    const text = await (await fetch(`${baseUrl}/metrics`)).text();
    return Number(/^graphql_open_subscriptions (\d+)$/m.exec(text)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

function watch(baseUrl: string, instance: number, userId: string, token: string): Watcher {
  const w: Watcher = { instance, userId, seen: [], bySubscription: [[], []], errors: [], client: undefined as unknown as Client };
  w.client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    retryAttempts: 0,
    lazy: false,
    onNonLazyError: () => undefined,
  });
  for (const [i, query] of ['subscription { paymentRequested { id status } }', 'subscription { paymentRequestUpdated { id status } }'].entries()) {
    w.client.subscribe<Record<string, { id: string; status: string }>>(
      { query },
      {
        next: (r) => {
          const e = r.data && Object.values(r.data)[0];
          if (e) {
            w.seen.push(`${e.id}:${e.status}`);
            w.bySubscription[i]!.push(`${e.id}:${e.status}`);
          }
        },
        error: (e) => w.errors.push(e),
        complete: () => undefined,
      },
    );
  }
  return w;
}

/** Runs a scenario and checks its deliveries; throws (with what went wrong) when one is missing, doubled or out of order. */
export async function runFaultScenario(s: FaultScenario): Promise<FaultOutcome> {
  const { developers, users } = await seed(s.db, { developers: 1, users: 4, balance: 1000 });
  const dev = developers[0]!;
  const instances: GatewayProcess[] = [];
  const receiver: Receiver = await startReceiver();
  const watchers: Watcher[] = [];
  let stop = false;
  let failedCalls = 0;
  const spawn = async () => {
    const g = await spawnGatewayOn({ DATABASE_URL: s.dbUrl }, { ...FAULT_ENV, ...s.env });
    instances.push(g);
    return g;
  };
  try {
    for (let i = 0; i < s.instances; i++) await spawn();
    await poll('a leader', async () => instances.some((g) => g.lines.some((l) => l.includes('"elected leader'))), Boolean, 30_000, 50);
    const endpoint = await call(instances[0]!.baseUrl, '/api/v1/webhook-endpoints', dev.secretKey, { url: receiver.url });
    if (endpoint?.status !== 200) throw new Error(`webhook endpoint not created: ${JSON.stringify(endpoint)}`);
    const watched = s.watched ?? instances.map((_, i) => i);
    for (const i of watched) {
      const before = await openSubscriptions(instances[i]!.baseUrl);
      for (const u of users) watchers.push(watch(instances[i]!.baseUrl, i, u.userId, u.token));
      await poll(`instance ${i} registered its subscribers`, () => openSubscriptions(instances[i]!.baseUrl), (n) => n === before + users.length * 2, 20_000, 50);
    }
    const startedAt = Date.now();
    // The load: four loops, each creating a request for a user through one instance and cancelling
    // it through the next (two events per request, committed on two instances).
    const loops = [0, 1, 2, 3].map(async (k) => {
      for (let n = 0; !stop; n++) {
        const alive = instances.filter((g) => g.child.exitCode === null && g.child.signalCode === null);
        if (alive.length === 0) return;
        const a = alive[(k + n) % alive.length]!;
        const b = alive[(k + n + 1) % alive.length]!;
        const user = users[(k + n) % users.length]!;
        const created = await call(a.baseUrl, '/api/v1/wallet/request-payment', dev.secretKey, { walletId: user.walletId, amount: 1, description: `fault ${k}-${n}`, merchantName: 'Faults' });
        if (created?.status !== 200) {
          failedCalls++;
          await sleep(50);
          continue;
        }
        const cancelled = await call(b.baseUrl, `/api/v1/wallet/payment-request/${created.json.paymentRequestId}/cancel`, dev.secretKey);
        if (cancelled?.status !== 200) failedCalls++;
        await sleep(20);
      }
    });
    const fault = (async () => {
      await sleep(s.faultAtMs);
      await s.fault({
        instances,
        startInstance: spawn,
        leaderIndex: () => {
          let last: number | undefined;
          let at = -1;
          instances.forEach((g, i) => {
            g.lines.forEach((l, j) => {
              if (l.includes('"elected leader') && j >= 0) {
                const t = Date.parse(String(JSON.parse(l).time));
                if (t > at) [at, last] = [t, i];
              }
            });
          });
          return last;
        },
      });
    })();
    await sleep(Math.max(0, s.loadMs - (Date.now() - startedAt)));
    await fault;
    stop = true;
    await Promise.all(loops);

    // The truth: the database's events for these users.
    type Row = { id: string; type: string; pr: string; sequence: number; userId: string };
    // (After a database restart the test's own pool may hand out a connection that died with it once.)
    const truth = await poll(
      'the events in the database',
      async () =>
        s.db.orm.em
          .fork()
          .execute<Row[]>(
            `select e.id, e.type, e.payment_request_id as pr, e.sequence, w.user_id as "userId"
               from events e join payment_requests p on p.id = e.payment_request_id join wallets w on w.id = p.wallet_id
              where w.user_id = any(array[?]::uuid[]) order by e.payment_request_id, e.sequence`,
            [users.map((u) => u.userId)],
          )
          .catch(() => undefined),
      (rows): rows is Row[] => rows !== undefined,
      30_000,
      200,
    ) as Row[];
    const expected = new Map<string, string[]>();
    for (const e of truth) {
      const list = expected.get(e.userId) ?? [];
      list.push(`${e.pr}:${STATUS_OF[e.type]}`);
      expected.set(e.userId, list);
    }
    const settle = s.settleMs ?? 60_000;
    // Every watcher of a live instance gets every event of its user.
    const live = watchers.filter((w) => {
      const g = instances[w.instance]!;
      return g.child.exitCode === null && g.child.signalCode === null;
    });
    const missingOf = (w: Watcher) => (expected.get(w.userId) ?? []).filter((x) => !w.seen.includes(x));
    await poll('every event at every subscriber', async () => live.reduce((n, w) => n + missingOf(w).length, 0), (n) => n === 0, settle, 100).catch((err: Error) => {
      const detail = live.filter((w) => missingOf(w).length > 0).map((w) => `instance ${w.instance} user ${w.userId.slice(0, 8)}: ${missingOf(w).length} missing of ${(expected.get(w.userId) ?? []).length}`);
      throw new Error(`${err.message}\n${detail.join('\n')}`);
    });
    const problems: string[] = [];
    for (const w of live) {
      if (w.errors.length > 0) problems.push(`instance ${w.instance}: subscription errors ${JSON.stringify(w.errors).slice(0, 200)}`);
      if (new Set(w.seen).size !== w.seen.length) problems.push(`instance ${w.instance} user ${w.userId.slice(0, 8)}: an event delivered twice`);
      // In order per request within each subscription: a request's statuses arrive in the order of its events.
      const mine = expected.get(w.userId) ?? [];
      const position = new Map(mine.map((x, i) => [x, i]));
      for (const stream of w.bySubscription) {
        const lastOf = new Map<string, number>();
        for (const x of stream) {
          const [pr] = x.split(':');
          const p = position.get(x);
          if (p === undefined) problems.push(`instance ${w.instance}: an event the database does not hold: ${x}`);
          else if ((lastOf.get(pr!) ?? -1) > p) problems.push(`instance ${w.instance}: ${x} out of order`);
          else lastOf.set(pr!, p);
        }
      }
    }
    // The webhook endpoint gets every event once per webhook-id, in order per request.
    await poll('every event at the webhook endpoint', async () => new Set(receiver.received.map((r) => r.id)).size, (n) => n >= truth.length, settle, 100).catch((err: Error) => {
      throw new Error(`${err.message}: ${new Set(receiver.received.map((r) => r.id)).size} of ${truth.length}`);
    });
    const firstArrival = new Map<string, Received0>();
    for (const r of receiver.received) if (!firstArrival.has(r.id)) firstArrival.set(r.id, { id: r.id, pr: String(r.json.data.paymentRequest.id), type: r.json.type });
    const truthIds = new Set(truth.map((e) => e.id));
    for (const id of firstArrival.keys()) if (!truthIds.has(id)) problems.push(`webhook for an event the database does not hold: ${id}`);
    const sequenceOf = new Map(truth.map((e) => [e.id, e.sequence]));
    const lastSeq = new Map<string, number>();
    for (const r of firstArrival.values()) {
      const seq = sequenceOf.get(r.id) ?? 0;
      if ((lastSeq.get(r.pr) ?? 0) > seq) problems.push(`webhook ${r.type} of ${r.pr} out of order`);
      lastSeq.set(r.pr, Math.max(seq, lastSeq.get(r.pr) ?? 0));
    }
    if (problems.length > 0) throw new Error(problems.slice(0, 20).join('\n'));
    return {
      events: truth.length,
      requests: new Set(truth.map((e) => e.pr)).size,
      deliveredToSubscribers: live.reduce((n, w) => n + w.seen.length, 0),
      webhookRequests: receiver.received.length,
      webhookRedeliveries: receiver.received.length - firstArrival.size,
      failedCalls,
      instances,
    };
  } finally {
    stop = true;
    await Promise.all(watchers.map((w) => w.client.dispose()));
    for (const g of instances) if (g.child.exitCode === null && g.child.signalCode === null) g.child.kill('SIGKILL');
    await Promise.all(instances.map((g) => g.exited));
    await receiver.close();
  }
}

interface Received0 {
  id: string;
  pr: string;
  type: string;
}

/** Kills an instance with SIGKILL and waits for it to be gone. */
export async function kill(g: GatewayProcess): Promise<void> {
  g.child.kill('SIGKILL');
  await g.exited;
}

/** Whether a TCP port answers (a NATS server, a PostgreSQL server). */
export async function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  const net = await import('node:net');
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A PostgreSQL client on `url` (for a database the test made itself). */
export async function pgClient(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}
