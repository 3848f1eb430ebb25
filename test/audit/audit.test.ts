/**
 * The audit log (issue 11 item 3): one row per admin mutation, with who, what (arguments without
 * secrets), the outcome and the request id, written in the mutation's own database transaction;
 * append-only in the database; read through `auditLog`.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  getNamedType,
  isEnumType,
  isInputObjectType,
  isNonNullType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLInputField,
  type GraphQLInputType,
} from 'graphql';
import { getSchema } from '../../src/schema.js';
import { factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { approve, balances, requestPayment } from '../helpers/payments.js';
import { redactArguments, REDACTED } from '../../src/audit/audit.service.js';

let app: TestApp;
let root: string;
let op: { operatorId: string; name: string; token: string };
const sql = <T = Record<string, any>>(query: string, params: unknown[] = []): Promise<T[]> => app.db.orm.em.fork().execute<T[]>(query, params);

/** A GraphQL call with a chosen X-Request-Id. */
const call = (query: string, variables: Record<string, unknown>, token: string | undefined, requestId: string) =>
  http(app.baseUrl, '/graphql', { body: { query, variables }, ...(token ? { token } : {}), headers: { 'x-request-id': requestId } });

/** The audit rows of one request id, oldest first. */
const rowsOf = (requestId: string) =>
  sql<{ actor: string; operator_id: string | null; operation: string; arguments: any; outcome: string; request_id: string }>(
    'select actor, operator_id, operation, arguments, outcome, request_id from audit_log where request_id = ? order by id',
    [requestId],
  );

const rid = (label: string): string => `${label}-${randomUUID()}`;

beforeAll(async () => {
  app = await startTestApp();
  root = app.config.adminToken;
  const res = await gql(app.baseUrl, 'mutation { createOperator(name: "Auditor Ann") { operatorId name token } }', {}, root);
  op = res.body.data.createOperator;
});
afterAll(async () => {
  await app.close();
});

test('a successful mutation writes one ok row: the operator, the operation, its arguments, the request id', async () => {
  const id = rid('ok');
  const res = await call('mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: 'Audited Shop' }, op.token, id);
  expect(res.body.data.createDeveloper.id).toBeDefined();
  expect(await rowsOf(id)).toEqual([
    { actor: 'Auditor Ann', operator_id: op.operatorId, operation: 'createDeveloper', arguments: { name: 'Audited Shop' }, outcome: 'ok', request_id: id },
  ]);
  // root is 'root', without an operator id; the creation of the operator itself is in the log too.
  const rootId = rid('root');
  await call('mutation { createDeveloper(name: "Root Shop") { id } }', {}, root, rootId);
  expect(await rowsOf(rootId)).toEqual([expect.objectContaining({ actor: 'root', operator_id: null, operation: 'createDeveloper', outcome: 'ok' })]);
  const created = await sql(`select actor, arguments from audit_log where operation = 'createOperator' and outcome = 'ok'`);
  expect(created).toContainEqual({ actor: 'root', arguments: { name: 'Auditor Ann' } });
});

test('a failed mutation writes one row with the error code the caller got, and changes nothing', async () => {
  const user = await factories(app).user({ balance: 5 });
  const nowhere = `wlt_${'x'.repeat(20)}`;
  const missingKey = randomUUID();
  const cases = [
    ['topUpWallet', 'mutation($w: String!) { topUpWallet(walletId: $w, amount: 1) { balance } }', { w: nowhere }, { walletId: nowhere, amount: 1 }, 'NOT_FOUND'],
    ['topUpWallet', 'mutation($w: String!) { topUpWallet(walletId: $w, amount: -3) { balance } }', { w: user.walletId }, { walletId: user.walletId, amount: -3 }, 'BAD_USER_INPUT'],
    ['revokeSecretKey', 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: missingKey }, { keyId: missingKey }, 'NOT_FOUND'],
    ['createOperator', 'mutation { createOperator(name: "root") { token } }', {}, { name: 'root' }, 'BAD_USER_INPUT'],
    ['createOperator', 'mutation { createOperator(name: "Auditor Ann") { token } }', {}, { name: 'Auditor Ann' }, 'CONFLICT'],
  ] as const;
  for (const [operation, query, variables, args, code] of cases) {
    const id = rid('fail');
    const res = await call(query, variables, op.token, id);
    expect(res.body.errors[0].extensions.code).toBe(code);
    expect(await rowsOf(id)).toEqual([
      { actor: 'Auditor Ann', operator_id: op.operatorId, operation, arguments: args, outcome: code, request_id: id },
    ]);
  }
  expect((await balances(app.db, user.walletId, randomUUID())).wallet).toBe(5);
  expect(await sql(`select 1 from operators where name = 'root'`)).toEqual([]);
});

test('every admin mutation is audited under its name (money, keys, accounts, operators)', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user({ balance: 50 });
  const pr = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 20);
  const tx = (await approve(app.baseUrl, user.token, pr)).body.data.approvePaymentRequest.transactionId;
  const steps: Array<[string, string, Record<string, unknown>]> = [
    ['createDeveloper', 'mutation { createDeveloper(name: "Every Shop") { id } }', {}],
    ['issueSecretKey', 'mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId } }', { d: dev.developerId }],
    ['revokeSecretKey', 'mutation($k: ID!) { revokeSecretKey(keyId: $k) { keyId } }', { k: dev.keyId }],
    ['createUser', 'mutation { createUser(input: { username: "every_one", phone: "0955000111" }) { userId } }', {}],
    ['topUpWallet', 'mutation($w: String!) { topUpWallet(walletId: $w, amount: 2) { balance } }', { w: user.walletId }],
    ['setWalletStatus', 'mutation($w: String!) { setWalletStatus(walletId: $w, status: SUSPENDED) { status } }', { w: user.walletId }],
    ['refundTransaction', 'mutation($id: ID!) { refundTransaction(id: $id) { id } }', { id: tx }],
    ['createOperator', 'mutation { createOperator(name: "Every Op") { operatorId } }', {}],
  ];
  for (const [operation, query, variables] of steps) {
    const id = rid(operation);
    const res = await call(query, variables, op.token, id);
    expect({ operation, errors: res.body.errors }).toEqual({ operation, errors: undefined });
    expect(await rowsOf(id)).toEqual([expect.objectContaining({ actor: 'Auditor Ann', operation, outcome: 'ok' })]);
  }
  const created = await sql<{ id: string }>(`select id from operators where name = 'Every Op'`);
  const id = rid('revokeOperator');
  await call('mutation($id: ID!) { revokeOperator(id: $id) { operatorId } }', { id: created[0]!.id }, op.token, id);
  expect(await rowsOf(id)).toEqual([expect.objectContaining({ operation: 'revokeOperator', arguments: { id: created[0]!.id }, outcome: 'ok' })]);
  // Queries are not audited.
  const q = rid('query');
  await call('{ developers { nodes { id } } }', {}, op.token, q);
  expect(await rowsOf(q)).toEqual([]);
});

/** A value of an input type for a probe call: required fields only, deliberately unremarkable. */
function probeValue(type: GraphQLInputType): unknown {
  const named = getNamedType(type);
  if (isEnumType(named)) return named.getValues()[0]!.value;
  if (isInputObjectType(named)) {
    const fields = Object.values(named.getFields()).filter((f: GraphQLInputField) => isNonNullType(f.type));
    return Object.fromEntries(fields.map((f) => [f.name, probeValue(f.type)]));
  }
  if (isScalarType(named)) {
    return ({ ID: randomUUID(), String: 'probe', Float: 0, Int: 0, Boolean: false, JSONObject: {} } as Record<string, unknown>)[named.name] ?? 'probe';
  }
  throw new Error(`no probe value for ${String(type)}`);
}

test('every mutation the schema has is either refused to root or audited (a new admin mutation cannot slip past the log)', async () => {
  const schema = await getSchema();
  const mutations = Object.values(schema.getMutationType()!.getFields());
  const audited: string[] = [];
  for (const field of mutations) {
    const required = field.args.filter((a: GraphQLArgument) => isNonNullType(a.type));
    const variables = Object.fromEntries(required.map((a) => [a.name, probeValue(a.type)]));
    const decl = required.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
    const args = required.map((a) => `${a.name}: $${a.name}`).join(', ');
    const returns = getNamedType(field.type);
    const selection = 'getFields' in returns ? ' { __typename }' : '';
    const query = `mutation${decl ? `(${decl})` : ''} { ${field.name}${args ? `(${args})` : ''}${selection} }`;
    const id = rid(`probe-${field.name}`);
    const res = await call(query, variables, root, id);
    const code = res.body.errors?.[0]?.extensions?.code;
    if (code === 'FORBIDDEN') {
      expect({ field: field.name, rows: await rowsOf(id) }).toEqual({ field: field.name, rows: [] });
      continue;
    }
    expect({ field: field.name, rows: await rowsOf(id) }).toEqual({
      field: field.name,
      rows: [expect.objectContaining({ actor: 'root', operation: field.name, outcome: code ?? 'ok' })],
    });
    audited.push(field.name);
  }
  // The admin mutations of today are among them (the probe reaches them all).
  expect(audited).toEqual(expect.arrayContaining(['createDeveloper', 'issueSecretKey', 'revokeSecretKey', 'createUser', 'topUpWallet', 'setWalletStatus', 'refundTransaction', 'createOperator', 'revokeOperator']));
});

test('arguments never carry secrets: issued keys and operator tokens are results, credential-like inputs are masked', async () => {
  const dev = await factories(app).developer();
  const id = rid('issue');
  const res = await call('mutation($d: ID!) { issueSecretKey(developerId: $d) { keyId secretKey } }', { d: dev.developerId }, op.token, id);
  const { keyId, secretKey } = res.body.data.issueSecretKey;
  expect(await rowsOf(id)).toEqual([expect.objectContaining({ operation: 'issueSecretKey', arguments: { developerId: dev.developerId } })]);
  const opRes = await call('mutation { createOperator(name: "Secretive") { token } }', {}, op.token, rid('op'));
  const token: string = opRes.body.data.createOperator.token;
  const everything = (await sql<{ t: string }>('select string_agg(row_to_json(a)::text, E\'\\n\') as t from audit_log a'))[0]!.t;
  for (const secret of [secretKey, secretKey.split('.')[2], token, token.slice(3), dev.secretKey, op.token, root]) {
    expect(everything).not.toContain(secret);
  }
  expect(keyId).toBeDefined();

  // Text jsonb cannot hold (a lone surrogate) is replaced, never a reason for the change to fail.
  const odd = rid('odd');
  const made = await call('mutation($n: String!) { createDeveloper(name: $n) { id } }', { n: 'Odd \ud800 Shop' }, op.token, odd);
  expect(made.body.errors).toBeUndefined();
  expect(await rowsOf(odd)).toEqual([expect.objectContaining({ operation: 'createDeveloper', arguments: { name: 'Odd \ufffd Shop' }, outcome: 'ok' })]);
  expect(everything).toContain(dev.developerId);

  // The rule itself: credential names are masked at any depth, ids stay, credential-looking values go too.
  expect(
    redactArguments({
      keyId: 'k1',
      developerId: 'd1',
      token: 'x',
      input: { password: 'p', newSecret: 's', apiKey: 'a', key: 'raw', nested: [{ accessToken: 't', name: 'n' }] },
      note: secretKey,
      other: token,
      jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl',
      amount: 12.5,
      when: new Date('2026-01-01T00:00:00Z'),
    }),
  ).toEqual({
    keyId: 'k1',
    developerId: 'd1',
    token: REDACTED,
    input: { password: REDACTED, newSecret: REDACTED, apiKey: REDACTED, key: REDACTED, nested: [{ accessToken: REDACTED, name: 'n' }] },
    note: REDACTED,
    other: REDACTED,
    jwt: REDACTED,
    amount: 12.5,
    when: '2026-01-01T00:00:00.000Z',
  });
});

test('the change and its ok row commit together: a failure at commit leaves neither (and records the failure)', async () => {
  // A fault injected in this test's own database: the transaction that writes the ok row of a
  // top-up of 13.13 fails at COMMIT, after the service's own transactional top-up has run in it.
  await sql(`create function audit_test_fail_commit() returns trigger language plpgsql as $$
    begin raise exception 'injected commit failure'; end; $$`);
  await sql(`create constraint trigger audit_test_fail_commit after insert on audit_log deferrable initially deferred
    for each row when (new.outcome = 'ok' and new.arguments->>'amount' = '13.13') execute function audit_test_fail_commit()`);
  const user = await factories(app).user({ balance: 10 });
  const ledgerBefore = await sql('select count(*)::int as n from ledger_entries where wallet_id = ?', [user.walletId]);

  const failed = rid('commit-fails');
  const res = await call('mutation($w: String!) { topUpWallet(walletId: $w, amount: 13.13) { balance } }', { w: user.walletId }, op.token, failed);
  expect(res.body.errors[0]).toMatchObject({ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  expect(JSON.stringify(res.body)).not.toContain('injected');
  expect((await balances(app.db, user.walletId, randomUUID())).wallet).toBe(10);
  expect(await sql('select count(*)::int as n from ledger_entries where wallet_id = ?', [user.walletId])).toEqual(ledgerBefore);
  expect(await rowsOf(failed)).toEqual([expect.objectContaining({ operation: 'topUpWallet', outcome: 'INTERNAL_SERVER_ERROR', arguments: { walletId: user.walletId, amount: 13.13 } })]);

  // The same operation without the fault: the change and its row are both there.
  const fine = rid('commit-ok');
  const ok = await call('mutation($w: String!) { topUpWallet(walletId: $w, amount: 13.14) { balance } }', { w: user.walletId }, op.token, fine);
  expect(ok.body.data.topUpWallet.balance).toBe(23.14);
  expect((await balances(app.db, user.walletId, randomUUID())).wallet).toBe(23.14);
  expect(await rowsOf(fine)).toEqual([expect.objectContaining({ operation: 'topUpWallet', outcome: 'ok' })]);
  // The connection went back to the pool in a usable state.
  expect((await call('mutation { createDeveloper(name: "After Fault") { name } }', {}, op.token, rid('after'))).body.data.createDeveloper.name).toBe('After Fault');
});

test('the database refuses UPDATE, DELETE and TRUNCATE of the audit log, from any connection', async () => {
  const [{ n }] = (await sql<{ n: number }>('select count(*)::int as n from audit_log')) as [{ n: number }];
  expect(n).toBeGreaterThan(0);
  await expect(sql(`update audit_log set outcome = 'ok'`)).rejects.toThrow(/append-only/);
  await expect(sql(`update audit_log set actor = 'someone else' where id = (select min(id) from audit_log)`)).rejects.toThrow(/append-only/);
  await expect(sql('delete from audit_log')).rejects.toThrow(/append-only/);
  await expect(sql('truncate audit_log')).rejects.toThrow(/append-only/);
  if (app.database.url) {
    const client = new pg.Client({ connectionString: app.database.url });
    await client.connect();
    try {
      await expect(client.query('delete from audit_log where true')).rejects.toThrow(/append-only/);
      await expect(client.query('truncate audit_log cascade')).rejects.toThrow(/append-only/);
    } finally {
      await client.end();
    }
  }
  expect(await sql('select count(*)::int as n from audit_log')).toEqual([{ n }]);
});

test('auditLog reads the log newest first, filtered by operator (name or id), operation and time, page by page', async () => {
  const pager = (await gql(app.baseUrl, 'mutation { createOperator(name: "Paging Pat") { operatorId token } }', {}, root)).body.data.createOperator;
  const from = new Date().toISOString();
  for (let i = 0; i < 5; i++) await gql(app.baseUrl, `mutation { createDeveloper(name: "Pat Shop ${i}") { id } }`, {}, pager.token);
  await gql(app.baseUrl, 'mutation { createDeveloper(name: "") { id } }', {}, pager.token); // a failure, also listed
  const Q = `query($f: AuditLogFilter, $first: Int, $a: String) { auditLog(filter: $f, first: $first, after: $a) {
    nodes { id at actor operatorId operation arguments outcome requestId } nextCursor } }`;
  const all = async (filter: Record<string, unknown>, first = 2) => {
    const nodes: any[] = [];
    let after: string | null = null;
    do {
      const res: any = await gql(app.baseUrl, Q, { f: filter, first, a: after }, op.token);
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data.auditLog.nodes.length).toBeLessThanOrEqual(first);
      nodes.push(...res.body.data.auditLog.nodes);
      after = res.body.data.auditLog.nextCursor;
    } while (after);
    return nodes;
  };
  const byName = await all({ operator: 'Paging Pat' });
  expect(byName).toHaveLength(6);
  expect(new Set(byName.map((n) => n.id)).size).toBe(6);
  expect(byName[0]).toMatchObject({ actor: 'Paging Pat', operatorId: pager.operatorId, operation: 'createDeveloper', arguments: { name: '' }, outcome: 'BAD_USER_INPUT' });
  expect(byName.slice(1).map((n) => n.arguments.name)).toEqual(['Pat Shop 4', 'Pat Shop 3', 'Pat Shop 2', 'Pat Shop 1', 'Pat Shop 0']);
  expect(byName.every((n) => typeof n.requestId === 'string' && n.requestId.length > 0)).toBe(true);
  expect(await all({ operator: pager.operatorId }, 200)).toEqual(byName);
  const created = await all({ operator: 'root', operation: 'createOperator' }, 200);
  expect(created.map((n) => n.arguments.name)).toContain('Paging Pat');
  expect(created.every((n) => n.actor === 'root' && n.operation === 'createOperator')).toBe(true);
  const since = await all({ from }, 200);
  expect(since.filter((n) => n.actor === 'Paging Pat')).toHaveLength(6);
  expect(since.some((n) => n.operation === 'createOperator' && n.arguments.name === 'Paging Pat')).toBe(false);
  expect(await all({ operator: 'Paging Pat', to: from })).toEqual([]);
  expect(await all({ operator: 'nobody at all' })).toEqual([]);

  for (const args of ['after: "zzz"', 'after: "WyIyMDI2LTAxLTAxIiwiOyJd"', 'first: 0', 'first: 201']) {
    const res = await gql(app.baseUrl, `{ auditLog(${args}) { nodes { id } } }`, {}, op.token);
    expect({ args, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ args, code: 'BAD_USER_INPUT' });
  }
});

test('auditLog refuses secret keys and user tokens (FORBIDDEN) and anonymous callers (UNAUTHENTICATED)', async () => {
  const f = factories(app);
  const dev = await f.developer();
  const user = await f.user();
  for (const [token, code] of [
    [dev.secretKey, 'FORBIDDEN'],
    [user.token, 'FORBIDDEN'],
    [undefined, 'UNAUTHENTICATED'],
  ] as const) {
    const res = await gql(app.baseUrl, '{ auditLog { nodes { id actor } } }', {}, token);
    expect(res.body.errors[0].extensions.code).toBe(code);
    expect(res.body.data).toBeNull();
  }
  // A refused admin mutation is not an admin call: no row (and nothing changed).
  const id = rid('refused');
  const res = await call('mutation { createDeveloper(name: "Sneaky") { id } }', {}, dev.secretKey, id);
  expect(res.body.errors[0].extensions.code).toBe('FORBIDDEN');
  expect(await rowsOf(id)).toEqual([]);
});
