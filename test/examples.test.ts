/**
 * The examples (examples/*.ts) run as the README says: `npm run example:pay`, `npm run
 * example:webhooks`, `npm run example:till` and `npm run example:capture`, on the project's Node
 * 24 (type stripping, no build), against a development gateway with its test wallets. They
 * type-check against @wallet-gateway/client (so does the Koa receiver in docs/merchants.md); the
 * payment is approved and found again by its reference; the receiver registers its own endpoint,
 * verifies each delivery's signature, refuses an unsigned one, and deletes its endpoint when
 * stopped; the till's link is paid by a user who opens its code, and its QR code is an SVG and a
 * PNG; the shop's two held orders end captured in part and voided.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { factories, gql, http, startTestApp, type TestApp } from './helpers/app.js';
import { ROOT } from './helpers/cli.js';
import { until, withDeadline } from './helpers/expect.js';
import { approve, requestPayment } from './helpers/payments.js';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { SANDBOX_TEST_WALLETS: 'true', SANDBOX_DELAY_MS: '100', WEBHOOK_POLL_INTERVAL_MS: '100' } });
});
afterAll(async () => {
  await app?.close();
});

/** `npm run <script> [-- args]` from the repository root, as a reader types it, with only the environment it needs. */
function npmRun(script: string, args: string[], env: Record<string, string>) {
  const child = spawn('npm', ['run', '--silent', script, ...(args.length ? ['--', ...args] : [])], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: stopping it reaches node under npm's shell
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.on('data', (c: Buffer) => (out.stdout += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out.stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, out, exited };
}

const stopGroup = (child: ChildProcess, signal: NodeJS.Signals): void => {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    /* already gone */
  }
};

test('the examples and the Koa receiver of docs/merchants.md type-check against @wallet-gateway/client', async () => {
  const docs = await readFile(path.join(ROOT, 'docs', 'merchants.md'), 'utf8');
  const koa = /<!-- merchant-koa:start -->\n```ts\n([\s\S]*?)```\n<!-- merchant-koa:end -->/.exec(docs);
  if (!koa) throw new Error('docs/merchants.md has no merchant-koa block');
  // Outside node_modules, resolving packages from this repository's node_modules.
  const dir = await mkdtemp(path.join(tmpdir(), 'examples-'));
  try {
    await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    await writeFile(path.join(dir, 'koa-receiver.mts'), koa[1]!);
    const examples = ['pay.ts', 'webhook-receiver.ts', 'till.ts', 'capture.ts'].map((file) => path.join(ROOT, 'examples', file));
    const program = ts.createProgram([...examples, path.join(dir, 'koa-receiver.mts')], {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      verbatimModuleSyntax: true, // what Node's type stripping needs: type-only imports marked as such
    });
    expect(ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('`npm run example:pay` asks test_approve for 12.50, prints APPROVED with the payment reference, and finds it by its reference', async () => {
  const dev = await factories(app).developer();
  const run = npmRun('example:pay', [], { WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
  expect(await withDeadline(run.exited, 30_000, 'example:pay')).toBe(0);
  expect(run.out.stderr).toBe('');
  const lines = run.out.stdout.trim().split('\n');
  expect(lines).toEqual([
    expect.stringMatching(/^requested 12\.50 from test_approve: [0-9a-f-]{36} \(expires \S+\)$/),
    expect.stringMatching(/^APPROVED WPAY\d{12}-[A-Z0-9]{6}$/),
    expect.stringMatching(/^found 1 by reference order-\d+$/),
  ]);
});

test('`npm run example:pay -- test_reject` ends REJECTED; without a key it says which variable to set', async () => {
  const dev = await factories(app).developer();
  const rejected = npmRun('example:pay', ['test_reject'], { WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
  expect(await withDeadline(rejected.exited, 30_000, 'example:pay test_reject')).toBe(0);
  expect(rejected.out.stdout).toMatch(/^REJECTED $/m);
  const keyless = npmRun('example:pay', [], { WALLET_GATEWAY_URL: app.baseUrl });
  expect(await withDeadline(keyless.exited, 30_000, 'example:pay without a key')).not.toBe(0);
  expect(keyless.out.stderr).toMatch(/Set WALLET_GATEWAY_KEY/);
});

test('`npm run example:webhooks` registers its own endpoint, verifies what the gateway signs, refuses the rest, and deletes the endpoint when stopped', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const payer = await f.user({ balance: 100 });
  const run = npmRun('example:webhooks', [], { WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
  try {
    await until(() => /receives at /.test(run.out.stdout) || run.child.exitCode !== null, 30_000, 'the receiver registered');
    const [, endpointId, url] = /^endpoint (\S+) receives at (http:\/\/127\.0\.0\.1:\d+\/webhooks);/m.exec(run.out.stdout) ?? [];
    expect(endpointId).toMatch(/^we_/);
    const listed = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey });
    expect(listed.body.data.map((e: { id: string; url: string }) => [e.id, e.url])).toEqual([[endpointId, url]]);

    // A payment made and approved elsewhere: its events arrive signed, and verify.
    const requestId = await requestPayment(app.baseUrl, dev.secretKey, payer.walletId, 2);
    expect((await approve(app.baseUrl, payer.token, requestId)).body.errors).toBeUndefined();
    await until(() => new RegExp(`^verified payment_request.approved ${requestId} paid, WPAY`, 'm').test(run.out.stdout), 15_000, 'the verified approval');
    expect(run.out.stdout).toMatch(/^verified payment_request\.created evt_\w+$/m);
    // Not signed with the endpoint's secret: refused with 400.
    const forged = await fetch(url!, { method: 'POST', body: JSON.stringify({ id: 'evt_x', type: 'payment_request.approved', data: {} }), headers: { 'webhook-id': 'evt_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' } });
    expect(forged.status).toBe(400);
    // The receiver's line reaches us through a pipe, possibly after its answer did.
    await until(() => /^refused a delivery whose signature does not verify$/m.test(run.out.stdout), 15_000, "the receiver's refusal line");

    stopGroup(run.child, 'SIGINT'); // Ctrl-C in a terminal
    await withDeadline(run.exited, 15_000, 'the receiver stopping');
    expect(run.out.stdout).toMatch(new RegExp(`^endpoint ${endpointId} deleted$`, 'm'));
    const after = await http(app.baseUrl, '/api/v1/webhook-endpoints', { token: dev.secretKey });
    expect(after.body.data).toEqual([]);
  } finally {
    stopGroup(run.child, 'SIGKILL');
  }
});

test('`npm run example:till` makes a payment link, saves its QR code (SVG and PNG) in a temporary directory, and prints APPROVED once a user who opened the link pays it', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const payer = await f.user({ balance: 100 });
  const run = npmRun('example:till', [], { WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
  let qrDir: string | undefined;
  try {
    await until(() => /^waiting for a payer/m.test(run.out.stdout) || run.child.exitCode !== null, 30_000, 'the till waiting');
    const [, bill, paymentUrl, dir] = /^(bill-\d+): 12\.50 at (\S+\/pay\/[A-Za-z0-9_-]+) \(QR code in (\S+)\/bill\.svg and bill\.png; expires \S+\)$/m.exec(run.out.stdout) ?? [];
    expect([bill, paymentUrl, dir]).toEqual([expect.any(String), expect.any(String), expect.any(String)]);
    qrDir = dir!;
    expect(path.relative(ROOT, qrDir).startsWith('..')).toBe(true); // never into the repository
    expect(await readFile(path.join(qrDir, 'bill.svg'), 'utf8')).toMatch(/<svg[\s\S]*<\/svg>\s*$/);
    expect((await readFile(path.join(qrDir, 'bill.png'))).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

    // The payer opens the link: the wallet app reads the request by its code, then approves it with the PIN.
    const code = paymentUrl!.split('/pay/')[1]!;
    const read = await gql(app.baseUrl, 'query($code: String!) { paymentRequestByCode(code: $code) { id amount merchantName reference status } }', { code }, payer.token);
    expect(read.body.data.paymentRequestByCode).toEqual({ id: expect.any(String), amount: 12.5, merchantName: 'Corner Café', reference: bill, status: 'PENDING' });
    expect((await approve(app.baseUrl, payer.token, read.body.data.paymentRequestByCode.id)).body.errors).toBeUndefined();
    expect(await withDeadline(run.exited, 30_000, 'example:till')).toBe(0);
    expect(run.out.stderr).toBe('');
    expect(run.out.stdout.trim().split('\n').at(-1)).toMatch(/^APPROVED WPAY\d{12}-[A-Z0-9]{6}$/);
  } finally {
    stopGroup(run.child, 'SIGKILL');
    if (qrDir && existsSync(qrDir)) await rm(qrDir, { recursive: true, force: true });
  }
});

test('`npm run example:capture` holds two orders of 30.00 from test_approve, captures 25.00 of one (a void after it is 409) and voids the other', async () => {
  const dev = await factories(app).developer();
  const run = npmRun('example:capture', [], { WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl });
  expect(await withDeadline(run.exited, 30_000, 'example:capture')).toBe(0);
  expect(run.out.stderr).toBe('');
  const lines = run.out.stdout.trim().split('\n');
  // The two orders run side by side: their first lines may come in either order.
  expect(lines.slice(0, 4).sort()).toEqual([
    expect.stringMatching(/^order-\d+-1: approved, held: PENDING amount 30\.00 captured null$/),
    expect.stringMatching(/^order-\d+-1: asked test_approve for 30\.00, capture MANUAL \([0-9a-f-]{36}\)$/),
    expect.stringMatching(/^order-\d+-2: approved, held: PENDING amount 30\.00 captured null$/),
    expect.stringMatching(/^order-\d+-2: asked test_approve for 30\.00, capture MANUAL \([0-9a-f-]{36}\)$/),
  ]);
  expect(lines.slice(4)).toEqual([
    'delivered, captured: COMPLETED amount 30.00 captured 25.00',
    'a void after the capture: 409 Only a PENDING (held) transaction can be voided; this one is COMPLETED',
    'cancelled, voided: CANCELLED amount 30.00 captured null',
  ]);
  // What the gateway holds: one payment of 25.00 reached the developer, the void moved nothing.
  const captured = await http(app.baseUrl, '/api/v1/balance-transactions', { token: dev.secretKey });
  expect(captured.body.data.map((t: { amount: number }) => t.amount)).toEqual([25]);
});
