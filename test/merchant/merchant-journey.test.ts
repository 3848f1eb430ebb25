/**
 * Issue 20's "Done when": a merchant's developer integrates from zero with nothing but the typed
 * client (`@wallet-gateway/client`, imported by its package name) and the CLI (the real
 * executable, `node bin/wallet-gateway.js`, as `npx wallet-gateway` runs it), against a running
 * development gateway. The operator's part (a developer and its key) is the admin CLI too.
 *
 * The journey: get a key; start a receiver that keeps the raw body and verifies with
 * `webhooks.verify`; register an endpoint; run `listen` to the same receiver; pay a test wallet
 * with the client and get the outcome from `waitForOutcome`, with the signed webhook and the
 * forwarded copy both verified; the receiver breaks and the endpoint is disabled; it is fixed,
 * tested and enabled again, and what waited arrives; `listen` resumes after a restart; the
 * payment is found by reference and by date.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import http from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { WalletGateway, webhooks, type WebhookEvent } from '@wallet-gateway/client';
import { useTestApp, type TestApp } from '../helpers/app.js';
import { buildDist } from '../helpers/build.js';
import { ROOT, cliDatabaseEnv, spawnCli } from '../helpers/cli.js';
import { until } from '../helpers/expect.js';

const GATEWAY_ENV = {
  SANDBOX_TEST_WALLETS: 'true',
  SANDBOX_DELAY_MS: '200',
  SANDBOX_SHORT_TTL_SECONDS: '1',
  EXPIRY_SWEEP_INTERVAL_MS: '200',
  WEBHOOK_POLL_INTERVAL_MS: '100',
  // A failing endpoint is retried after ~2 s, then in an hour; failing for over 1 s disables it.
  WEBHOOK_RETRY_SCHEDULE: '2,3600',
  WEBHOOK_DISABLE_AFTER_SECONDS: '1',
};

let app: TestApp;
useTestApp({ env: GATEWAY_ENV }, (x) => ({ app } = x));

/** What the merchant's receiver accepted (verified) on each of its paths. */
interface Inbox {
  url: string;
  /** Verified events by path: /webhooks (the registered endpoint), /listen (forwarded by `listen`). */
  got: Record<string, WebhookEvent[]>;
  /** Answer 503 instead of verifying (the merchant's server is broken). */
  broken: boolean;
  secrets: Record<string, string>;
  close(): Promise<void>;
}

/** The merchant's receiver, written as examples/webhook-receiver.ts does: node:http, the raw body kept, `webhooks.verify`. */
async function merchantReceiver(): Promise<Inbox> {
  const inbox = { got: { '/webhooks': [], '/listen': [] }, broken: false, secrets: {} } as unknown as Inbox;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (inbox.broken) return void res.writeHead(503).end();
      const secret = inbox.secrets[req.url ?? ''];
      try {
        const event = webhooks.verify(Buffer.concat(chunks), req.headers, secret ?? 'whsec_AAAA');
        inbox.got[req.url!]!.push(event);
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  inbox.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  inbox.close = () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())));
  return inbox;
}

// `listen` runs from dist/ too (spawnCli builds it before its first call; the listener may start first).
beforeAll(buildDist);

/** `npx wallet-gateway listen ...` as a child process, its stdout as JSON lines. */
function startListen(args: string[], env: NodeJS.ProcessEnv) {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(process.execPath, ['bin/wallet-gateway.js', 'listen', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: any[] = [];
  let stderr = '';
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
      lines.push(JSON.parse(pending.slice(0, i)));
      pending = pending.slice(i + 1);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    lines,
    get stderr() {
      return stderr;
    },
    until: (predicate: (l: any[]) => boolean, what: string) => eventually(() => predicate(lines), `listen: ${what}; lines ${JSON.stringify(lines)}; stderr ${stderr}`),
    /** SIGTERM, as Ctrl-C would; resolves with the exit code. */
    async stop(): Promise<number | null> {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Waits for a condition, with a deadline (never an assertion about time). */
const eventually = (check: () => boolean | Promise<boolean>, what: string): Promise<void> => until(check, 30_000, what, 50);

test('a merchant integrates from zero with the client and the CLI', async () => {
  const startedAt = new Date();
  // The operator gives the merchant an account and a key (admin CLI, the gateway's database).
  const admin = cliDatabaseEnv(app.database);
  const created = await spawnCli(['developer:create', '--name', 'Corner Café'], admin);
  expect(created.code).toBe(0);
  const issued = await spawnCli(['key:issue', '--developer', JSON.parse(created.stdout).developerId], admin);
  const secretKey = JSON.parse(issued.stdout).secretKey as string;
  expect(secretKey).toMatch(/^sk_test_/);

  // From here on: only the client and the CLI, with the merchant's key.
  const gateway = new WalletGateway({ secretKey, baseUrl: app.baseUrl });
  const inbox = await merchantReceiver();
  const cliEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    XDG_STATE_HOME: await mkdtemp(path.join(tmpdir(), 'merchant-journey-')),
    WALLET_GATEWAY_KEY: secretKey,
    WALLET_GATEWAY_URL: app.baseUrl,
  };
  let listen = startListen(['--forward-to', `${inbox.url}/listen`], cliEnv);
  try {
    // 1. Register an endpoint; keep its secret for the receiver.
    const endpoint = await gateway.webhookEndpoints.create({ url: `${inbox.url}/webhooks` });
    inbox.secrets['/webhooks'] = endpoint.secret;
    // 2. `listen` prints its own secret first.
    await listen.until((l) => l.length >= 1, 'its first line');
    expect(listen.lines[0]).toEqual({ secret: expect.stringMatching(/^whsec_/), forwardTo: `${inbox.url}/listen` });
    inbox.secrets['/listen'] = listen.lines[0].secret;

    // 3. A payment to a test wallet, its outcome from waitForOutcome.
    const walletId = await gateway.accounts.walletId('test_approve');
    const { paymentRequestId } = await gateway.paymentRequests.create({
      walletId,
      amount: 12.5,
      description: 'Two flat whites',
      merchantName: 'Corner Café',
      reference: 'order-1001',
    });
    const outcome = await gateway.waitForOutcome(paymentRequestId!, { pollIntervalMs: 200 });
    expect(outcome).toMatchObject({ status: 'APPROVED', paymentRequest: { id: paymentRequestId, reference: 'order-1001' } });
    expect(outcome.transaction).toMatchObject({ status: 'COMPLETED', amount: 12.5, paymentReference: expect.stringMatching(/^WPAY/) });

    // 4. The signed webhook, verified by webhooks.verify, and the copy `listen` forwarded.
    for (const route of ['/webhooks', '/listen']) {
      await eventually(() => inbox.got[route]!.some((e) => e.id === outcome.event!.id), `${route} gets the approval`);
      const approved = inbox.got[route]!.find((e) => e.id === outcome.event!.id)!;
      expect(approved).toMatchObject({ type: 'payment_request.approved', data: { paymentRequest: { id: paymentRequestId, status: 'APPROVED' } } });
      expect(inbox.got[route]!.map((e) => e.type)).toEqual(['payment_request.created', 'payment_request.approved']);
    }
    await listen.until((l) => l.some((x) => x.eventId === outcome.event!.id), 'the approval line');
    expect(listen.lines.find((x) => x.eventId === outcome.event!.id)).toEqual({
      eventId: outcome.event!.id,
      type: 'payment_request.approved',
      status: 204,
      durationMs: expect.any(Number),
    });

    // 5. `listen` is stopped (Ctrl-C); meanwhile the merchant's server breaks and the endpoint is disabled.
    expect(await listen.stop()).toBe(0);
    inbox.broken = true;
    const rejected = await gateway.paymentRequests.create({
      walletId: await gateway.accounts.walletId('test_reject'),
      amount: 3,
      description: 'A muffin',
      merchantName: 'Corner Café',
      reference: 'order-1002',
    });
    expect((await gateway.waitForOutcome(rejected.paymentRequestId!, { pollIntervalMs: 200 })).status).toBe('REJECTED');
    let disabled: Awaited<ReturnType<typeof gateway.webhookEndpoints.list>>[number] | undefined;
    await eventually(async () => {
      disabled = (await gateway.webhookEndpoints.list()).find((e) => e.id === endpoint.id);
      return disabled?.status === 'DISABLED';
    }, 'the endpoint is disabled');
    expect(disabled).toMatchObject({ lastDeliveryStatus: 503, lastDeliveryAt: expect.any(String), disabledReason: expect.stringMatching(/^No successful delivery/) });
    expect(disabled!.pendingDeliveries).toBeGreaterThanOrEqual(1);

    // 6. Fixed: a test event first, then enabled again; what waited arrives, verified.
    inbox.broken = false;
    const test = await gateway.webhookEndpoints.test(endpoint.id);
    expect(test).toMatchObject({ delivered: true, status: 204 });
    expect(inbox.got['/webhooks']!.at(-1)).toMatchObject({ type: 'webhook.test', data: { endpointId: endpoint.id } });
    expect(await gateway.webhookEndpoints.enable(endpoint.id)).toMatchObject({ status: 'ENABLED', disabledReason: null });
    await eventually(
      () => inbox.got['/webhooks']!.some((e) => e.type === 'payment_request.rejected' && e.data.paymentRequest.id === rejected.paymentRequestId),
      'the rejection, delivered after enabling',
    );
    await eventually(async () => (await gateway.webhookEndpoints.list())[0]!.pendingDeliveries === 0, 'nothing pending');

    // 7. `listen` again: it resumes after the last event it read, with the same secret.
    listen = startListen(['--forward-to', `${inbox.url}/listen`], cliEnv);
    await listen.until((l) => l.some((x) => x.type === 'payment_request.rejected'), 'the missed rejection');
    expect(listen.lines[0].secret).toBe(inbox.secrets['/listen']);
    expect(listen.lines.slice(1).map((x) => [x.type, x.status])).toEqual([
      ['payment_request.created', 204],
      ['payment_request.rejected', 204],
    ]);
    // ...and `trigger` makes an expiry happen, which reaches both.
    const triggered = await spawnCli(['trigger', 'payment_request.expired'], cliEnv);
    expect(triggered.code).toBe(0);
    const expired = JSON.parse(triggered.stdout);
    for (const route of ['/webhooks', '/listen']) {
      await eventually(() => inbox.got[route]!.some((e) => e.id === expired.eventId), `${route} gets the triggered expiry`);
    }

    // 8. Reconciliation: the payment by reference, and by date.
    const byReference = await gateway.paymentRequests.list({ reference: 'order-1001' });
    expect(byReference.data).toEqual([outcome.paymentRequest]);
    const today = await gateway.paymentRequests.list({ createdFrom: startedAt, createdTo: new Date(Date.now() + 60_000) });
    expect(today.data.map((p) => p.reference)).toEqual(['trigger:payment_request.expired', 'order-1002', 'order-1001']);
    expect((await gateway.paymentRequests.list({ createdFrom: startedAt, status: 'APPROVED' })).data.map((p) => p.id)).toEqual([paymentRequestId]);
    expect((await gateway.paymentRequests.list({ createdTo: startedAt })).data).toEqual([]);
  } finally {
    expect(await listen.stop()).toBe(0);
    await inbox.close();
  }
});
