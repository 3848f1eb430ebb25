/**
 * The README's merchant integration (between `merchant-integration:start` and `:end`) is kept
 * honest: under 30 lines, type-checked against the client package, and run as printed (Node's
 * type stripping) against a development gateway, where it gets paid by the test_approve wallet.
 * The README's Koa receiver (`merchant-koa`) is type-checked too.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { factories, startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/cli.js';

let app: TestApp;
let dir: string;
let file: string;
let code: string;

beforeAll(async () => {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const block = /<!-- merchant-integration:start -->\n```ts\n([\s\S]*?)```\n<!-- merchant-integration:end -->/.exec(readme);
  if (!block) throw new Error('README.md has no merchant-integration block');
  code = block[1]!;
  // Outside node_modules (Node strips types only there), resolving packages from this repository's node_modules.
  dir = await mkdtemp(path.join(tmpdir(), 'readme-integration-'));
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  file = path.join(dir, 'integration.mts');
  await writeFile(file, code);
  const koa = /<!-- merchant-koa:start -->\n```ts\n([\s\S]*?)```\n<!-- merchant-koa:end -->/.exec(readme);
  if (!koa) throw new Error('README.md has no merchant-koa block');
  await writeFile(path.join(dir, 'koa-receiver.mts'), koa[1]!);
  app = await startTestApp({ env: { SANDBOX_TEST_WALLETS: 'true', SANDBOX_DELAY_MS: '100', WEBHOOK_POLL_INTERVAL_MS: '100' } });
});
afterAll(async () => {
  await app?.close();
  await rm(dir, { recursive: true, force: true });
});

test('is under 30 lines', () => {
  expect(code.trimEnd().split('\n').length).toBeLessThan(30);
});

test('type-checks against @wallet-gateway/client, and so does the Koa receiver', () => {
  const program = ts.createProgram([file, path.join(dir, 'koa-receiver.mts')], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
  });
  const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  expect(problems).toEqual([]);
});

test('runs as printed: the payment is approved, the signed webhook verified, the request found by its reference', async () => {
  const dev = await factories(app).developer();
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  const child = spawn(process.execPath, [file], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, WALLET_GATEWAY_KEY: dev.secretKey, WALLET_GATEWAY_URL: app.baseUrl, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  try {
    const deadline = Date.now() + 30_000;
    const done = () => /^found 1$/m.test(out) && /^paid order-1001 WPAY\d{12}-[A-Z0-9]{6}$/m.test(out);
    while (!done() && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect({ out, err }).toEqual({ out: expect.stringMatching(/^APPROVED WPAY\d{12}-[A-Z0-9]{6}$/m), err: '' });
    expect(done()).toBe(true);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
