// The one pino logger: JSON by default (production always), pretty for a person in development
// (one line a request), the same redaction either way: authorization headers, secret keys,
// webhook secrets, tokens, passwords and phone numbers never reach a line.
import { Writable } from 'node:stream';
import { createLogger, defaultLogFormat, REDACT_PATHS, type LogFormat } from '../../src/logger.js';
import { loadConfig } from '../../src/config.js';
import { factories, gql, http, startTestApp, PRODUCTION_RELYING_PARTY, type TestApp } from '../helpers/app.js';
import { API, REST_TEST_ENV } from '../helpers/rest.js';
import { TEST_CONSENT_KEY } from '../helpers/consent-keys.js';

/** A logger writing into an array of lines. */
function capture(format: LogFormat = 'json', level = 'trace') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { log: createLogger(level, sink, { format }), lines };
}

const SECRETS = {
  bearer: 'Bearer sk_test_eyJhbGciOiJIUzI1NiJ9.eyJrZXkiOiJrIn0.c2lnbmF0dXJlLXZhbHVl',
  cookie: 'session=cookie-value-123456',
  secretKey: 'sk_live_eyJhbGciOiJIUzI1NiJ9.payload.signature-abcdef',
  whsec: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=',
  operator: 'op_operator-token-0123456789',
  password: 'hunter2-correct-horse',
  phone: '0911223344',
};

/** Every shape in which the gateway (or a future line) may hold one of them. */
const SHAPES: Array<[string, Record<string, unknown>]> = [
  ['request headers', { req: { headers: { authorization: SECRETS.bearer, cookie: SECRETS.cookie, 'user-agent': 'curl/8' } } }],
  ['headers', { headers: { authorization: SECRETS.bearer } }],
  ['a bare authorization', { authorization: SECRETS.bearer }],
  ['graphql-ws connectionParams', { connectionParams: { authorization: SECRETS.bearer } }],
  ['an issued key', { secretKey: SECRETS.secretKey, keyId: 'key-1' }],
  ['a webhook endpoint', { endpoint: { id: 'we_1', secret: SECRETS.whsec }, secret: SECRETS.whsec, previousSecret: SECRETS.whsec }],
  ['tokens', { token: SECRETS.operator, adminToken: SECRETS.operator, userToken: SECRETS.bearer, accessToken: SECRETS.bearer }],
  ['a password', { password: SECRETS.password, user: { password: SECRETS.password } }],
  ['a phone', { phone: SECRETS.phone, user: { phone: SECRETS.phone, username: 'alice' } }],
  ['an operation input', { variables: { phone: SECRETS.phone, input: { phone: SECRETS.phone, username: 'bob' } }, arguments: { phone: SECRETS.phone } }],
  ['an account look-up', { identifier: SECRETS.phone, args: { identifier: SECRETS.phone } }],
];

describe('redaction', () => {
  test.each(SHAPES)('%s: the value is replaced with [redacted], the rest of the line is kept (JSON and pretty)', (_what, fields) => {
    for (const format of ['json', 'pretty'] as const) {
      const { log, lines } = capture(format);
      log.info(fields, 'something happened');
      expect(lines.length).toBeGreaterThan(0);
      const text = lines.join('\n');
      for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
      expect(text).not.toContain(SECRETS.phone.slice(1)); // nor the phone without its leading 0
      expect(text).toContain('[redacted]');
      expect(text).toContain('something happened');
    }
  });

  test('what is not sensitive stays readable', () => {
    const { log, lines } = capture();
    log.info({ user: { username: 'alice', phone: SECRETS.phone }, keyId: 'key-1', requestId: 'r-1' }, 'seen');
    expect(JSON.parse(lines[0]!)).toMatchObject({ user: { username: 'alice', phone: '[redacted]' }, keyId: 'key-1', requestId: 'r-1' });
  });

  test('the paths are explicit (no wildcards: pino checks those for free; `*.x` cost 8-30 µs a line)', () => {
    expect(REDACT_PATHS.some((p) => p.includes('*'))).toBe(false);
    for (const path of ['authorization', 'req.headers.authorization', 'connectionParams.authorization', 'secretKey', 'secret', 'phone', 'variables.input.phone']) {
      expect(REDACT_PATHS).toContain(path);
    }
  });
});

describe('the pretty format (development, for a person)', () => {
  test('a request is one line: time, level, method and route, status, duration, request id', () => {
    const { log, lines } = capture('pretty', 'info');
    log.info({ requestId: 'r-42', method: 'POST', route: 'POST /api/v1/wallet/request-payment', status: 200, durationMs: 3.14 }, 'request');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: POST \/api\/v1\/wallet\/request-payment 200 3\.14 ms {2}requestId=r-42$/);
  });

  test('other lines: the message, then key=value; an error adds its class, message and stack', () => {
    const { log, lines } = capture('pretty', 'info');
    log.info({ url: 'http://127.0.0.1:3000', env: 'development' }, 'wallet gateway listening');
    log.error({ err: new TypeError('it broke'), requestId: 'r-1' }, 'unexpected error');
    expect(lines[0]).toMatch(/INFO: wallet gateway listening {2}url=http:\/\/127\.0\.0\.1:3000 {2}env=development$/);
    expect(lines[1]).toMatch(/ERROR: unexpected error {2}requestId=r-1 {2}err="TypeError: it broke"$/);
    expect(lines[2]).toMatch(/^ {4}at /);
  });

  describe('a gateway started with LOG_FORMAT=pretty', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp({ env: { ...REST_TEST_ENV, LOG_FORMAT: 'pretty' } });
    });
    afterAll(async () => {
      await app.close();
    });

    test('writes one readable line per request (not JSON), with the route template, never the raw path', async () => {
      const f = factories(app);
      const dev = await f.developer();
      const user = await f.user();
      const before = app.logs.length;
      expect((await http(app.baseUrl, `${API}/account/${user.phone}`, { token: dev.secretKey })).status).toBe(200);
      expect((await http(app.baseUrl, '/healthz')).status).toBe(200);
      const written = app.logs.slice(before);
      expect(written).toHaveLength(2);
      expect(written[0]).toMatch(/INFO: GET \/api\/v1\/account\/:identifier 200 [\d.]+ ms {2}requestId=\S+$/);
      expect(written[1]).toMatch(/INFO: GET \/healthz 200 [\d.]+ ms {2}requestId=\S+$/);
      for (const line of written) expect(() => JSON.parse(line)).toThrow();
      expect(written.join('\n')).not.toContain(user.phone.slice(1));
    });
  });
});

describe('which format', () => {
  test('development on a terminal is pretty; piped, collected or production output is JSON', () => {
    expect(defaultLogFormat('development', true)).toBe('pretty');
    expect(defaultLogFormat('development', false)).toBe('json');
    expect(defaultLogFormat('development', undefined)).toBe('json');
    expect(defaultLogFormat('production', true)).toBe('json');
  });

  test('LOG_FORMAT chooses; production refuses pretty; anything else is refused with the name', () => {
    const env = { KEY_SIGNING_SECRET: 'k'.repeat(32), USER_TOKEN_SECRET: 'u'.repeat(32), ADMIN_TOKEN: 'a'.repeat(32), CONSENT_SIGNING_KEY: TEST_CONSENT_KEY, PIN_PEPPER: 'a1'.repeat(32), ...PRODUCTION_RELYING_PARTY };
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(loadConfig({ APP_ENV: 'production', ...env, LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadConfig({ APP_ENV: 'production', ...env, LOG_FORMAT: 'pretty' })).toThrow(/LOG_FORMAT: production logs are JSON/);
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT/);
  });
});

describe('phone numbers through the real doors (LOG_LEVEL=trace: every line the gateway can write)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { ...REST_TEST_ENV, LOG_LEVEL: 'trace' } });
  });
  afterAll(async () => {
    await app.close();
  });

  test('creating a user, looking accounts up by phone (found, unknown, malformed) over REST and GraphQL: no phone in any line', async () => {
    const phone = `0944${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
    const unknown = `0955${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`;
    const created = await gql(
      app.baseUrl,
      'mutation($i: CreateUserInput!) { createUser(input: $i) { walletId } }',
      { i: { username: `ph_${Date.now().toString(36)}`, phone, balance: 1 } },
      app.config.adminToken,
    );
    expect(created.body.data.createUser.walletId).toMatch(/^wlt_/);
    const dev = await factories(app).developer();
    expect((await http(app.baseUrl, `${API}/account/${phone}`, { token: dev.secretKey })).status).toBe(200);
    expect((await http(app.baseUrl, `${API}/account/${unknown}`, { token: dev.secretKey })).status).toBe(404);
    expect((await http(app.baseUrl, `${API}/account/${phone}x`, { token: dev.secretKey })).status).toBe(400);
    const viaGraphql = await gql(app.baseUrl, 'query($p: String!) { walletId(identifier: $p) { walletId } }', { p: phone }, dev.secretKey);
    expect(viaGraphql.body.data.walletId.walletId).toBe(created.body.data.createUser.walletId);
    // A duplicate phone: a unique violation whose detail names the value (reduced to its shape).
    const duplicate = await gql(
      app.baseUrl,
      'mutation($i: CreateUserInput!) { createUser(input: $i) { walletId } }',
      { i: { username: `ph2_${Date.now().toString(36)}`, phone } },
      app.config.adminToken,
    );
    expect(duplicate.body.errors).toBeDefined();
    const log = app.logs.join('\n');
    expect(log).toContain('"msg":"request"');
    for (const p of [phone, unknown]) expect(log).not.toContain(p.slice(1));
  });

  test('with tracing off (no OTEL_* configured), lines carry no trace or span id', () => {
    expect(app.logs.length).toBeGreaterThan(0);
    expect(app.logs.some((l) => l.includes('trace_id') || l.includes('span_id'))).toBe(false);
  });
});
