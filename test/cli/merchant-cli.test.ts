// `npx wallet-gateway listen` and `trigger` (issue 20, SPEC §14): the developer's CLI commands,
// over HTTP to a running development gateway with the developer's own key. Run in this process
// through `runCli` (what bin/wallet-gateway.js runs); the merchant journey test
// (test/merchant) runs the real executable, restarts included.
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import { runCli } from '../../src/cli/cli.js';
import { spawnCli } from '../helpers/cli.js';
import { useTestApp, factories, http, startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, verify } from '../webhooks/receiver.js';

const SANDBOX = {
  SANDBOX_TEST_WALLETS: 'true',
  SANDBOX_DELAY_MS: '50',
  SANDBOX_SHORT_TTL_SECONDS: '1',
  EXPIRY_SWEEP_INTERVAL_MS: '200',
  RATE_LIMIT_PER_SECOND: '100000',
  LOOKUP_LIMIT_PER_MINUTE: '100000',
};

let app: TestApp;
useTestApp({ env: SANDBOX }, (x) => ({ app } = x));

/** An environment with nothing of the test runner's; the key and URL come as flags unless a test puts them here. */
const bareEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...extra });

async function cli(args: string[], env: NodeJS.ProcessEnv = bareEnv()) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, { env, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr, lines: stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

/** A running `listen`, its stdout as JSON lines. */
function listen(args: string[], env: NodeJS.ProcessEnv = bareEnv()) {
  const stop = new AbortController();
  const lines: any[] = [];
  let stderr = '';
  let pending = '';
  const waiters = new Set<() => void>();
  const done = runCli(['listen', ...args], {
    env,
    signal: stop.signal,
    stdout: (t) => {
      pending += t;
      for (let i = pending.indexOf('\n'); i >= 0; i = pending.indexOf('\n')) {
        lines.push(JSON.parse(pending.slice(0, i)));
        pending = pending.slice(i + 1);
      }
      for (const w of waiters) w();
    },
    stderr: (t) => void (stderr += t),
  });
  return {
    lines,
    done,
    get stderr() {
      return stderr;
    },
    until(predicate: (lines: any[]) => boolean, timeoutMs = 20_000): Promise<any[]> {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!predicate(lines)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(lines);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`listen: not seen within ${timeoutMs} ms; lines ${JSON.stringify(lines)}; stderr ${stderr}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async stop(): Promise<number> {
      stop.abort();
      return done;
    },
  };
}

const stateFile = async () => path.join(await mkdtemp(path.join(tmpdir(), 'merchant-listen-')), 'state.json');

describe('trigger', () => {
  test.each([
    ['payment_request.created', 'PENDING'],
    ['payment_request.approved', 'APPROVED'],
    ['payment_request.rejected', 'REJECTED'],
    ['payment_request.cancelled', 'CANCELLED'],
    ['payment_request.expired', 'EXPIRED'],
    // A MANUAL request the test wallet approves (held), then captured or voided.
    ['transaction.captured', 'APPROVED'],
    ['transaction.voided', 'APPROVED'],
  ])('%s: makes it happen and prints {type, paymentRequestId, eventId} once the events API has it', async (type, status) => {
    const dev = await factories(app).developer();
    const r = await cli(['trigger', type, '--key', dev.secretKey, '--url', app.baseUrl]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.lines).toEqual([{ type, paymentRequestId: expect.any(String), eventId: expect.stringMatching(/^evt_/) }]);
    const event = await http(app.baseUrl, `/api/v1/events/${r.lines[0].eventId}`, { token: dev.secretKey });
    expect(event.body).toMatchObject({ type, data: { paymentRequest: { id: r.lines[0].paymentRequestId, reference: `trigger:${type}` } } });
    const pr = (await http(app.baseUrl, `/api/v1/wallet/payment-request/${r.lines[0].paymentRequestId}`, { token: dev.secretKey })).body;
    expect(pr.status).toBe(status);
  });

  test('the short lifetime is the test_expire_soon wallet\'s only: every other request keeps its 5 minutes', async () => {
    const dev = await factories(app).developer();
    const lifetime = async (type: string) => {
      const r = await cli(['trigger', type], bareEnv({ WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl }));
      expect(r.code).toBe(0);
      const pr = (await http(app.baseUrl, `/api/v1/wallet/payment-request/${r.lines[0].paymentRequestId}`, { token: dev.secretKey })).body;
      return (Date.parse(pr.expiresAt) - Date.parse(pr.createdAt)) / 1000;
    };
    expect(await lifetime('payment_request.expired')).toBe(1);
    expect(await lifetime('payment_request.created')).toBe(300);
  });

  test('what it cannot do is said on stderr with exit 2', async () => {
    const dev = await factories(app).developer();
    const key = ['--key', dev.secretKey, '--url', app.baseUrl];
    const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
      [['trigger', 'transaction.refunded', ...key], bareEnv(), /transaction\.refunded follows an operator's refund/],
      [['trigger', 'webhook.test', ...key], bareEnv(), /cannot trigger "webhook\.test"; it can trigger: payment_request\.created, /],
      [['trigger', ...key], bareEnv(), /an event type is required/],
      [['trigger', 'payment_request.approved', 'extra', ...key], bareEnv(), /unexpected argument "extra"/],
      [['trigger', 'payment_request.approved'], bareEnv(), /a secret key is required: --key sk_test_\.\.\. or WALLET_GATEWAY_KEY/],
      [['trigger', 'payment_request.approved', '--key', dev.secretKey.replace('sk_test_', 'sk_live_'), '--url', app.baseUrl], bareEnv(), /development gateways only/],
      [['trigger', 'payment_request.approved', '--key', 'nonsense'], bareEnv(), /--key must be a secret key/],
      [['trigger', 'payment_request.approved', '--key', `${dev.secretKey.slice(0, -3)}abc`, '--url', app.baseUrl], bareEnv(), /Invalid secret key/],
    ];
    for (const [args, env, message] of cases) {
      const r = await cli(args, env);
      expect([args.slice(0, 2), r.code, r.stdout]).toEqual([args.slice(0, 2), 2, '']);
      expect(r.stderr).toMatch(message);
    }
  });

  test('a gateway that cannot be reached: the real executable says where it looked and which flag or variable to set', async () => {
    const dev = await factories(app).developer();
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const r = await spawnCli(['trigger', 'payment_request.created', '--key', dev.secretKey], bareEnv({ WALLET_GATEWAY_URL: `http://127.0.0.1:${closed}` }));
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
    expect(r.stderr).toBe(`wallet-gateway: Could not reach the wallet gateway at http://127.0.0.1:${closed}: ECONNREFUSED (is it running? set --url or WALLET_GATEWAY_URL)\n`);
  });

  test('a gateway without test wallets (production, or turned off) is refused', async () => {
    const plain = await startTestApp({ env: { SANDBOX_TEST_WALLETS: 'false' } });
    try {
      const dev = await factories(plain).developer();
      const r = await cli(['trigger', 'payment_request.approved', '--key', dev.secretKey, '--url', plain.baseUrl]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 2, stdout: '' });
      expect(r.stderr).toBe('wallet-gateway: this gateway has no test wallet test_approve: trigger works against development gateways with their test wallets\n');
    } finally {
      await plain.close();
    }
  });
});

describe('listen', () => {
  test('prints its secret, then forwards each new event signed with it, one line each; history before it started is not sent', async () => {
    const dev = await factories(app).developer();
    const key = ['--key', dev.secretKey, '--url', app.baseUrl];
    await cli(['trigger', 'payment_request.created', ...key]);
    const receiver = await startReceiver({ respond: (r) => (r.json.type === 'payment_request.rejected' ? 500 : 200) });
    const running = listen(['--forward-to', receiver.url, '--state', await stateFile(), ...key]);
    try {
      await running.until((l) => l.length >= 1);
      expect(running.lines[0]).toEqual({ secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/), forwardTo: receiver.url });
      const approved = (await cli(['trigger', 'payment_request.approved', ...key])).lines[0];
      const rejected = (await cli(['trigger', 'payment_request.rejected', ...key])).lines[0];
      await running.until((l) => l.some((x) => x.eventId === rejected.eventId));
      const forwarded = running.lines.slice(1);
      expect(forwarded.map((x) => x.type)).toEqual([
        'payment_request.created',
        'payment_request.approved',
        'payment_request.created',
        'payment_request.rejected',
      ]);
      expect(forwarded[1]).toEqual({ eventId: approved.eventId, type: 'payment_request.approved', status: 200, durationMs: expect.any(Number) });
      expect(forwarded[3]).toMatchObject({ eventId: rejected.eventId, status: 500 });
      // Signed with the printed secret; the body is the event as the events API has it.
      for (const got of receiver.received) {
        expect(verify(running.lines[0].secret, got)).toEqual(got.json);
        expect(got.id).toBe(got.json.id);
        const stored = (await http(app.baseUrl, `/api/v1/events/${got.id}`, { token: dev.secretKey })).body;
        expect(got.json).toEqual({ id: stored.id, type: stored.type, createdAt: stored.createdAt, data: stored.data });
      }
      expect(await running.stop()).toBe(0);
      expect(running.stderr).toBe('');
    } finally {
      await running.stop();
      await receiver.close();
    }
  });

  test('--events narrows what is forwarded; after a stop it resumes from its cursor with the same secret', async () => {
    const dev = await factories(app).developer();
    const env = bareEnv({ WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
    const receiver = await startReceiver();
    const state = await stateFile();
    const args = ['--forward-to', receiver.url, '--events', 'payment_request.cancelled,payment_request.expired', '--state', state];
    const first = listen(args, env);
    try {
      await first.until((l) => l.length >= 1);
      const cancelled = (await cli(['trigger', 'payment_request.cancelled'], env)).lines[0];
      await first.until((l) => l.some((x) => x.eventId === cancelled.eventId));
      expect(await first.stop()).toBe(0);
      // Stopped: these happen meanwhile.
      const expired = (await cli(['trigger', 'payment_request.expired'], env)).lines[0];
      await cli(['trigger', 'payment_request.approved'], env);
      const second = listen(args, env);
      try {
        await second.until((l) => l.some((x) => x.eventId === expired.eventId));
        expect(second.lines[0]).toEqual(first.lines[0]);
        expect(second.lines.slice(1).map((x) => x.type)).toEqual(['payment_request.expired']);
        expect(receiver.received.map((r) => r.json.type)).toEqual(['payment_request.cancelled', 'payment_request.expired']);
        expect(JSON.parse(await readFile(state, 'utf8'))).toEqual({ secret: first.lines[0].secret, after: expect.stringMatching(/^evt_/) });
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
      await receiver.close();
    }
  });

  test('a receiver that is down gets a line with status null and why; the state lives under XDG_STATE_HOME by default', async () => {
    const dev = await factories(app).developer();
    const home = await mkdtemp(path.join(tmpdir(), 'merchant-state-'));
    const receiver = await startReceiver();
    const url = receiver.url;
    await receiver.close();
    const running = listen(['--forward-to', url, '--key', dev.secretKey, '--url', app.baseUrl], bareEnv({ XDG_STATE_HOME: home }));
    try {
      await running.until((l) => l.length >= 1);
      const created = (await cli(['trigger', 'payment_request.created', '--key', dev.secretKey, '--url', app.baseUrl])).lines[0];
      await running.until((l) => l.some((x) => x.eventId === created.eventId));
      expect(running.lines.at(-1)).toEqual({ eventId: created.eventId, type: 'payment_request.created', status: null, durationMs: expect.any(Number), error: 'ECONNREFUSED' });
      expect(await running.stop()).toBe(0);
      expect(await readdir(path.join(home, 'wallet-gateway'))).toEqual([expect.stringMatching(/^listen-[0-9a-f]{16}\.json$/)]);
    } finally {
      await running.stop();
    }
  });

  test('usage mistakes and a refused key end it with exit 2 and a message', async () => {
    const dev = await factories(app).developer();
    const key = ['--key', dev.secretKey, '--url', app.baseUrl];
    const state = ['--state', await stateFile()];
    for (const [args, message] of [
      [[...key], /--forward-to is required/],
      [['--forward-to', 'ftp://127.0.0.1/x', ...key], /--forward-to must be an http\(s\) URL/],
      [['--forward-to', 'not a url', ...key], /--forward-to must be an http\(s\) URL/],
      [['--forward-to', 'http://127.0.0.1:9/x', '--events', 'payment_request.paid', ...key], /--events: unknown event type "payment_request.paid"/],
      [['--forward-to', 'http://127.0.0.1:9/x', '--url', 'localhost:3000', '--key', dev.secretKey], /--url must be the gateway's address/],
      [['--forward-to', 'http://127.0.0.1:9/x', '--bogus', ...key], /Unknown option '--bogus'/],
      [['--forward-to', 'http://127.0.0.1:9/x', ...state, '--key', `${dev.secretKey.slice(0, -3)}abc`, '--url', app.baseUrl], /the gateway refused the key: Invalid secret key \(set --key or WALLET_GATEWAY_KEY\)/],
    ] as Array<[string[], RegExp]>) {
      const running = listen(args);
      const code = await running.done;
      expect([args.join(' ').slice(0, 50), code]).toEqual([args.join(' ').slice(0, 50), 2]);
      expect(running.stderr).toMatch(message);
    }
  });
});
