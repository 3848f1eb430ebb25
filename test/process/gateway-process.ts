// Process-level fault tests: the real gateway (`node dist/src/main.js`, what `npm start` runs)
// as a child process on its own test database, plus keep-alive HTTP clients that record exactly
// what each request got back (a response, or a connection error).
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { ROOT, cliEnv } from '../helpers/cli.js';
import { buildDist } from '../helpers/build.js';
import { TEST_PIN, testConfig } from '../helpers/app.js';
import type { Database } from '../../src/db/database.js';
import { DeveloperService } from '../../src/developers/developer.service.js';
import { UnitsOfWork } from '../../src/db/unit-of-work.js';
import { ConsentService } from '../../src/consent/consent.service.js';
import { AccountService } from '../../src/accounts/account.service.js';
import { issueSecretKey } from '../../src/auth/secret-keys.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';

/** A running gateway process. */
export interface GatewayProcess {
  child: ChildProcess;
  baseUrl: string;
  /** Every stdout/stderr line so far. */
  lines: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once every process writing to its stdout and stderr has closed them: all lines read. */
  outputEnded: Promise<void>;
}

/**
 * Starts `node dist/src/main.js` on DATABASE_URL and resolves once it listens: one process
 * (WEB_CONCURRENCY=1) unless `env` asks for the cluster `npm start` runs.
 */
export async function spawnGateway(databaseUrl: string, env: Record<string, string> = {}): Promise<GatewayProcess> {
  return spawnGatewayOn({ DATABASE_URL: databaseUrl }, env);
}

/** `spawnGateway` on `{ DATABASE_URL }` or on an embedded database's `{ DATA_DIR }`. */
export async function spawnGatewayOn(db: Record<string, string>, env: Record<string, string> = {}): Promise<GatewayProcess> {
  await buildDist();
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: ROOT,
    env: { ...cliEnv(db), PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '100000', MAX_PENDING_PER_PAYER: '1000', WEB_CONCURRENCY: '1', ...env },
  });
  const lines: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // Every writer of the pipes closed them (a cluster's workers too, which outlive a killed primary).
  const ended = (stream: NodeJS.ReadableStream) => new Promise<void>((resolve) => stream.once('close', () => resolve()));
  const outputEnded = Promise.all([ended(child.stdout!), ended(child.stderr!)]).then(() => undefined);
  const collect = (stream: NodeJS.ReadableStream, onLine?: (line: string) => void) => {
    let buffered = '';
    stream.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        onLine?.(line);
      }
    });
  };
  let timer: NodeJS.Timeout | undefined;
  const baseUrl = await new Promise<string>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`gateway did not start within 90 s:\n${lines.join('\n')}`)), 90_000);
    collect(child.stdout!, (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'wallet gateway listening' && entry.url) resolve(entry.url);
      } catch {
        /* asserted by the tests: every line is JSON */
      }
    });
    collect(child.stderr!);
    void exited.then(({ code }) => reject(new Error(`gateway exited early with ${code}:\n${lines.join('\n')}`)));
  })
    .catch((err: unknown) => {
      child.kill('SIGKILL'); // never leave a half-started gateway behind
      throw err;
    })
    .finally(() => clearTimeout(timer));
  return { child, baseUrl, lines, exited, outputEnded };
}

/** Developers (with secret keys) and users (with wallets and tokens) written straight to the database. */
export async function seed(db: Database, opts: { developers: number; users: number; balance: number }) {
  const config = testConfig();
  const developers = new DeveloperService();
  const accounts = new AccountService(config, new ConsentService(config));
  // Nothing here writes events: the commits need no listener.
  const works = new UnitsOfWork(db.sql, () => db.orm.em.fork());
  const devs = [];
  for (let i = 0; i < opts.developers; i++) {
    const d = await developers.create(db.sql, `Merchant ${i}`);
    devs.push({ developerId: d.id, ...(await issueSecretKey(db.sql, config, d.id)) });
  }
  const users = [];
  for (let i = 0; i < opts.users; i++) {
    const username = `p${Date.now().toString(36)}${i}`;
    const created = await accounts.createUser(works.begin(), { username, phone: `09${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`, balance: opts.balance, pin: TEST_PIN });
    users.push({ ...created, token: await mintUserToken(config, created.userId) });
  }
  return { developers: devs, users };
}

/** What one HTTP request got: a response (status, parsed body, Connection header) or a connection error. */
export type Outcome =
  | { kind: 'response'; status: number; body: any; connection: string | undefined }
  | { kind: 'error'; code: string };

/** One request over `agent` (keep-alive); never rejects. */
export function send(agent: http.Agent, baseUrl: string, method: string, path: string, opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Outcome> {
  const url = new URL(path, baseUrl);
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            /* keep text */
          }
          resolve({ kind: 'response', status: res.statusCode!, body, connection: res.headers.connection });
        });
        res.on('error', (err: NodeJS.ErrnoException) => resolve({ kind: 'error', code: err.code ?? err.message }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ kind: 'error', code: err.code ?? err.message }));
    req.end(payload);
  });
}

export const APPROVE = `mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "${TEST_PIN}" }) { id status transactionId } }`;
