/**
 * Operator identities (issue 11 item 2): named admin tokens issued by root (or the CLI, see
 * operators-cli.test.ts), shown once, stored as SHA-256, revocable everywhere (within 5 s: test/auth/revocation-bound.test.ts), and
 * accepted wherever the admin token is.
 */
import { createHash, randomUUID } from 'node:crypto';
import { factories, gql, http, startSecondInstance, startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/expect.js';

const OP_TOKEN = /^op_[A-Za-z0-9_-]{43}$/;
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

let app: TestApp;
let root: string;
const sql = <T = Record<string, any>>(query: string, params: unknown[] = []): Promise<T[]> => app.db.orm.em.fork().execute<T[]>(query, params);

const CREATE = 'mutation($n: String!) { createOperator(name: $n) { operatorId name token } }';
const REVOKE = 'mutation($id: ID!) { revokeOperator(id: $id) { operatorId revokedAt } }';
const WHOAMI = '{ currentOperator { id name } }';

async function createOperator(name: string): Promise<{ operatorId: string; name: string; token: string }> {
  const res = await gql(app.baseUrl, CREATE, { n: name }, root);
  expect(res.body.errors).toBeUndefined();
  return res.body.data.createOperator;
}

beforeAll(async () => {
  app = await startTestApp({ env: { KEY_CACHE_TTL_MS: '1000' } });
  root = app.config.adminToken;
});
afterAll(async () => {
  await app.close();
});

test('createOperator issues an op_ token shown once; only its SHA-256 is stored', async () => {
  const op = await createOperator('  Alice Support  ');
  expect(op.name).toBe('Alice Support');
  expect(op.token).toMatch(OP_TOKEN);
  const rows = await sql('select * from operators where id = ?', [op.operatorId]);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.token_hash).toBe(sha256(op.token));
  expect(rows[0]!.revoked_at).toBeNull();
  expect(JSON.stringify(rows)).not.toContain(op.token.slice(3));
  // Never shown again: the list has no token field at all, and its nodes carry no secret.
  const listed = await gql(app.baseUrl, '{ operators { nodes { id name createdAt revokedAt } } }', {}, root);
  expect(listed.body.data.operators.nodes).toContainEqual({ id: op.operatorId, name: 'Alice Support', createdAt: expect.any(String), revokedAt: null });
  expect(JSON.stringify(listed.body)).not.toContain(op.token);
  const asked = await gql(app.baseUrl, '{ operators { nodes { id token } } }', {}, root);
  expect(asked.body.errors[0].message).toMatch(/Cannot query field "token" on type "Operator"/);
});

test('one name for the operator\'s id: operatorId on currentOperator and operators as on createOperator and auditLog; id stays, deprecated', async () => {
  const op = await createOperator('Dana Names');
  const who = await gql(app.baseUrl, '{ currentOperator { operatorId id name } }', {}, op.token);
  expect(who.body.data.currentOperator).toEqual({ operatorId: op.operatorId, id: op.operatorId, name: 'Dana Names' });
  expect((await gql(app.baseUrl, '{ currentOperator { operatorId name } }', {}, root)).body.data.currentOperator).toEqual({ operatorId: null, name: 'root' });
  const listed = await gql(app.baseUrl, '{ operators(first: 200) { nodes { operatorId id } } }', {}, root);
  expect(listed.body.data.operators.nodes).toContainEqual({ operatorId: op.operatorId, id: op.operatorId });
  const audit = await gql(app.baseUrl, '{ auditLog(first: 5) { nodes { operatorId } } }', {}, op.token);
  expect(audit.body.errors).toBeUndefined();
  const fields = await gql(
    app.baseUrl,
    '{ c: __type(name: "CurrentOperator") { fields(includeDeprecated: true) { name isDeprecated } } o: __type(name: "Operator") { fields(includeDeprecated: true) { name isDeprecated } } }',
    {},
    root,
  );
  for (const type of [fields.body.data.c, fields.body.data.o]) {
    expect(type.fields).toEqual(expect.arrayContaining([{ name: 'operatorId', isDeprecated: false }, { name: 'id', isDeprecated: true }]));
  }
});

test('an operator token is an admin credential: queries and mutations run as that operator', async () => {
  const op = await createOperator('Bob Ops');
  expect((await gql(app.baseUrl, WHOAMI, {}, op.token)).body.data.currentOperator).toEqual({ id: op.operatorId, name: 'Bob Ops' });
  expect((await gql(app.baseUrl, WHOAMI, {}, root)).body.data.currentOperator).toEqual({ id: null, name: 'root' });
  const dev = await gql(app.baseUrl, 'mutation { createDeveloper(name: "Made By Bob") { id name } }', {}, op.token);
  expect(dev.body.data.createDeveloper.name).toBe('Made By Bob');
  const listed = await gql(app.baseUrl, '{ developers(first: 200) { nodes { id } } }', {}, op.token);
  expect(listed.body.data.developers.nodes.map((n: { id: string }) => n.id)).toContain(dev.body.data.createDeveloper.id);
  // An operator may issue further operators (it is an admin).
  const other = await gql(app.baseUrl, CREATE, { n: 'Made By Bob' }, op.token);
  expect(other.body.data.createOperator.token).toMatch(OP_TOKEN);
});

test('revokeOperator: refused at once on this instance and, once its cache lets go, on another; revoking again keeps the first time', async () => {
  const second = await startSecondInstance(app, { KEY_CACHE_TTL_MS: '4000' });
  try {
    const op = await createOperator('Carol Revoked');
    // Both instances have verified (and cached) the token.
    expect((await gql(app.baseUrl, WHOAMI, {}, op.token)).body.data.currentOperator.name).toBe('Carol Revoked');
    expect((await gql(second.baseUrl, WHOAMI, {}, op.token)).body.data.currentOperator.name).toBe('Carol Revoked');

    const revoked = await gql(app.baseUrl, REVOKE, { id: op.operatorId }, root);
    expect(revoked.body.data.revokeOperator.operatorId).toBe(op.operatorId);
    const here = await gql(app.baseUrl, WHOAMI, {}, op.token);
    expect(here.status).toBe(401);
    expect(here.body.errors[0]).toMatchObject({ message: 'Invalid admin token', extensions: { code: 'UNAUTHENTICATED' } });

    // The other instance still holds the row in its cache (≤ 4 s); it must let go: a poll with a
    // deadline against a hang, not a measurement (the 5 s bound is proven on an injected clock in
    // test/auth/revocation-bound.test.ts, for the cache both credential kinds share).
    let there = await gql(second.baseUrl, WHOAMI, {}, op.token);
    await until(
      async () => {
        there = await gql(second.baseUrl, WHOAMI, {}, op.token);
        return there.status === 401;
      },
      30_000,
      'the revoked operator token refused on the second instance',
      100,
    );
    expect(there.status).toBe(401);
    expect(there.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    // Mutations too, not only queries.
    const mutation = await gql(second.baseUrl, 'mutation { createDeveloper(name: "too late") { id } }', {}, op.token);
    expect(mutation.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');

    const again = await gql(app.baseUrl, REVOKE, { id: op.operatorId }, root);
    expect(again.body.data.revokeOperator.revokedAt).toBe(revoked.body.data.revokeOperator.revokedAt);
    const listed = await gql(app.baseUrl, '{ operators(first: 200) { nodes { id revokedAt } } }', {}, root);
    expect(listed.body.data.operators.nodes).toContainEqual({ id: op.operatorId, revokedAt: revoked.body.data.revokeOperator.revokedAt });
  } finally {
    await second.close();
  }
});

test('unknown, malformed and revoked operator tokens are refused without saying which', async () => {
  const unknown = `op_${Buffer.alloc(32, 7).toString('base64url')}`;
  for (const token of [unknown, 'op_short', `op_${'A'.repeat(44)}`]) {
    const res = await gql(app.baseUrl, WHOAMI, {}, token);
    expect(res.status).toBe(401);
    expect(res.body.errors[0]).toMatchObject({ message: 'Invalid admin token', extensions: { code: 'UNAUTHENTICATED' } });
  }
  // Operator tokens open the GraphQL door only: the REST door takes secret keys.
  const op = await createOperator('Rest Tourist');
  const user = await factories(app).user();
  const rest = await http(app.baseUrl, `/api/v1/account/${user.username}`, { token: op.token });
  expect(rest.status).toBe(401);
});

test('names: 1-100 characters, root and cli reserved, unique among active operators (reusable after revocation)', async () => {
  for (const [name, code] of [
    ['', 'BAD_USER_INPUT'],
    ['   ', 'BAD_USER_INPUT'],
    ['x'.repeat(101), 'BAD_USER_INPUT'],
    ['root', 'BAD_USER_INPUT'],
    [' CLI ', 'BAD_USER_INPUT'],
  ] as const) {
    const res = await gql(app.baseUrl, CREATE, { n: name }, root);
    expect({ name, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ name, code });
  }
  const first = await createOperator('Dana');
  const dup = await gql(app.baseUrl, CREATE, { n: 'dana' }, root);
  expect(dup.body.errors[0].extensions.code).toBe('CONFLICT');
  await gql(app.baseUrl, REVOKE, { id: first.operatorId }, root);
  const reused = await createOperator('Dana');
  expect(reused.operatorId).not.toBe(first.operatorId);
  expect(reused.token).not.toBe(first.token);
  expect((await gql(app.baseUrl, REVOKE, { id: randomUUID() }, root)).body.errors[0].extensions.code).toBe('NOT_FOUND');
  expect((await gql(app.baseUrl, REVOKE, { id: 'nope' }, root)).body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
});

test('operators pages with a cursor, newest first; bad cursors and sizes are BAD_USER_INPUT', async () => {
  const made = [];
  for (let i = 0; i < 3; i++) made.push((await createOperator(`Pager ${i}`)).operatorId);
  const seen: string[] = [];
  let after: string | null = null;
  do {
    const res: any = await gql(app.baseUrl, 'query($a: String) { operators(first: 2, after: $a) { nodes { id } nextCursor } }', { a: after }, root);
    expect(res.body.data.operators.nodes.length).toBeLessThanOrEqual(2);
    seen.push(...res.body.data.operators.nodes.map((n: { id: string }) => n.id));
    after = res.body.data.operators.nextCursor;
  } while (after);
  expect(new Set(seen).size).toBe(seen.length);
  expect(seen).toEqual(expect.arrayContaining(made));
  expect(seen.indexOf(made[2]!)).toBeLessThan(seen.indexOf(made[0]!));
  for (const args of ['after: "zzz"', 'first: 0', 'first: 201']) {
    const res = await gql(app.baseUrl, `{ operators(${args}) { nodes { id } } }`, {}, root);
    expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  }
});

test('no operator token ever reaches the logs', async () => {
  const op = await createOperator('Quiet Eve');
  await gql(app.baseUrl, WHOAMI, {}, op.token);
  await gql(app.baseUrl, REVOKE, { id: op.operatorId }, root);
  await gql(app.baseUrl, WHOAMI, {}, op.token); // refused: logged as a rejection, without the token
  const secret = op.token.slice(3);
  const leaked = app.logs.filter((line) => line.includes(secret));
  expect(leaked).toEqual([]);
  expect(app.logs.some((line) => line.includes('operator token rejected'))).toBe(true);
  const audit = await sql('select arguments::text as a from audit_log');
  expect(audit.filter((r) => String(r.a).includes(secret))).toEqual([]);
});

test('every operator field refuses secret keys and user tokens (FORBIDDEN) and anonymous callers (UNAUTHENTICATED)', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  const target = await createOperator('Target');
  const operations = [
    ['createOperator', CREATE, { n: 'Intruder' }],
    ['revokeOperator', REVOKE, { id: target.operatorId }],
    ['operators', '{ operators { nodes { id } } }', {}],
    ['currentOperator', WHOAMI, {}],
  ] as const;
  for (const [name, query, variables] of operations) {
    for (const [who, token, code] of [
      ['secret key', dev.secretKey, 'FORBIDDEN'],
      ['user token', user.token, 'FORBIDDEN'],
      ['anonymous', undefined, 'UNAUTHENTICATED'],
    ] as const) {
      const res = await gql(app.baseUrl, query, variables, token);
      expect({ name, who, code: res.body.errors?.[0]?.extensions?.code, data: res.body.data?.[name] ?? null }).toEqual({ name, who, code, data: null });
    }
  }
  // Nothing happened: the target still works, no intruder exists.
  expect((await gql(app.baseUrl, WHOAMI, {}, target.token)).body.data.currentOperator.name).toBe('Target');
  expect(await sql(`select 1 from operators where name = 'Intruder'`)).toEqual([]);
});
