/**
 * The CLI (SPEC §12), each command printing exactly one JSON object; what it creates is checked
 * in the database and, for keys and tokens, against a running gateway on the same database. Bad
 * input: a clear message on stderr, exit 2, nothing on stdout, nothing written.
 *
 * Most commands run in this process (`runCli`, the function `bin/wallet-gateway.js` runs); the
 * executable itself (`spawnCli`: exit codes, its own files, finding a running gateway's
 * database) is run where that is what is being tested.
 *
 * Database: with TEST_DATABASE_URL the CLI gets DATABASE_URL = a fresh test database. Without it
 * (embedded mode) the spawned CLI gets DATA_DIR = a fresh temp directory: first it opens its own
 * embedded database there (no server running), later the test process serves that directory and
 * the CLI connects to it through `embedded.json`, exactly as it does beside a running `npm start`;
 * the in-process CLI gets that served database's URL.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { openDatabase } from '../../src/db/database.js';
import { verifyUserTokenClaims } from '../../src/auth/user-tokens.js';
import { factories, http, startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { createTestDatabase, migratedDataDir, type TestDatabase } from '../helpers/db.js';
import { cliEnv, runCli, spawnCli, type CliResult } from '../helpers/cli.js';
import { sleep } from '../helpers/expect.js';

const EMBEDDED = process.env.TEST_DATABASE_URL === undefined;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WALLET_ID = /^wlt_[A-Za-z0-9]{20,}$/;
const SECRET_KEY = /^sk_test_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

type Runner = (args: string[], env: NodeJS.ProcessEnv) => Promise<CliResult>;

/** Runs a command that must succeed and print exactly one JSON object (one line) on stdout. */
async function ok(env: NodeJS.ProcessEnv, args: string[], run: Runner = runCli): Promise<any> {
  const r = await run(args, env);
  expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
  expect(r.stdout.endsWith('\n')).toBe(true);
  const lines = r.stdout.split('\n').filter((l) => l !== '');
  expect(lines).toHaveLength(1);
  const value: unknown = JSON.parse(lines[0]!);
  expect(value !== null && typeof value === 'object' && !Array.isArray(value)).toBe(true);
  return value;
}

/** Runs a command that must fail as a usage error: exit 2, `wallet-gateway: <message>` on stderr, empty stdout. */
async function fails(env: NodeJS.ProcessEnv, args: string[], message: RegExp, run: Runner = runCli): Promise<string> {
  const r = await run(args, env);
  expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
  expect(r.stderr).toMatch(/^wallet-gateway: /);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  expect(r.stderr).not.toMatch(/\bselect\b|\binsert\b|syntax for type/i); // no SQL leaks out
  return r.stderr;
}

describe('without DATABASE_URL: its own embedded database under DATA_DIR', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'wg-cli-own-'));
  });
  afterAll(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  test('developer:create and demo (twice) persist there; a gateway on those files accepts the keys', async () => {
    const env = cliEnv({ DATA_DIR: dataDir });
    const { developerId } = await ok(env, ['developer:create', '--name', 'Own Files Ltd'], spawnCli);
    expect(developerId).toMatch(UUID);
    const demo1 = await ok(env, ['demo'], spawnCli);
    const demo2 = await ok(env, ['demo'], spawnCli);
    expect(demo2.users.map((u: any) => u.walletId)).toEqual(demo1.users.map((u: any) => u.walletId));
    expect(existsSync(path.join(dataDir, 'pg'))).toBe(true);
    // Each run closed its embedded server and left no stale pointer to it.
    expect(existsSync(path.join(dataDir, 'pg', 'embedded.json'))).toBe(false);

    // The same files, opened by a gateway afterwards.
    const db = await openDatabase({ dataDir, poolMax: 4 });
    const database: TestDatabase = { db, url: undefined, close: () => db.close() };
    const app = await startTestApp({ database });
    try {
      expect(await db.orm.em.fork().execute('select name from developers where id = ?', [developerId])).toEqual([{ name: 'Own Files Ltd' }]);
      const [row] = await db.orm.em.fork().execute<Array<{ key_hash: string; developer_id: string }>>(
        'select key_hash, developer_id from secret_keys where id = ?',
        [demo2.keyId],
      );
      expect(row).toEqual({ key_hash: sha256(demo2.secretKey), developer_id: demo2.developerId });
      for (const key of [demo1.secretKey, demo2.secretKey]) {
        const res = await http(app.baseUrl, '/api/v1/account/alice', { token: key });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ walletId: demo1.users[0].walletId });
      }
    } finally {
      await app.close();
      await database.close();
    }
  }, 120_000);
});

describe('beside a running gateway on the same database', () => {
  /** For the CLI in this process. */
  let env: NodeJS.ProcessEnv;
  /** For the executable: DATA_DIR on the embedded database (it finds the served one through embedded.json). */
  let spawnEnv: NodeJS.ProcessEnv;
  let database: TestDatabase;
  let dataDir: string | undefined;
  let app: TestApp;
  const sql = <T = Record<string, any>>(query: string, params: unknown[] = []): Promise<T[]> =>
    app.db.orm.em.fork().execute<T[]>(query, params);

  /** Everything a CLI command could write, in one comparable value. */
  const fingerprint = async () =>
    (
      await sql(`select
        (select count(*) from developers)::int as developers,
        (select count(*) from secret_keys)::int as keys,
        (select count(*) from secret_keys where revoked_at is not null)::int as revoked,
        (select count(*) from users)::int as users,
        (select count(*) from wallets)::int as wallets,
        (select coalesce(sum(balance), 0)::text from wallets) as balances,
        (select coalesce(string_agg(status::text, ',' order by id), '') from wallets) as statuses,
        (select count(*) from ledger_entries)::int as ledger`)
    )[0];

  beforeAll(async () => {
    if (EMBEDDED) {
      dataDir = await migratedDataDir('wg-cli-shared-');
      // This process serves the directory (and announces it in embedded.json); the CLI connects to it.
      const db = await openDatabase({ dataDir, poolMax: 10 });
      database = { db, url: undefined, close: () => db.close() };
      env = cliEnv({ DATABASE_URL: db.url });
      spawnEnv = cliEnv({ DATA_DIR: dataDir });
    } else {
      database = await createTestDatabase();
      env = cliEnv({ DATABASE_URL: database.url! });
      spawnEnv = env;
    }
    app = await startTestApp({ database, env: { KEY_CACHE_TTL_MS: '200' } });
  });

  afterAll(async () => {
    await app?.close();
    await database?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  test('developer:create --name → {developerId}', async () => {
    const out = await ok(env, ['developer:create', '--name', '  Acme Coffee  ']);
    expect(Object.keys(out)).toEqual(['developerId']);
    expect(out.developerId).toMatch(UUID);
    expect(await sql('select name from developers where id = ?', [out.developerId])).toEqual([{ name: 'Acme Coffee' }]);
  });

  test('key:issue --developer → {keyId, secretKey} (the executable); the key works against the gateway; only its hash is stored', async () => {
    const { developerId } = await ok(env, ['developer:create', '--name', 'Key Shop']);
    const out = await ok(spawnEnv, ['key:issue', '--developer', developerId], spawnCli);
    expect(Object.keys(out).sort()).toEqual(['keyId', 'secretKey']);
    expect(out.keyId).toMatch(UUID);
    expect(out.secretKey).toMatch(SECRET_KEY);
    expect(decodeJwt(out.secretKey.slice('sk_test_'.length))).toMatchObject({ dev: developerId });

    const rows = await sql('select * from secret_keys where id = ?', [out.keyId]);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.key_hash).toBe(sha256(out.secretKey));
    expect(rows[0]!.developer_id).toBe(developerId);
    expect(rows[0]!.revoked_at).toBeNull();
    expect(JSON.stringify(rows[0])).not.toContain(out.secretKey.split('.')[2]);

    const user = await factories(app).user();
    const res = await http(app.baseUrl, `/api/v1/account/${user.username}`, { token: out.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ walletId: user.walletId });
  });

  test('key:revoke --key → {keyId, revokedAt}; the gateway refuses the key within 5 s; revoking again keeps the first time', async () => {
    const { developerId } = await ok(env, ['developer:create', '--name', 'Revoked Shop']);
    const key = await ok(env, ['key:issue', '--developer', developerId]);
    const user = await factories(app).user();
    const lookup = () => http(app.baseUrl, `/api/v1/account/${user.username}`, { token: key.secretKey });
    expect((await lookup()).status).toBe(200); // cached by the gateway now

    const out = await ok(env, ['key:revoke', '--key', key.keyId]);
    const revokedAt = Date.now();
    expect(out.keyId).toBe(key.keyId);
    expect(Number.isNaN(Date.parse(out.revokedAt))).toBe(false);
    const [row] = await sql<{ revoked_at: unknown }>('select revoked_at from secret_keys where id = ?', [key.keyId]);
    expect(row!.revoked_at).not.toBeNull();

    // Polled until refused; the SPEC's deadline is 5 s after the revocation.
    let res = await lookup();
    while (res.status !== 401) {
      if (Date.now() - revokedAt > 5000) throw new Error('the revoked key was still accepted 5 s after key:revoke');
      await sleep(100);
      res = await lookup();
    }
    expect(res.body).toEqual({ statusCode: 401, message: 'Invalid secret key' });

    const again = await ok(env, ['key:revoke', '--key', key.keyId]);
    expect(again.revokedAt).toBe(out.revokedAt);
  });

  test('user:create without --balance: an empty ACTIVE wallet in DEFAULT_CURRENCY; phone and username normalised', async () => {
    const out = await ok(env, ['user:create', '--username', 'Plain_User.1', '--phone', '0922000001']);
    expect(Object.keys(out).sort()).toEqual(['pin', 'userId', 'walletId']);
    expect(out.pin).toMatch(/^[0-9]{6}$/); // made up, shown this once
    expect(out.userId).toMatch(UUID);
    expect(out.walletId).toMatch(WALLET_ID);
    expect(await sql('select username, phone from users where id = ?', [out.userId])).toEqual([{ username: 'plain_user.1', phone: '922000001' }]);
    expect(await sql('select user_id, status, balance::text as balance, currency from wallets where id = ?', [out.walletId])).toEqual([
      { user_id: out.userId, status: 'ACTIVE', balance: '0.00', currency: 'ETB' },
    ]);
    expect(await sql('select count(*)::int as n from ledger_entries where wallet_id = ?', [out.walletId])).toEqual([{ n: 0 }]);
    // The gateway finds the new user by phone (either form) and by username.
    const { secretKey } = await factories(app).developer();
    for (const identifier of ['0922000001', '922000001', 'PLAIN_USER.1']) {
      const res = await http(app.baseUrl, `/api/v1/account/${identifier}`, { token: secretKey });
      expect(res.body).toEqual({ walletId: out.walletId });
    }
  });

  test('user:create with --balance and --currency: funded through a TOPUP ledger entry', async () => {
    const out = await ok(env, ['user:create', '--username', 'rich_user', '--phone', '922000002', '--balance', '250.75', '--currency', 'usd']);
    expect(await sql('select balance::text as balance, currency from wallets where id = ?', [out.walletId])).toEqual([
      { balance: '250.75', currency: 'USD' },
    ]);
    expect(await sql('select kind, amount::text as amount, currency from ledger_entries where wallet_id = ?', [out.walletId])).toEqual([
      { kind: 'TOPUP', amount: '250.75', currency: 'USD' },
    ]);
    const only = await ok(env, ['user:create', '--username', 'balance_only', '--phone', '922000003', '--balance', '40']);
    expect(await sql('select balance::text as balance, currency from wallets where id = ?', [only.walletId])).toEqual([
      { balance: '40.00', currency: 'ETB' },
    ]);
  });

  test('wallet:status --wallet --status → {walletId, status}, any case, every status', async () => {
    const { walletId } = await factories(app).user();
    for (const [given, expected] of [
      ['SUSPENDED', 'SUSPENDED'],
      ['active', 'ACTIVE'],
      ['Closed', 'CLOSED'],
    ] as const) {
      const out = await ok(env, ['wallet:status', '--wallet', walletId, '--status', given]);
      expect(out).toEqual({ walletId, status: expected });
      expect(await sql('select status from wallets where id = ?', [walletId])).toEqual([{ status: expected }]);
    }
  });

  test('wallet:topup --wallet --amount → {walletId, balance, currency}, with a ledger entry', async () => {
    const { walletId } = await factories(app).user({ balance: 5 });
    const out = await ok(env, ['wallet:topup', '--wallet', walletId, '--amount', '10.50']);
    expect(out).toEqual({ walletId, balance: 15.5, currency: 'ETB' });
    const again = await ok(env, ['wallet:topup', '--wallet', walletId, '--amount', '0.01']);
    expect(again.balance).toBe(15.51);
    expect(await sql('select balance::text as balance from wallets where id = ?', [walletId])).toEqual([{ balance: '15.51' }]);
    const entries = await sql<{ amount: string }>('select amount::text as amount from ledger_entries where wallet_id = ? order by id', [walletId]);
    expect(entries.map((e) => e.amount)).toEqual(['5.00', '10.50', '0.01']);
  });

  test('user:token --username → {token}: a JWT whose sub is the user id, verifiable as a user token', async () => {
    const user = await factories(app).user();
    const out = await ok(env, ['user:token', '--username', user.username.toUpperCase()]);
    expect(Object.keys(out)).toEqual(['token']);
    expect(out.token.split('.')).toHaveLength(3);
    expect((await verifyUserTokenClaims(app.config, out.token)).userId).toBe(user.userId);
    const claims = decodeJwt(out.token);
    expect(claims.sub).toBe(user.userId);
    expect(claims.exp! * 1000).toBeGreaterThan(Date.now());
    // Another secret does not verify it.
    await expect(verifyUserTokenClaims(testConfig({ USER_TOKEN_SECRET: 'some-other-user-token-secret-000' }), out.token)).rejects.toThrow();
  });

  test('demo prints a developer, a key and two funded users; running it twice works', async () => {
    const check = async (out: any) => {
      expect(out.developerId).toMatch(UUID);
      expect(out.keyId).toMatch(UUID);
      expect(out.secretKey).toMatch(SECRET_KEY);
      expect(out.users).toHaveLength(2);
      for (const u of out.users) {
        expect(u.walletId).toMatch(WALLET_ID);
        const [row] = await sql<{ id: string; balance: string; status: string }>(
          'select u.id, w.balance::text as balance, w.status from users u join wallets w on w.user_id = u.id where w.id = ?',
          [u.walletId],
        );
        expect(Number(row!.balance)).toBeGreaterThan(0);
        expect(row!.status).toBe('ACTIVE');
        expect((await verifyUserTokenClaims(app.config, u.userToken)).userId).toBe(row!.id);
        expect(u.pin).toMatch(/^[0-9]{6}$/);
        // The demo key works against the gateway: it resolves both users, by username and by phone.
        for (const identifier of [u.username, u.phone]) {
          const res = await http(app.baseUrl, `/api/v1/account/${identifier}`, { token: out.secretKey });
          expect(res.body).toEqual({ walletId: u.walletId });
        }
      }
      expect(new Set(out.users.map((u: any) => u.username)).size).toBe(2);
    };
    const first = await ok(env, ['demo']);
    await check(first);
    const before = await fingerprint();
    const second = await ok(env, ['demo']);
    await check(second);
    expect(second.developerId).not.toBe(first.developerId);
    expect(second.secretKey).not.toBe(first.secretKey);
    expect(second.users.map((u: any) => u.walletId)).toEqual(first.users.map((u: any) => u.walletId));
    // Each run prints fresh PINs, also for the users it found (an earlier PIN is shown only once).
    expect(second.users.map((u: any) => u.pin)).not.toEqual(first.users.map((u: any) => u.pin));
    const after = await fingerprint();
    expect(after).toEqual({ ...before, developers: before.developers + 1, keys: before.keys + 1 });
    // The first demo key still works too.
    expect((await http(app.baseUrl, `/api/v1/account/${first.users[1].username}`, { token: first.secretKey })).status).toBe(200);
  });

  test('migrate → {migrated: [...]} (already applied: nothing pending)', async () => {
    const out = await ok(env, ['migrate']);
    expect(out.migrated).toEqual(expect.arrayContaining(['Migration20261122000000_initial']));
  });

  test('help prints the usage with every command (the executable, exit 0)', async () => {
    const r = await spawnCli(['--help'], spawnEnv);
    expect(r.code).toBe(0);
    for (const c of ['developer:create', 'key:issue', 'key:revoke', 'user:create', 'wallet:status', 'wallet:topup', 'user:token', 'demo']) {
      expect(r.stdout).toContain(c);
    }
  });

  describe('bad input: message on stderr, exit 2, nothing written', () => {
    let taken: { username: string; phone: string; walletId: string };
    let developerId: string;
    beforeAll(async () => {
      const u = await factories(app).user({ username: 'taken_name', phone: '0933000001', balance: 20 });
      taken = { username: u.username, phone: u.phone, walletId: u.walletId };
      developerId = (await app.gateway.services.developers.create(app.db.sql, 'Bad Input Shop')).id;
    });

    type Case = [name: string, args: () => string[], message: RegExp];
    const groups: Array<[string, Case[]]> = [
      [
        'usage (no command, unknown command, unknown flag, positional argument)',
        [
          ['no command', () => [], /a command is required[\s\S]*Usage: wallet-gateway/],
          ['an unknown command', () => ['frobnicate', '--name', 'x'], /Unknown command "frobnicate"/],
          ['an unknown flag', () => ['developer:create', '--name', 'Flagged', '--colour', 'red'], /Unknown option '--colour'/],
          ['a positional argument', () => ['developer:create', '--name', 'Positional', 'extra'], /positional argument/i],
        ],
      ],
      [
        'developer:create',
        [
          ['developer:create without --name', () => ['developer:create'], /--name is required/],
          ['developer:create with --name and no value', () => ['developer:create', '--name'], /argument missing/],
          ['developer:create with an empty --name', () => ['developer:create', '--name', '   '], /--name is required/],
          ['developer:create with a 101-character name', () => ['developer:create', '--name', 'x'.repeat(101)], /name must be 1-100 characters/],
        ],
      ],
      [
        'key:issue',
        [
          ['key:issue for an unknown developer', () => ['key:issue', '--developer', randomUUID()], /Developer not found/],
          ['key:issue with a developer id that is not a uuid', () => ['key:issue', '--developer', 'nope'], /Developer not found/],
          ['key:issue without --developer', () => ['key:issue'], /--developer is required/],
          ['key:issue with an unknown flag', () => ['key:issue', '--developer', developerId, '--live'], /Unknown option '--live'/],
        ],
      ],
      [
        'key:revoke',
        [
          ['key:revoke of an unknown key', () => ['key:revoke', '--key', randomUUID()], /Secret key not found/],
          ['key:revoke with a key id that is not a uuid', () => ['key:revoke', '--key', 'sk_test_abc'], /Secret key not found/],
        ],
      ],
      [
        'user:create',
        [
          ['user:create with a username starting with 9', () => ['user:create', '--username', '9lives', '--phone', '0944000001'], /must not start with 8, 9, 08 or 09/],
          ['user:create with a username starting with 08', () => ['user:create', '--username', '08user', '--phone', '0944000001'], /must not start with 8, 9, 08 or 09/],
          ['user:create with a too-short username', () => ['user:create', '--username', 'ab', '--phone', '0944000001'], /username must be 3-32 characters/],
          ['user:create with a username of other characters', () => ['user:create', '--username', 'bad-name!', '--phone', '0944000001'], /username must be 3-32 characters/],
          ['user:create with a phone with non-digits', () => ['user:create', '--username', 'phoneless', '--phone', '0944-000-001'], /phone must contain digits only/],
          ['user:create with a too-short phone', () => ['user:create', '--username', 'phoneless', '--phone', '0123'], /phone must have 6 to 15 digits/],
          ['user:create without --phone', () => ['user:create', '--username', 'phoneless'], /--phone is required/],
          ['user:create without --username', () => ['user:create', '--phone', '0944000001'], /--username is required/],
          ['user:create with --balance abc', () => ['user:create', '--username', 'fundless', '--phone', '0944000001', '--balance', 'abc'], /--balance must be a positive amount/],
          ['user:create with --balance of 3 decimals', () => ['user:create', '--username', 'fundless', '--phone', '0944000001', '--balance', '1.999'], /--balance must be a positive amount with at most 2 decimals/],
          ['user:create with a negative --balance', () => ['user:create', '--username', 'fundless', '--phone', '0944000001', '--balance=-5'], /--balance must be a positive amount/],
          ['user:create with a bad --currency', () => ['user:create', '--username', 'fundless', '--phone', '0944000001', '--currency', 'EURO'], /currency must be an ISO 4217 code/],
          ['user:create with a taken username (other case)', () => ['user:create', '--username', taken.username.toUpperCase(), '--phone', '0944000001'], /Username is taken/],
          ['user:create with a taken phone (other form)', () => ['user:create', '--username', 'phone_twin', '--phone', taken.phone.replace(/^0/, '')], /Phone number is taken/],
        ],
      ],
      [
        'wallet:status',
        [
          ['wallet:status with a bad status', () => ['wallet:status', '--wallet', taken.walletId, '--status', 'FROZEN'], /--status must be ACTIVE, SUSPENDED or CLOSED/],
          ['wallet:status of an unknown wallet', () => ['wallet:status', '--wallet', 'wlt_doesnotexist000000000', '--status', 'CLOSED'], /Wallet not found/],
          ['wallet:status without --wallet', () => ['wallet:status', '--status', 'CLOSED'], /--wallet is required/],
          ['wallet:status with an unknown flag', () => ['wallet:status', '--wallet', taken.walletId, '--status', 'CLOSED', '--force'], /Unknown option '--force'/],
        ],
      ],
      [
        'wallet:topup',
        [
          ['wallet:topup with --amount 0', () => ['wallet:topup', '--wallet', taken.walletId, '--amount', '0'], /at least 0.01/],
          ['wallet:topup with --amount abc', () => ['wallet:topup', '--wallet', taken.walletId, '--amount', 'abc'], /--amount must be a positive amount/],
          ['wallet:topup over MAX_AMOUNT', () => ['wallet:topup', '--wallet', taken.walletId, '--amount', '1000000.01'], /at most/],
          ['wallet:topup of an unknown wallet', () => ['wallet:topup', '--wallet', 'wlt_doesnotexist000000000', '--amount', '5'], /Wallet not found/],
          ['wallet:topup with a positional argument', () => ['wallet:topup', '--wallet', taken.walletId, '--amount', '5', 'now'], /positional argument/i],
        ],
      ],
      [
        'user:token',
        [
          ['user:token of an unknown user', () => ['user:token', '--username', 'nobody_here'], /User not found/],
        ],
      ],
    ];

    test('the executable exits 2 with the message on stderr and nothing on stdout', async () => {
      const before = await fingerprint();
      await fails(spawnEnv, ['wallet:topup', '--wallet', taken.walletId, '--amount', 'abc'], /--amount must be a positive amount/, spawnCli);
      await fails(spawnEnv, ['frobnicate'], /Unknown command "frobnicate"/, spawnCli);
      expect(await fingerprint()).toEqual(before);
    });

    // The cases of a group run side by side; the database must be the same afterwards, and
    // every case must have failed with its own message.
    test.each(groups)('%s', async (_group, cases) => {
      const before = await fingerprint();
      const problems: string[] = [];
      const queue = [...cases];
      const worker = async () => {
        for (let c = queue.shift(); c; c = queue.shift()) {
          const [name, args, message] = c;
          try {
            await fails(env, args(), message);
          } catch (err) {
            problems.push(`${name}: ${(err as Error).message}`);
          }
        }
      };
      await Promise.all([1, 2, 3, 4].map(worker));
      expect(problems).toEqual([]);
      expect(await fingerprint()).toEqual(before);
    });

    test('the failed calls left the developer without keys and the taken user unchanged', async () => {
      expect(await sql('select count(*)::int as n from secret_keys where developer_id = ?', [developerId])).toEqual([{ n: 0 }]);
      expect(await sql("select count(*)::int as n from developers where name in ('Flagged', 'Positional')")).toEqual([{ n: 0 }]);
      expect(await sql('select status, balance::text as balance from wallets where id = ?', [taken.walletId])).toEqual([
        { status: 'ACTIVE', balance: '20.00' },
      ]);
    });
  });
});
