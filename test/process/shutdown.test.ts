import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { rm } from 'node:fs/promises';
import { ROOT, cliEnv } from '../helpers/cli.js';
import { buildDist } from '../helpers/build.js';
import { createTestDatabase, migratedDataDir, type TestDatabase } from '../helpers/db.js';
import { testConfig } from '../helpers/app.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';
import { subscribe, wsClient } from '../helpers/ws.js';
import { until, withDeadline } from '../helpers/expect.js';

// The real process (`node dist/src/main.js`, what `npm start` runs) receiving SIGTERM.
let database: TestDatabase | undefined;
let dataDir: string | undefined;
let child: ChildProcess;
let baseUrl: string;
const lines: string[] = [];

beforeAll(async () => {
  await buildDist();
  const dbEnv: Record<string, string> = {};
  if (process.env.TEST_DATABASE_URL) {
    database = await createTestDatabase();
    dbEnv.DATABASE_URL = database.url!;
  } else {
    dataDir = await migratedDataDir('wg-shutdown-');
    dbEnv.DATA_DIR = dataDir;
  }
  child = spawn(process.execPath, ['dist/src/main.js'], { cwd: ROOT, env: { ...cliEnv(dbEnv), PORT: '0', LOG_LEVEL: 'info' } });
  let timer: NodeJS.Timeout | undefined;
  baseUrl = await new Promise<string>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('gateway did not start within 90 s')), 90_000);
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'wallet gateway listening' && entry.url) resolve(entry.url);
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited early with ${code}`)));
  }).finally(() => clearTimeout(timer));
}, 120_000);

afterAll(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await database?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Sends the head of a POST /graphql and returns a function that sends the rest and reads the response. */
function startSlowRequest(url: URL): Promise<(rest: string) => Promise<string>> {
  const body = JSON.stringify({ query: '{ __typename }' });
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 5)}`,
      );
      let response = '';
      socket.on('data', (d: Buffer) => (response += d.toString('utf8')));
      const ended = new Promise<string>((done) => socket.on('close', () => done(response)));
      resolve(async () => {
        socket.write(body.slice(5));
        return ended;
      });
    });
    socket.on('error', reject);
  });
}

test('a development start ends with one "next steps" line: the pages, the demo command and the development admin token', async () => {
  await until(() => lines.some((l) => l.includes('"next steps"')), 10_000, 'the next steps line');
  const steps = lines.map((l) => JSON.parse(l) as { msg: string; next?: unknown }).filter((l) => l.msg === 'next steps');
  expect(steps).toEqual([
    expect.objectContaining({
      level: 30,
      next: { app: `${baseUrl.replace('127.0.0.1', 'localhost')}/app`, docs: `${baseUrl}/docs`, graphql: `${baseUrl}/graphql`, demo: 'npx wallet-gateway demo', adminToken: expect.any(String) },
    }),
  ]);
});

test('SIGTERM: the in-flight request completes, WebSockets close with 1001, new connections are refused, exit 0 within 10 s', async () => {
  const url = new URL(baseUrl);
  const token = await mintUserToken(testConfig(), randomUUID());
  let closeCode: number | undefined;
  let connected!: () => void;
  let wsClosed!: () => void;
  const acknowledged = new Promise<void>((resolve) => (connected = resolve));
  const wsClosedPromise = new Promise<void>((resolve) => (wsClosed = resolve));
  const client = wsClient(baseUrl, token, {
    onClose: (code) => {
      closeCode = code;
      wsClosed();
    },
    onConnected: () => connected(),
  });
  const sub = subscribe(client, 'subscription { paymentRequested { id } }');
  await withDeadline(acknowledged, 10_000, 'the WebSocket connection');
  const finish = await startSlowRequest(url);
  // Another request answered after it: the server has read the slow request's head by now, so
  // that request is in flight (not refused as arriving during the drain).
  expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);

  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  await until(() => lines.some((l) => l.includes('"shutting down"')), 10_000, 'the shutdown log line');
  // The drain is under way and cannot end while the slow request is unanswered: the process is
  // alive, so what follows is the drain's doing, not the exit's.
  // The WebSocket is closed by the server with 1001 (going away) during the drain.
  await withDeadline(wsClosedPromise, 10_000, 'the WebSocket close during the drain');
  expect(closeCode).toBe(1001);
  // A new connection is refused (the listener is closed) while the process still runs. A raw TCP
  // connect: fetch would reuse its kept-alive socket, which the drain answers 503 instead.
  const refused = await new Promise<string>((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
  expect(refused).toBe('ECONNREFUSED');
  expect(child.exitCode).toBeNull();
  expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).not.toContain('stopped');

  // The rest of the in-flight request: it is answered, then the process exits.
  const response = await finish('');
  expect(response).toMatch(/^HTTP\/1\.1 200/);
  expect(response).toContain('{"data":{"__typename":"Query"}}');

  expect(await withDeadline(exited, 10_000, 'the exit after SIGTERM')).toBe(0);
  expect(sub.values).toEqual([]);
  const messages = lines.map((l) => (JSON.parse(l) as { msg: string }).msg);
  expect(messages).toContain('shutting down');
  expect(messages).toContain('stopped');
  await client.dispose();
}, 20_000);
