/**
 * Consent (issue 24, SPEC §15): every approval is verified with the wallet's transaction PIN (or a
 * passkey); a wrong PIN changes nothing; PIN_MAX_ATTEMPTS failures in a row lock the wallet's
 * approvals, an operator lifts the lock (audited), a lapsed lock starts a fresh count; the user
 * changes the PIN with the current one; PINs never reach logs, errors, metrics or the audit log.
 */
import { TEST_PIN, factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';
import { APPROVE_WITH_PIN, approve, balances, countTransactions, requestPayment, statusOf } from '../helpers/payments.js';
import { hashPin, verifyPin } from '../../src/consent/pin.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let admin: string;
const sql = <T = Record<string, any>>(query: string, params: unknown[] = []): Promise<T[]> => app.db.orm.em.fork().execute<T[]>(query, params);

beforeAll(async () => {
  app = await startTestApp({ env: { PIN_MAX_ATTEMPTS: '5', PIN_LOCK_MINUTES: '15' } });
  f = factories(app);
  admin = app.config.adminToken;
});
afterAll(async () => {
  await app.close();
});

/** A funded payer with a pending request of 10 from a fresh merchant. */
async function pending(opts: { pin?: string | null } = {}) {
  const dev = await f.developer();
  const user = await f.user({ balance: 100, ...opts });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 10);
  return { dev, user, id };
}

const codeOf = (res: { body: any }): string | undefined => res.body.errors?.[0]?.extensions?.code;
const approveWith = (token: string, id: string, verification: Record<string, unknown>) =>
  gql(app.baseUrl, 'mutation($id: ID!, $v: ApprovalVerificationInput!) { approvePaymentRequest(id: $id, verification: $v) { id status } }', { id, v: verification }, token);
const failures = async (walletId: string): Promise<number> => (await sql('select failures from wallet_pins where wallet_id = ?', [walletId]))[0]!.failures;

describe('the PIN hash', () => {
  test('scrypt, salted, self-describing; the right PIN verifies, any other does not', async () => {
    const a = await hashPin('123456', 10);
    const b = await hashPin('123456', 10);
    expect(a).toMatch(/^scrypt\$1024\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(a).not.toBe(b); // a fresh salt each time
    expect(await verifyPin('123456', a)).toBe(true);
    expect(await verifyPin('123457', a)).toBe(false);
    expect(await verifyPin('123456', 'scrypt$1024$8$1$bad')).toBe(false);
  });

  test('the production cost by default: N = 2^15', async () => {
    expect(await hashPin('1234', 15)).toMatch(/^scrypt\$32768\$8\$1\$/);
    const { loadConfig } = await import('../../src/config.js');
    expect(loadConfig({}).pinHashCost).toBe(15);
    expect(() => loadConfig({ APP_ENV: 'production', KEY_SIGNING_SECRET: 'x'.repeat(32), USER_TOKEN_SECRET: 'y'.repeat(32), ADMIN_TOKEN: 'z'.repeat(32), PIN_HASH_COST: '10' })).toThrow(/PIN_HASH_COST/);
  });

  test('stored only as its hash, in wallet_pins, never on the wallet', async () => {
    const user = await f.user();
    const [row] = await sql<{ pin_hash: string; failures: number; locked_until: Date | null }>('select * from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(row!.pin_hash).toMatch(/^scrypt\$/);
    expect(row!.pin_hash).not.toContain(TEST_PIN);
    expect(await verifyPin(TEST_PIN, row!.pin_hash)).toBe(true);
    expect(row!.failures).toBe(0);
    const wallet = await gql(app.baseUrl, '{ myWallet { walletId } }', {}, user.token);
    expect(JSON.stringify(wallet.body)).not.toContain('pin');
  });
});

describe('approval with a PIN', () => {
  test('the right PIN approves: money moves once, the count stays at zero', async () => {
    const { dev, user, id } = await pending();
    const res = await approve(app.baseUrl, user.token, id);
    expect(res.body.data.approvePaymentRequest).toMatchObject({ id, status: 'APPROVED' });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 90, developer: 10 });
    expect(await failures(user.walletId)).toBe(0);
  });

  test('a wrong PIN changes nothing: VERIFICATION_FAILED, still PENDING, no money, no transaction; counted', async () => {
    const { dev, user, id } = await pending();
    const res = await approve(app.baseUrl, user.token, id, '000000');
    expect(codeOf(res)).toBe('VERIFICATION_FAILED');
    expect(res.body.errors[0].extensions.statusCode).toBe(403);
    expect(res.body.errors[0].message).toBe('Wrong PIN; 4 attempts left before approvals are locked');
    expect(res.body.data).toBeNull();
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 100, developer: 0 });
    expect(await countTransactions(app.db, id)).toBe(0);
    expect(await failures(user.walletId)).toBe(1);
    // The right PIN afterwards approves and resets the count.
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    expect(await failures(user.walletId)).toBe(0);
  });

  test.each([
    ['too short', { pin: '123' }, 'pin must be 4 to 6 digits'],
    ['too long', { pin: '1234567' }, 'pin must be 4 to 6 digits'],
    ['not digits', { pin: '12a4' }, 'pin must be 4 to 6 digits'],
    ['non-ASCII digits', { pin: '١٢٣٤' }, 'pin must be 4 to 6 digits'],
    ['spaces', { pin: ' 1234' }, 'pin must be 4 to 6 digits'],
    ['neither', {}, 'verification must hold exactly one of pin or passkey'],
    ['both', { pin: '1234', passkey: { id: 'x' } }, 'verification must hold exactly one of pin or passkey'],
  ])('%s: BAD_USER_INPUT, nothing counted, nothing changes', async (_what, verification, message) => {
    const { dev, user, id } = await pending();
    const res = await approveWith(user.token, id, verification);
    expect(codeOf(res)).toBe('BAD_USER_INPUT');
    expect(res.body.errors[0].message).toBe(message);
    expect(await failures(user.walletId)).toBe(0);
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });

  test('a PIN of the wrong type (a number): refused, and the answer never quotes it', async () => {
    const { dev, user, id } = await pending();
    const asVariable = await approveWith(user.token, id, { pin: 736251 });
    expect(codeOf(asVariable)).toBe('BAD_USER_INPUT');
    expect(asVariable.body.errors[0].message).toBe('String cannot represent a non string value.');
    const inline = await gql(app.baseUrl, `mutation { approvePaymentRequest(id: "${id}", verification: { pin: 736251 }) { id } }`, {}, user.token);
    expect(inline.body.errors[0].message).toBe('String cannot represent a non string value.');
    const whole = await gql(app.baseUrl, 'mutation($id: ID!, $v: ApprovalVerificationInput!) { approvePaymentRequest(id: $id, verification: $v) { id } }', { id, v: 736251 }, user.token);
    expect(whole.body.errors[0].message).toBe('Expected type "ApprovalVerificationInput" to be an object.');
    for (const r of [asVariable, inline, whole]) expect(JSON.stringify(r.body)).not.toContain('736251');
    expect(await failures(user.walletId)).toBe(0);
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
  });

  test('a verification argument is required', async () => {
    const { user, id } = await pending();
    const res = await gql(app.baseUrl, 'mutation($id: ID!) { approvePaymentRequest(id: $id) { id } }', { id }, user.token);
    expect(codeOf(res)).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  test("someone else's request: NOT_FOUND, and no attempt counted on either wallet", async () => {
    const { user: owner, id } = await pending();
    const other = await f.user();
    expect(codeOf(await approve(app.baseUrl, other.token, id, '000000'))).toBe('NOT_FOUND');
    expect(codeOf(await approve(app.baseUrl, other.token, '00000000-0000-4000-8000-000000000000', '000000'))).toBe('NOT_FOUND');
    expect(await failures(other.walletId)).toBe(0);
    expect(await failures(owner.walletId)).toBe(0);
  });

  test('a passkey assertion does not verify until passkeys exist: VERIFICATION_FAILED, counted', async () => {
    const { user, id } = await pending();
    const res = await approveWith(user.token, id, { passkey: { id: 'abc', response: {} } });
    expect(codeOf(res)).toBe('VERIFICATION_FAILED');
    expect(await failures(user.walletId)).toBe(1);
  });

  test('a wallet without a PIN (made outside the doors) cannot approve until an operator sets one', async () => {
    const { dev, user, id } = await pending();
    await sql('delete from wallet_pins where wallet_id = ?', [user.walletId]);
    const res = await approve(app.baseUrl, user.token, id);
    expect(codeOf(res)).toBe('VERIFICATION_FAILED');
    expect(res.body.errors[0].message).toBe('Set a transaction PIN before approving');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    const reset = await gql(
      app.baseUrl,
      'mutation($w: String!) { resetTransactionPin(walletId: $w) { walletId pin } }',
      { w: user.walletId },
      admin,
    );
    const { pin } = reset.body.data.resetTransactionPin;
    expect(pin).toMatch(/^[0-9]{6}$/);
    expect((await approve(app.baseUrl, user.token, id, pin)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });
});

describe('the lock', () => {
  test('5 wrong PINs lock the approvals; even the right PIN is refused while locked; an operator unlocks (audited)', async () => {
    const { dev, user, id } = await pending();
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await approve(app.baseUrl, user.token, id, '999999'));
    expect(answers.map(codeOf)).toEqual(Array(5).fill('VERIFICATION_FAILED'));
    expect(answers[4]!.body.errors[0].message).toBe('Wrong PIN; approvals are now locked for 15 minutes');
    const locked = await approve(app.baseUrl, user.token, id);
    expect(codeOf(locked)).toBe('VERIFICATION_LOCKED');
    expect(locked.body.errors[0].extensions.statusCode).toBe(423);
    const [row] = await sql<{ failures: number; minutes: number }>(
      'select failures, round(extract(epoch from locked_until - now()) / 60)::int as minutes from wallet_pins where wallet_id = ?',
      [user.walletId],
    );
    expect(row).toEqual({ failures: 5, minutes: 15 });
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');

    const unlock = await gql(app.baseUrl, 'mutation($w: String!) { unlockTransactionPin(walletId: $w) }', { w: user.walletId }, admin);
    expect(unlock.body.data.unlockTransactionPin).toBe(true);
    const [audit] = await sql('select actor, operation, arguments, outcome from audit_log where operation = ? order by id desc limit 1', ['unlockTransactionPin']);
    expect(audit).toEqual({ actor: 'root', operation: 'unlockTransactionPin', arguments: { walletId: user.walletId }, outcome: 'ok' });
    expect(await failures(user.walletId)).toBe(0);
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('unlock is for operators only; an unknown wallet is NOT_FOUND', async () => {
    const user = await f.user();
    expect(codeOf(await gql(app.baseUrl, 'mutation($w: String!) { unlockTransactionPin(walletId: $w) }', { w: user.walletId }, user.token))).toBe('FORBIDDEN');
    expect(codeOf(await gql(app.baseUrl, 'mutation { unlockTransactionPin(walletId: "wlt_nope") }', {}, admin))).toBe('NOT_FOUND');
  });

  test('a lock that has lapsed starts a fresh count', async () => {
    const { user, id } = await pending();
    for (let i = 0; i < 5; i++) await approve(app.baseUrl, user.token, id, '999999');
    expect(codeOf(await approve(app.baseUrl, user.token, id, '999999'))).toBe('VERIFICATION_LOCKED');
    // The lock's 15 minutes pass (moved in the database rather than waited for).
    await sql("update wallet_pins set locked_until = now() - interval '1 second' where wallet_id = ?", [user.walletId]);
    const next = await approve(app.baseUrl, user.token, id, '999999');
    expect(next.body.errors[0].message).toBe('Wrong PIN; 4 attempts left before approvals are locked');
    expect(await sql('select failures, locked_until from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([{ failures: 1, locked_until: null }]);
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('a correct PIN between failures resets the count: failures must be in a row', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    for (let round = 0; round < 3; round++) {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      for (let i = 0; i < 4; i++) expect(codeOf(await approve(app.baseUrl, user.token, id, '999999'))).toBe('VERIFICATION_FAILED');
      expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    }
  });
});

describe('changeTransactionPin', () => {
  const CHANGE = 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }';

  test('with the current PIN: the new one approves, the old one no longer does', async () => {
    const { user, id } = await pending();
    const res = await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '4321' }, user.token);
    expect(res.body.data.changeTransactionPin).toBe(true);
    expect(codeOf(await approve(app.baseUrl, user.token, id, TEST_PIN))).toBe('VERIFICATION_FAILED');
    expect((await approve(app.baseUrl, user.token, id, '4321')).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('a wrong current PIN is counted like an approval and locks the same way; the PIN is unchanged', async () => {
    const user = await f.user();
    for (let i = 0; i < 5; i++) expect(codeOf(await gql(app.baseUrl, CHANGE, { c: '000000', n: '1111' }, user.token))).toBe('VERIFICATION_FAILED');
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '1111' }, user.token))).toBe('VERIFICATION_LOCKED');
    const [row] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(await verifyPin(TEST_PIN, row!.pin_hash)).toBe(true);
  });

  test('a malformed new or current PIN: BAD_USER_INPUT, nothing counted, nothing changed', async () => {
    const user = await f.user();
    for (const [c, n, message] of [
      [TEST_PIN, '12', 'newPin must be 4 to 6 digits'],
      [TEST_PIN, '12345a', 'newPin must be 4 to 6 digits'],
      ['12', '1234', 'currentPin must be 4 to 6 digits'],
    ] as const) {
      const res = await gql(app.baseUrl, CHANGE, { c, n }, user.token);
      expect(codeOf(res)).toBe('BAD_USER_INPUT');
      expect(res.body.errors[0].message).toBe(message);
    }
    expect(await failures(user.walletId)).toBe(0);
  });

  test('needs a user token', async () => {
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '1111' }))).toBe('UNAUTHENTICATED');
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '1111' }, admin))).toBe('FORBIDDEN');
  });
});

describe('setting PINs', () => {
  test('admin createUser takes a PIN, or makes one up, and answers it once; a malformed one is refused, nothing created', async () => {
    const create = (input: Record<string, unknown>) =>
      gql(app.baseUrl, 'mutation($i: CreateUserInput!) { createUser(input: $i) { userId walletId pin } }', { i: input }, admin);
    const chosen = await create({ username: 'pin_chosen', phone: '0933100001', pin: '2468' });
    expect(chosen.body.data.createUser.pin).toBe('2468');
    const made = await create({ username: 'pin_made', phone: '0933100002' });
    expect(made.body.data.createUser.pin).toMatch(/^[0-9]{6}$/);
    const bad = await create({ username: 'pin_bad', phone: '0933100003', pin: '12' });
    expect(codeOf(bad)).toBe('BAD_USER_INPUT');
    expect(bad.body.errors[0].message).toBe('pin must be 4 to 6 digits');
    expect(await sql("select 1 from users where username = 'pin_bad'")).toEqual([]);
    // The audit log keeps the creation, never the PIN.
    const rows = await sql<{ arguments: unknown }>("select arguments from audit_log where operation = 'createUser'");
    expect(JSON.stringify(rows)).not.toContain('2468');
    expect(JSON.stringify(rows)).toContain('[redacted]');
  });

  test('resetTransactionPin sets the given PIN, lifts a lock, and is audited without the PIN', async () => {
    const { user, id } = await pending();
    for (let i = 0; i < 5; i++) await approve(app.baseUrl, user.token, id, '999999');
    const reset = await gql(app.baseUrl, 'mutation($w: String!, $p: String) { resetTransactionPin(walletId: $w, pin: $p) { walletId pin } }', { w: user.walletId, p: '97531' }, admin);
    expect(reset.body.data.resetTransactionPin).toEqual({ walletId: user.walletId, pin: '97531' });
    expect((await approve(app.baseUrl, user.token, id, '97531')).body.data.approvePaymentRequest.status).toBe('APPROVED');
    const [audit] = await sql("select arguments from audit_log where operation = 'resetTransactionPin' order by id desc limit 1");
    expect(audit!.arguments).toEqual({ walletId: user.walletId, pin: '[redacted]' });
  });
});

test('no PIN appears in the logs, error messages, metrics or audit log', async () => {
  const secretPin = '864213';
  const wrongPin = '531246';
  const { user, id } = await pending({ pin: secretPin });
  const errors = [];
  errors.push(await approve(app.baseUrl, user.token, id, wrongPin));
  errors.push(await approveWith(user.token, id, { pin: `${wrongPin}9` }));
  errors.push(await gql(app.baseUrl, 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }', { c: wrongPin, n: '975312' }, user.token));
  const ok = await approve(app.baseUrl, user.token, id, secretPin);
  expect(ok.body.data.approvePaymentRequest.status).toBe('APPROVED');
  const metrics = (await http(app.baseUrl, '/metrics')).body as string;
  expect(metrics).toMatch(/approval_verifications_total\{method="pin",outcome="ok"\} \d+/);
  expect(metrics).toMatch(/approval_verifications_total\{method="pin",outcome="failed"\} \d+/);
  const audit = JSON.stringify(await sql('select arguments from audit_log'));
  for (const pin of [secretPin, wrongPin, '975312']) {
    // As a number of its own (a timestamp or a duration may hold the same digits inside it).
    const alone = new RegExp(`(?<![0-9])${pin}(?![0-9])`);
    for (const r of errors) expect(JSON.stringify(r.body)).not.toMatch(alone);
    expect(app.logs.join('\n')).not.toMatch(alone);
    expect(metrics).not.toMatch(alone);
    expect(audit).not.toMatch(alone);
  }
  // The PIN approval query itself (as a client sends it) carries the PIN only in its variables, which are not logged.
  expect(APPROVE_WITH_PIN).toContain('$pin');
});
