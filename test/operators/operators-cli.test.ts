/**
 * The CLI side of operators and the audit log: `operator:create` / `operator:revoke` run the
 * same admin mutations as GraphQL (one code path), and every CLI command that changes data is
 * audited as actor 'cli', with one request id per CLI run.
 */
import { gql, startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { cliDatabaseEnv, runCli } from '../helpers/cli.js';

let database: TestDatabase;
let env: NodeJS.ProcessEnv;
let app: TestApp;
const sql = <T = Record<string, any>>(query: string, params: unknown[] = []): Promise<T[]> => app.db.orm.em.fork().execute<T[]>(query, params);

async function ok(args: string[]): Promise<any> {
  const r = await runCli(args, env);
  expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  database = await createTestDatabase();
  env = cliDatabaseEnv(database);
  app = await startTestApp({ database, env: { KEY_CACHE_TTL_MS: '200' } });
});
afterAll(async () => {
  await app?.close();
  await database?.close();
});

test('operator:create --name → {operatorId, token}: the token works on the gateway; operator:revoke ends it', async () => {
  const out = await ok(['operator:create', '--name', 'Cli Made']);
  expect(Object.keys(out).sort()).toEqual(['operatorId', 'token']);
  expect(out.token).toMatch(/^op_[A-Za-z0-9_-]{43}$/);
  const who = await gql(app.baseUrl, '{ currentOperator { id name } }', {}, out.token);
  expect(who.body.data.currentOperator).toEqual({ id: out.operatorId, name: 'Cli Made' });

  const revoked = await ok(['operator:revoke', '--operator', out.operatorId]);
  expect(revoked.operatorId).toBe(out.operatorId);
  const [row] = await sql('select revoked_at from operators where id = ?', [out.operatorId]);
  expect(row!.revoked_at).not.toBeNull();

  const rows = await sql<{ actor: string; operator_id: string | null; operation: string; arguments: unknown; outcome: string; request_id: string }>(
    `select actor, operator_id, operation, arguments, outcome, request_id from audit_log where operation in ('createOperator', 'revokeOperator') order by id`,
  );
  expect(rows).toEqual([
    { actor: 'cli', operator_id: null, operation: 'createOperator', arguments: { name: 'Cli Made' }, outcome: 'ok', request_id: expect.stringMatching(/^cli-/) },
    { actor: 'cli', operator_id: null, operation: 'revokeOperator', arguments: { id: out.operatorId }, outcome: 'ok', request_id: expect.stringMatching(/^cli-/) },
  ]);
  expect(rows[0]!.request_id).not.toBe(rows[1]!.request_id); // two runs, two request ids
  expect(JSON.stringify(rows)).not.toContain(out.token.slice(3));
});

test('data-changing commands are audited as cli, failures with their code; one request id per run', async () => {
  const before = (await sql<{ n: number }>('select count(*)::int as n from audit_log'))[0]!.n;
  const demo = await ok(['demo']);
  const demoRows = await sql<{ actor: string; operation: string; outcome: string; request_id: string }>(
    'select actor, operation, outcome, request_id from audit_log order by id offset ?',
    [before],
  );
  expect(demoRows.map((r) => r.operation)).toEqual(['createDeveloper', 'issueSecretKey', 'createUser', 'createUser']);
  expect(new Set(demoRows.map((r) => r.request_id)).size).toBe(1);
  expect(demoRows.every((r) => r.actor === 'cli' && r.outcome === 'ok')).toBe(true);
  const all = (await sql<{ t: string }>(`select string_agg(arguments::text, ' ') as t from audit_log`))[0]!.t;
  expect(all).not.toContain(demo.secretKey.split('.')[2]);

  const failed = await runCli(['wallet:topup', '--wallet', `wlt_${'y'.repeat(20)}`, '--amount', '5'], env);
  expect(failed.code).toBe(2);
  const [last] = await sql('select actor, operation, arguments, outcome from audit_log order by id desc limit 1');
  expect(last).toEqual({ actor: 'cli', operation: 'topUpWallet', arguments: { walletId: `wlt_${'y'.repeat(20)}`, amount: 5 }, outcome: 'NOT_FOUND' });

  // Reading commands write nothing; the usage lists the operator commands.
  const help = await runCli(['--help'], env);
  expect(help.stdout).toContain('operator:create --name N');
  expect(help.stdout).toContain('operator:revoke --operator ID');
  const count = (await sql<{ n: number }>('select count(*)::int as n from audit_log'))[0]!.n;
  await ok(['user:token', '--username', 'alice']);
  expect((await sql<{ n: number }>('select count(*)::int as n from audit_log'))[0]!.n).toBe(count);
});
