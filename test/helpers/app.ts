import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../src/config.js';
import { resolveStartupKeys } from '../../src/startup-keys.js';
import { createLogger } from '../../src/logger.js';
import { createGateway, type Gateway } from '../../src/server.js';
import type { Database } from '../../src/db/database.js';
import { issueSecretKey } from '../../src/auth/secret-keys.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { validateResponse } from './openapi.js';
import { TEST_CONSENT_KEY } from './consent-keys.js';

/** A gateway on a free loopback port over its own fresh database, with captured JSON logs. */
export interface TestApp {
  baseUrl: string;
  config: Config;
  db: Database;
  gateway: Gateway;
  /** The test database (pass it to a second `startTestApp` for another instance on the same database). */
  database: TestDatabase;
  /** Every log line written so far, raw. */
  logs: string[];
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Reuse an existing database (for a second instance). */
  database?: TestDatabase;
  /** Listen on this port instead of a free one (a page whose origin must be known before start, e.g. WebAuthn's). */
  port?: number;
}

/** The passkeys' relying party production requires (WEBAUTHN_RP_ID, WEBAUTHN_ORIGIN). */
export const PRODUCTION_RELYING_PARTY = { WEBAUTHN_RP_ID: 'wallet.example', WEBAUTHN_ORIGIN: 'https://wallet.example' } as const;

/** The test suites' PIN pepper (32 bytes, hex). */
export const TEST_PIN_PEPPER = '7e57'.repeat(16);

/** Test environment: fixed secrets, silent unless asked, quick sweeps. */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    APP_ENV: 'development',
    KEY_SIGNING_SECRET: 'test-key-signing-secret-0123456789',
    USER_TOKEN_SECRET: 'test-user-token-secret-0123456789',
    ADMIN_TOKEN: 'test-admin-token-0123456789',
    CONSENT_SIGNING_KEY: TEST_CONSENT_KEY,
    // Suites make many requests of one developer to one wallet; test/consent sets the cap it tests.
    MAX_PENDING_PER_PAYER: '1000',
    LOG_LEVEL: 'info',
    // The scripted test wallets (src/sandbox) only where a test asks for them: they add users,
    // wallets and hub subscriptions that other suites count.
    SANDBOX_TEST_WALLETS: 'false',
    // No payout schedule in the background: a cut-off passing mid-test would move balances other
    // suites count; test/settlement runs it where it tests it.
    PAYOUT_CHECK_INTERVAL_SECONDS: '0',
    // Production names its passkeys' relying party (development defaults to localhost).
    ...(env.APP_ENV === 'production' ? PRODUCTION_RELYING_PARTY : {}),
    // The PIN pepper a production start requires (development makes one under DATA_DIR: test/consent tests that).
    PIN_PEPPER: TEST_PIN_PEPPER,
    // Suites make many calls of one user, and every call comes from 127.0.0.1: test/consent/limits.test.ts tests the limits.
    USER_RATE_LIMIT_PER_SECOND: '100000',
    PAY_PAGE_LIMIT_PER_MINUTE: '100000',
    ...env,
  });
}

/** Starts a gateway for a test file; call `close()` in afterAll. */
export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  // As a process start does (src/gateway-main.ts): the development keys under DATA_DIR when unset.
  const config = resolveStartupKeys(testConfig(opts.env));
  const database = opts.database ?? (await createTestDatabase());
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  const logger = createLogger(config.logLevel, sink, { format: config.logFormat ?? 'json' });
  const gateway = await createGateway({ config, db: database.db, logger });
  const baseUrl = await gateway.listen(opts.port ?? 0, '127.0.0.1');
  return {
    baseUrl,
    config,
    db: database.db,
    database,
    gateway,
    logs,
    async close() {
      await gateway.dispose();
      if (!opts.database) await database.close();
    },
  };
}

let seq = 0;
const unique = (): string => `${Date.now().toString(36).slice(-4)}${(seq++).toString(36)}${Math.floor(Math.random() * 1e4)}`;

/** The transaction PIN `factories(app).user()` gives every wallet unless told otherwise (the approve helpers' default). */
export const TEST_PIN = '135790';

/** The `verification` argument of an approval with a PIN (TEST_PIN unless told). */
export const pinVerification = (pin: string = TEST_PIN): { pin: string } => ({ pin });

/** Small factories that set up data through the services (never through the code under test's doors). */
export function factories(app: Pick<TestApp, 'db' | 'config' | 'gateway'>) {
  const s = app.gateway.services;
  const work = () => s.works.begin();
  let phoneSeq = Math.floor(Math.random() * 1e6);
  return {
    async developer(name = 'Test Merchant'): Promise<{ developerId: string; secretKey: string; keyId: string }> {
      const d = await s.developers.create(work(), name);
      const key = await issueSecretKey(work(), app.config, d.id);
      return { developerId: d.id, ...key };
    },
    /** A user and funded wallet; its transaction PIN is `opts.pin`, else TEST_PIN (`pin: null`: a random one). */
    async user(opts: { balance?: number; username?: string; phone?: string; currency?: string; pin?: string | null } = {}) {
      const username = opts.username ?? `u_${unique()}`;
      const phone = opts.phone ?? `0911${String(phoneSeq++ % 1e6).padStart(6, '0')}`;
      const pin = opts.pin === undefined ? TEST_PIN : opts.pin;
      const created = await s.accounts.createUser(work(), { username, phone, balance: opts.balance, currency: opts.currency, pin });
      const token = await mintUserToken(app.config, created.userId);
      return { ...created, username, phone, token };
    },
  };
}

/** What a file's shared set-up made (see `useTestApp`). */
export interface FileFixture {
  app: TestApp;
  f: ReturnType<typeof factories>;
  /** A developer's secret key (with `developer: true`). */
  token: string;
  /** A user's wallet (with `user`). */
  walletId: string;
}

/**
 * The set-up most files share, in one place: a gateway for the file started before its tests and
 * closed after them, its factories and, when asked, a developer (its secret key) and a user (its
 * wallet) made once; `ready` receives them before the first test, e.g.
 * `useTestApp({ env }, (x) => ({ app, f } = x))`.
 */
export function useTestApp(
  opts: TestAppOptions & { developer?: boolean; user?: Parameters<ReturnType<typeof factories>['user']>[0] },
  ready: (fixture: FileFixture) => void,
): void {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await startTestApp(opts);
    const f = factories(app);
    const token = opts.developer ? (await f.developer()).secretKey : '';
    const walletId = opts.user ? (await f.user(opts.user)).walletId : '';
    ready({ app, f, token, walletId });
  });
  afterAll(async () => {
    await app?.close();
  });
}

/** fetch with a bearer token and JSON; returns status, headers and parsed body. */
export async function http(
  baseUrl: string,
  path: string,
  opts: { method?: string; token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = opts.method ?? (body !== undefined ? 'POST' : 'GET');
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    /* not JSON: keep the text */
  }
  // Every REST response is checked against schema/openapi.yaml (skips /graphql and /docs).
  const contentType = res.headers.get('content-type');
  const json = /^application\/([\w.-]+\+)?json\b/i.test(contentType ?? '');
  validateResponse(method, path, res.status, contentType, json || text === '' ? parsed : text, res.headers);
  return { status: res.status, headers: res.headers, body: parsed };
}

/** POST a GraphQL operation to /graphql. */
export async function gql(baseUrl: string, query: string, variables: Record<string, unknown> = {}, token?: string) {
  return http(baseUrl, '/graphql', { body: { query, variables }, ...(token ? { token } : {}) });
}

/**
 * Another gateway instance on the same database, like a second process: on a PostgreSQL
 * server it has its own ORM, pool and LISTEN connection; the embedded database belongs to one
 * process, so there the second instance shares it.
 */
export async function startSecondInstance(first: TestApp, env: Record<string, string> = {}): Promise<TestApp> {
  if (!first.database.url) return startTestApp({ database: first.database, env });
  const { openDatabase } = await import('../../src/db/database.js');
  const db = await openDatabase({ url: first.database.url, poolMax: 10 });
  const second = await startTestApp({ database: { db, url: first.database.url, close: () => db.close() }, env });
  return {
    ...second,
    async close() {
      await second.close();
      await db.close();
    },
  };
}
