/**
 * Secret-key authentication of the developer REST door (SPEC §3, §4): every way a key can be
 * wrong answers 401 with the Error body, revocation reaches every instance (within 5 s: revocation-bound.test.ts), the
 * database keeps only the SHA-256 of a key, and no credential ever reaches the logs.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, decodeJwt } from 'jose';
import { factories, gql, http, startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import type { TestDatabase } from '../helpers/db.js';
import { until } from '../helpers/expect.js';
import { issueSecretKey } from '../../src/auth/secret-keys.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';
import { sleep } from '../helpers/expect.js';

type App = TestApp & { database: TestDatabase };

const ADMIN_TOKEN = 'test-admin-token-0123456789';
const KEY_SIGNING_SECRET = testConfig().keySigningSecret;
/**
 * How long a poll waits for a revoked key's refusal before failing: a deadline against a hang,
 * well above the cache TTL, not a measurement. The 5 s revocation bound itself is proven on an
 * injected clock (revocation-bound.test.ts: a verdict is believed at most KEY_CACHE_TTL_MS ≤ 4 s).
 */
const REFUSAL_DEADLINE_MS = 30_000;
const POLL_MS = 100;

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const b64url = (s: string): string => Buffer.from(s, 'utf8').toString('base64url');
const fromB64url = (s: string): string => Buffer.from(s, 'base64url').toString('utf8');

/** Every credential this file sends; the log test checks none of them was written anywhere. */
const credentials = new Set<string>();
const remember = <T extends string>(s: T): T => {
  credentials.add(s);
  return s;
};

let app: App;
let dev: { developerId: string; secretKey: string; keyId: string };
let user: { username: string; walletId: string };

beforeAll(async () => {
  app = await startTestApp({ env: { KEY_CACHE_TTL_MS: '200', LOG_LEVEL: 'trace' } });
  const f = factories(app);
  dev = await f.developer('Auth Merchant');
  remember(dev.secretKey);
  user = await f.user({ balance: 100 });
});

afterAll(async () => {
  await app?.close();
});

/** The two REST calls every rejection is checked on; `headers` carries the Authorization to test. */
const calls = {
  account: (baseUrl: string, headers: Record<string, string>) =>
    http(baseUrl, `/api/v1/account/${user.username}`, { headers }),
  requestPayment: (baseUrl: string, headers: Record<string, string>) =>
    http(baseUrl, '/api/v1/wallet/request-payment', {
      headers,
      body: { walletId: user.walletId, amount: 1.5, description: 'Auth test order', merchantName: 'Auth Merchant' },
    }),
};

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** Asserts both REST calls answer exactly 401 `{statusCode, message}` for these headers. */
async function expectRefused(headers: Record<string, string>, message = 'Invalid secret key', baseUrl = app.baseUrl) {
  for (const [name, call] of Object.entries(calls)) {
    const res = await call(baseUrl, headers);
    expect({ call: name, status: res.status, body: res.body }).toEqual({ call: name, status: 401, body: { statusCode: 401, message } });
  }
}

/** A side-effect-free authenticated call: 404 for an unknown request when the key is accepted, 401 when refused. */
async function probe(baseUrl: string, key: string): Promise<number> {
  const res = await http(baseUrl, `/api/v1/wallet/payment-request/${randomUUID()}`, { token: key });
  if (res.status === 401) expect(res.body).toEqual({ statusCode: 401, message: 'Invalid secret key' });
  else expect(res.status).toBe(404);
  return res.status;
}

/**
 * Polls every 100 ms until `key` is refused on `baseUrl` (at the latest once that instance's
 * cached verdict has aged past its KEY_CACHE_TTL_MS); fails after REFUSAL_DEADLINE_MS.
 */
async function untilRefused(baseUrl: string, key: string): Promise<void> {
  await until(async () => (await probe(baseUrl, key)) === 401, REFUSAL_DEADLINE_MS, `the revoked key refused on ${baseUrl}`, POLL_MS);
}

/** Splits `sk_test_<header>.<payload>.<signature>`. */
function partsOf(secretKey: string): { prefix: string; header: string; payload: string; signature: string } {
  const m = /^(sk_(?:test|live)_)([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(secretKey);
  if (!m) throw new Error('not a secret key');
  return { prefix: m[1]!, header: m[2]!, payload: m[3]!, signature: m[4]! };
}

/** Changes the character at `index` to a different base64url character. */
function flipChar(s: string, index: number): string {
  const c = s[index]!;
  return s.slice(0, index) + (c === 'A' ? 'B' : 'A') + s.slice(index + 1);
}

async function newKey(target: App = app): Promise<{ keyId: string; secretKey: string }> {
  const key = await issueSecretKey(target.db.sql, target.config, dev.developerId);
  remember(key.secretKey);
  return key;
}

describe('a valid key', () => {
  test('is accepted on both REST calls (positive control)', async () => {
    const account = await calls.account(app.baseUrl, bearer(dev.secretKey));
    expect(account.status).toBe(200);
    expect(account.body).toEqual({ walletId: user.walletId });
    const pay = await calls.requestPayment(app.baseUrl, bearer(dev.secretKey));
    expect(pay.status).toBe(200);
    expect(pay.body).toMatchObject({ success: true, status: 'PENDING' });
  });

  test('has the documented shape: sk_test_ + an HS256 JWT naming the key id and the developer', () => {
    const { prefix, header, payload } = partsOf(dev.secretKey);
    expect(prefix).toBe('sk_test_');
    const jwt = dev.secretKey.slice(prefix.length);
    expect(decodeProtectedHeader(jwt)).toMatchObject({ alg: 'HS256', kid: dev.keyId });
    expect(decodeJwt(jwt)).toMatchObject({ dev: dev.developerId });
    expect(JSON.parse(fromB64url(header)).kid).toBe(dev.keyId);
    expect(JSON.parse(fromB64url(payload)).dev).toBe(dev.developerId);
  });

  test('the auth scheme is case-insensitive (RFC 7235)', async () => {
    const res = await calls.account(app.baseUrl, { authorization: `bearer ${dev.secretKey}` });
    expect(res.status).toBe(200);
  });
});

describe('401 without a usable key', () => {
  test('no Authorization header → Missing bearer token', async () => {
    await expectRefused({}, 'Missing bearer token');
  });

  test('an empty Authorization header → Missing bearer token', async () => {
    await expectRefused({ authorization: '' }, 'Missing bearer token');
  });

  test('Authorization: Basic … → Invalid secret key', async () => {
    await expectRefused({ authorization: `Basic ${remember(Buffer.from(`merchant:${randomBytes(8).toString('hex')}`).toString('base64'))}` });
  });

  test('Bearer with no token → Invalid secret key', async () => {
    await expectRefused({ authorization: 'Bearer' });
    await expectRefused({ authorization: 'Bearer    ' });
  });

  test('garbage tokens → Invalid secret key', async () => {
    for (const token of [
      `garbage-${randomBytes(6).toString('hex')}`,
      'sk_test_',
      `sk_test_${randomBytes(6).toString('hex')}`,
      `sk_test_${randomBytes(4).toString('hex')}.${randomBytes(4).toString('hex')}.${randomBytes(4).toString('hex')}`,
      `sk_${partsOf(dev.secretKey).header}.${partsOf(dev.secretKey).payload}.${partsOf(dev.secretKey).signature}`,
      `${dev.secretKey.slice('sk_test_'.length)}`,
    ]) {
      await expectRefused(bearer(remember(token)));
    }
    await expectRefused({ authorization: `Bearer ${remember(`two ${randomBytes(4).toString('hex')}`)}` });
  });

  test('the admin token and a user access token are not secret keys', async () => {
    await expectRefused(bearer(ADMIN_TOKEN));
    await expectRefused(bearer(remember(await mintUserToken(app.config, randomUUID()))));
  });
});

describe('401 for a forged or altered key', () => {
  test('one character of the signature changed', async () => {
    const { signature } = partsOf(dev.secretKey);
    const at = dev.secretKey.length - signature.length + Math.floor(signature.length / 2);
    await expectRefused(bearer(remember(flipChar(dev.secretKey, at))));
  });

  test('the last character changed (may decode to the same signature bytes; the hash still differs)', async () => {
    await expectRefused(bearer(remember(flipChar(dev.secretKey, dev.secretKey.length - 1))));
  });

  test('the payload altered and re-encoded without re-signing', async () => {
    const { prefix, header, payload, signature } = partsOf(dev.secretKey);
    const other = await factories(app).developer('Victim Merchant');
    remember(other.secretKey);
    const claims = JSON.parse(fromB64url(payload));
    const altered = b64url(JSON.stringify({ ...claims, dev: other.developerId }));
    expect(altered).not.toBe(payload);
    await expectRefused(bearer(remember(`${prefix}${header}.${altered}.${signature}`)));
    // Re-encoding the same claims with different JSON whitespace also breaks the signature.
    const reformatted = b64url(JSON.stringify(claims, null, 1));
    await expectRefused(bearer(remember(`${prefix}${header}.${reformatted}.${signature}`)));
  });

  test('the header altered (kid of another key) without re-signing', async () => {
    const other = await newKey();
    const { prefix, payload, signature } = partsOf(dev.secretKey);
    await expectRefused(bearer(remember(`${prefix}${partsOf(other.secretKey).header}.${payload}.${signature}`)));
  });

  test('the same claims signed with another secret (jose SignJWT)', async () => {
    const jwt = await new SignJWT({ dev: dev.developerId, env: 'test' })
      .setProtectedHeader({ alg: 'HS256', kid: dev.keyId, typ: 'JWT' })
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(new TextEncoder().encode('another-signing-secret-0123456789abcdef'));
    await expectRefused(bearer(remember(`sk_test_${jwt}`)));
  });

  test('an unsigned token (alg none) naming a real key', async () => {
    const header = b64url(JSON.stringify({ alg: 'none', kid: dev.keyId, typ: 'JWT' }));
    const payload = b64url(JSON.stringify({ dev: dev.developerId, env: 'test', iat: Math.floor(Date.now() / 1000) }));
    await expectRefused(bearer(remember(`sk_test_${header}.${payload}.`)));
    await expectRefused(bearer(remember(`sk_test_${header}.${payload}.${partsOf(dev.secretKey).signature}`)));
  });

  test('a sk_live_ key on the development gateway: the same JWT with the prefix swapped', async () => {
    await expectRefused(bearer(remember(dev.secretKey.replace(/^sk_test_/, 'sk_live_'))));
  });

  test('a genuine sk_live_ key (issued for production on the same database) on the development gateway', async () => {
    const live = await issueSecretKey(app.db.sql, testConfig({ APP_ENV: 'production' }), dev.developerId);
    expect(live.secretKey.startsWith('sk_live_')).toBe(true);
    await expectRefused(bearer(remember(live.secretKey)));
    // Swapping its prefix does not help either: the environment is also a signed claim.
    await expectRefused(bearer(remember(live.secretKey.replace(/^sk_live_/, 'sk_test_'))));
  });

  test('a correctly signed JWT whose kid is unknown', async () => {
    const sign = (kid: string | undefined) => {
      const jwt = new SignJWT({ dev: dev.developerId, env: 'test' })
        .setProtectedHeader(kid === undefined ? { alg: 'HS256', typ: 'JWT' } : { alg: 'HS256', kid, typ: 'JWT' })
        .setIssuedAt()
        .setJti(randomUUID());
      return jwt.sign(new TextEncoder().encode(KEY_SIGNING_SECRET));
    };
    await expectRefused(bearer(remember(`sk_test_${await sign(randomUUID())}`)));
    await expectRefused(bearer(remember(`sk_test_${await sign('not-a-uuid')}`)));
    await expectRefused(bearer(remember(`sk_test_${await sign(undefined)}`)));
  });

  test('a correctly signed JWT reusing a real kid but not the issued key (hash mismatch)', async () => {
    const jwt = await new SignJWT({ dev: dev.developerId, env: 'test' })
      .setProtectedHeader({ alg: 'HS256', kid: dev.keyId, typ: 'JWT' })
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(new TextEncoder().encode(KEY_SIGNING_SECRET));
    await expectRefused(bearer(remember(`sk_test_${jwt}`)));
  });
});

describe('storage', () => {
  test('the database keeps the SHA-256 of a key issued through the admin API, never the key', async () => {
    const res = await gql(
      app.baseUrl,
      'mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId secretKey } }',
      { d: dev.developerId },
      ADMIN_TOKEN,
    );
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const { keyId, secretKey } = res.body.data.issueSecretKey as { keyId: string; secretKey: string };
    remember(secretKey);
    const { header, payload, signature } = partsOf(secretKey);

    const rows = await app.db.orm.em.fork().execute<Array<Record<string, unknown>>>('select * from secret_keys where id = ?', [keyId]);
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.key_hash).toBe(sha256(secretKey));
    expect(row.developer_id).toBe(dev.developerId);
    expect(row.environment).toBe('test');
    expect(row.revoked_at).toBeNull();
    for (const [column, value] of Object.entries(row)) {
      const text = value instanceof Date ? value.toISOString() : String(value);
      for (const part of [secretKey, secretKey.slice('sk_test_'.length), header, payload, signature]) {
        expect({ column, containsKeyMaterial: text.includes(part) }).toEqual({ column, containsKeyMaterial: false });
      }
    }
    // Nowhere else in the database either.
    const dump = await app.db.orm.em
      .fork()
      .execute<Array<{ t: string }>>(
        `select string_agg(row_to_json(x)::text, ' ') as t from (
           select * from secret_keys) x
         union all select string_agg(row_to_json(d)::text, ' ') from developers d`,
      );
    for (const { t } of dump) {
      expect(t ?? '').not.toContain(payload);
      expect(t ?? '').not.toContain(signature);
    }
    // And the key works.
    expect(await probe(app.baseUrl, secretKey)).toBe(404);
  });
});

describe('revocation', () => {
  test('a key revoked through the admin GraphQL API is refused once the cache lets go (KEY_CACHE_TTL_MS=200)', async () => {
    const key = await newKey();
    expect(await probe(app.baseUrl, key.secretKey)).toBe(404); // cached now
    const res = await gql(app.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId revokedAt } }', { k: key.keyId }, ADMIN_TOKEN);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.revokeSecretKey.keyId).toBe(key.keyId);
    await untilRefused(app.baseUrl, key.secretKey);
    // It stays refused, on every route, also once the cache has read the row again.
    await sleep(app.config.keyCacheTtlMs + 100);
    await expectRefused(bearer(key.secretKey));
    const row = await app.db.orm.em.fork().execute<Array<{ revoked_at: Date | null }>>('select revoked_at from secret_keys where id = ?', [key.keyId]);
    expect(row[0]!.revoked_at).not.toBeNull();
  });

  test('revoking one key leaves the developer’s other keys working', async () => {
    expect(await probe(app.baseUrl, dev.secretKey)).toBe(404);
  });

  test('revoking an unknown key is a NOT_FOUND error, not a crash', async () => {
    const res = await gql(app.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: randomUUID() }, ADMIN_TOKEN);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const bad = await gql(app.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: 'not-a-uuid' }, ADMIN_TOKEN);
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  describe('across two gateway instances on one database', () => {
    let second: App;
    beforeAll(async () => {
      // The second instance keeps the default key cache TTL.
      second = await startTestApp({ database: app.database, env: { LOG_LEVEL: 'trace' } });
      expect(second.config.keyCacheTtlMs).toBeGreaterThan(200);
    });
    afterAll(async () => {
      if (second) {
        for (const line of second.logs) app.logs.push(line); // checked by the log test below
        await second.close();
      }
    });

    test('a key revoked through one instance is refused by the other once its cached verdict expires', async () => {
      const key = await newKey();
      expect(await probe(app.baseUrl, key.secretKey)).toBe(404);
      expect(await probe(second.baseUrl, key.secretKey)).toBe(404); // both have it cached
      const res = await gql(second.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: key.keyId }, ADMIN_TOKEN);
      expect(res.body.errors).toBeUndefined();
      expect(await probe(second.baseUrl, key.secretKey)).toBe(401); // the revoking instance forgets at once
      await untilRefused(app.baseUrl, key.secretKey);
    });

    test('a key revoked the other way round (instance 1 revokes, instance 2 with the default TTL refuses)', async () => {
      const key = await newKey();
      expect(await probe(second.baseUrl, key.secretKey)).toBe(404);
      const res = await gql(app.baseUrl, 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: key.keyId }, ADMIN_TOKEN);
      expect(res.body.errors).toBeUndefined();
      await untilRefused(second.baseUrl, key.secretKey);
    });

    test('a key revoked directly in the database is refused by both instances once their cached verdicts expire', async () => {
      const key = await newKey();
      expect(await probe(app.baseUrl, key.secretKey)).toBe(404);
      expect(await probe(second.baseUrl, key.secretKey)).toBe(404);
      await app.db.orm.em.fork().execute('update secret_keys set revoked_at = now() where id = ?', [key.keyId]);
      await Promise.all([untilRefused(app.baseUrl, key.secretKey), untilRefused(second.baseUrl, key.secretKey)]);
    });
  });
});

describe('a production gateway', () => {
  let prod: App;
  let prodDev: { developerId: string };
  let prodUser: { username: string; walletId: string };
  beforeAll(async () => {
    // testConfig's secrets are not the development defaults, so production starts.
    prod = await startTestApp({ env: { APP_ENV: 'production', LOG_LEVEL: 'trace' } });
    expect(prod.config.appEnv).toBe('production');
    expect(prod.config.devSecretsInUse).toEqual([]);
    prodDev = await prod.gateway.services.developers.create(prod.db.sql, 'Live Merchant').then((d) => ({ developerId: d.id }));
    prodUser = await factories(prod).user({ balance: 5 });
  });
  afterAll(async () => {
    if (prod) {
      for (const line of prod.logs) app.logs.push(line);
      await prod.close();
    }
  });

  const lookup = (key: string) => http(prod.baseUrl, `/api/v1/account/${prodUser.username}`, { token: key });

  test('accepts the sk_live_ keys it issued', async () => {
    const live = await issueSecretKey(prod.db.sql, prod.config, prodDev.developerId);
    remember(live.secretKey);
    expect(live.secretKey.startsWith('sk_live_')).toBe(true);
    const res = await lookup(live.secretKey);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ walletId: prodUser.walletId });
    const rows = await prod.db.orm.em.fork().execute<Array<{ environment: string }>>('select environment from secret_keys where id = ?', [live.keyId]);
    expect(rows[0]!.environment).toBe('live');
  });

  test('refuses sk_test_ keys, even ones stored in its database and signed with its secret', async () => {
    const testKey = await issueSecretKey(prod.db.sql, testConfig(), prodDev.developerId);
    remember(testKey.secretKey);
    expect(testKey.secretKey.startsWith('sk_test_')).toBe(true);
    for (const key of [testKey.secretKey, remember(testKey.secretKey.replace(/^sk_test_/, 'sk_live_'))]) {
      const res = await lookup(key);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ statusCode: 401, message: 'Invalid secret key' });
    }
  });

  test('refuses its own live key with the prefix swapped to sk_test_', async () => {
    const live = await issueSecretKey(prod.db.sql, prod.config, prodDev.developerId);
    remember(live.secretKey);
    const res = await lookup(remember(live.secretKey.replace(/^sk_live_/, 'sk_test_')));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ statusCode: 401, message: 'Invalid secret key' });
  });

  test('missing header still says Missing bearer token', async () => {
    const res = await http(prod.baseUrl, `/api/v1/account/${prodUser.username}`);
    expect(res).toMatchObject({ status: 401, body: { statusCode: 401, message: 'Missing bearer token' } });
  });
});

describe('logs', () => {
  test('hold no secret key, no JWT part and no Authorization header value', async () => {
    // A few more authenticated and rejected calls, over REST and GraphQL, with every kind of credential.
    const userToken = remember(await mintUserToken(app.config, randomUUID()));
    const basic = remember(Buffer.from(`merchant:${randomBytes(8).toString('hex')}`).toString('base64'));
    await calls.account(app.baseUrl, bearer(dev.secretKey));
    await calls.requestPayment(app.baseUrl, bearer(dev.secretKey));
    await calls.account(app.baseUrl, bearer(remember(flipChar(dev.secretKey, dev.secretKey.length - 10))));
    await calls.account(app.baseUrl, { authorization: `Basic ${basic}` });
    await gql(app.baseUrl, '{ __typename }', {}, ADMIN_TOKEN);
    await gql(app.baseUrl, '{ __typename }', {}, `${ADMIN_TOKEN}x`);
    await gql(app.baseUrl, '{ myPendingPaymentRequests { id } }', {}, userToken);
    await gql(app.baseUrl, '{ __typename }', {}, remember(flipChar(userToken, userToken.length - 10)));
    await gql(app.baseUrl, '{ __typename }', {}, dev.secretKey);

    const needles = new Set<string>([ADMIN_TOKEN]);
    for (const c of credentials) {
      needles.add(c);
      for (const part of c.replace(/^sk_(test|live)_/, '').split('.')) if (part.length >= 16) needles.add(part);
    }
    const logs = app.logs.join('\n');
    expect(app.logs.length).toBeGreaterThan(20);
    for (const line of app.logs) expect(() => JSON.parse(line)).not.toThrow();
    const leaked = [...needles].filter((n) => logs.includes(n));
    expect(leaked).toEqual([]);
    expect(logs).not.toMatch(/sk_(test|live)_[A-Za-z0-9_-]{8}/);
    expect(logs).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/); // no base64url JSON (JWT header/payload) at all
    expect(logs).not.toMatch(/Bearer [^\s"]/i);
    expect(logs).not.toMatch(/Basic [A-Za-z0-9+/=]{8}/);
    // The reason of a refusal is logged (never told to the caller).
    const reasons = new Set(app.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'secret key rejected').map((l) => l.reason));
    expect([...reasons]).toEqual(expect.arrayContaining(['bad_signature', 'unknown_key', 'hash_mismatch', 'revoked', 'wrong_environment']));
  });
});
