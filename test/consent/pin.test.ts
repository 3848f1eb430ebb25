/**
 * Consent (issue 24, SPEC §15): every approval is verified with the wallet's transaction PIN (or a
 * passkey); a wrong PIN changes nothing; PIN_MAX_ATTEMPTS failures in a row lock the wallet's
 * approvals, an operator lifts the lock (audited), a lapsed lock starts a fresh count; the user
 * changes the PIN with the current one; PINs never reach logs, errors, metrics or the audit log.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_PIN, factories, gql, http, startSecondInstance, startTestApp, testConfig, type TestApp } from '../helpers/app.js';
import { ConsentService } from '../../src/consent/consent.service.js';
import { DEV_PEPPER_FILE, resolveStartupKeys } from '../../src/startup-keys.js';
import { APPROVE_WITH_PIN, approve, balances, countTransactions, requestPayment, statusOf } from '../helpers/payments.js';
import { PinHasher, decodePepper, generatePin, isEasyPin, scryptPinHash } from '../../src/consent/pin.js';
import { TEST_PIN_PEPPER } from '../helpers/app.js';

const testHasher = new PinHasher(Buffer.from(TEST_PIN_PEPPER, 'hex'));
const verifyPin = async (pin: string, stored: string): Promise<boolean> => (await testHasher.verify(pin, stored)).ok;

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
  const pepper = Buffer.alloc(32, 7);
  test('keyed (HMAC-SHA-256 under the pepper), salted, self-describing; the right PIN verifies, any other does not', async () => {
    const hasher = new PinHasher(pepper);
    const a = hasher.hash('123456');
    const b = hasher.hash('123456');
    expect(a).toMatch(/^hmac\$[\w-]{11}\$[\w-]{22}\$[\w-]{43}$/);
    expect(a).not.toBe(b); // a fresh salt each time
    expect(await hasher.verify('123456', a)).toEqual({ ok: true, upgrade: false });
    expect((await hasher.verify('123457', a)).ok).toBe(false);
    expect((await hasher.verify('123456', 'hmac$bad')).ok).toBe(false);
    // Without the pepper the hash says nothing: another pepper does not verify it.
    expect((await new PinHasher(Buffer.alloc(32, 8)).verify('123456', a)).ok).toBe(false);
  });

  test('a verification costs microseconds, not scrypt\'s tens of milliseconds', async () => {
    const hasher = new PinHasher(pepper);
    const stored = hasher.hash('135790');
    const start = process.cpuUsage();
    for (let i = 0; i < 1000; i++) await hasher.verify('135790', stored);
    const used = process.cpuUsage(start);
    // 1000 verifications in well under a second of CPU (≤ 1 ms each is the bar; they take µs).
    expect((used.user + used.system) / 1000).toBeLessThan(1000);
  });

  test('the scrypt form and an earlier pepper still verify, and ask to be moved to the current form', async () => {
    const older = new PinHasher(Buffer.alloc(32, 1));
    const rotated = new PinHasher(pepper, [Buffer.alloc(32, 1)]);
    expect(await rotated.verify('246813', older.hash('246813'))).toEqual({ ok: true, upgrade: true });
    expect(await rotated.verify('246813', await scryptPinHash('246813', 10))).toEqual({ ok: true, upgrade: true });
    expect((await rotated.verify('246814', await scryptPinHash('246813', 10))).ok).toBe(false);
    // A pepper no longer listed: the PIN cannot verify (an operator resets it).
    expect((await new PinHasher(pepper).verify('246813', older.hash('246813'))).ok).toBe(false);
  });

  test('PIN_PEPPER: at least 32 bytes, hex or base64; production refuses to start without it', async () => {
    const { loadConfig } = await import('../../src/config.js');
    expect(loadConfig({ PIN_PEPPER: 'ab'.repeat(32) }).pinPepper).toBe('ab'.repeat(32));
    expect(loadConfig({ PIN_PEPPER: Buffer.alloc(32, 9).toString('base64') }).pinPepper).toBeDefined();
    expect(() => loadConfig({ PIN_PEPPER: 'ab'.repeat(31) })).toThrow(/PIN_PEPPER: must be at least 32 bytes/);
    expect(() => loadConfig({ PIN_PEPPER: 'not a pepper!' })).toThrow(/PIN_PEPPER/);
    expect(() => loadConfig({ PIN_PREVIOUS_PEPPERS: `${'cd'.repeat(32)},short` })).toThrow(/PIN_PREVIOUS_PEPPERS/);
    const production = { APP_ENV: 'production', KEY_SIGNING_SECRET: 'x'.repeat(32), USER_TOKEN_SECRET: 'y'.repeat(32), ADMIN_TOKEN: 'z'.repeat(32) };
    expect(() => loadConfig(production)).toThrow(/PIN_PEPPER is required in production/);
  });

  test.each(['0000', '1111', '111111', '1234', '012345', '9876', '543210', '1212', '6969', '1004', '2001', '4321', '7777'])('%s is too easy', (pin) => {
    expect(isEasyPin(pin)).toBe(true);
  });

  test.each(['135790', '2468', '97531', '1235', '9012', '8642', '0912'])('%s is not', (pin) => {
    expect(isEasyPin(pin)).toBe(false);
  });

  test('a made-up PIN is never easy', () => {
    for (let i = 0; i < 2000; i++) expect(isEasyPin(generatePin())).toBe(false);
  });

  test('stored only as its hash, in wallet_pins, never on the wallet', async () => {
    const user = await f.user();
    const [row] = await sql<{ pin_hash: string; failures: number; locked_until: Date | null }>('select * from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(row!.pin_hash).toMatch(/^hmac\$/);
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

describe('a guessing budget that ends (PIN_MAX_LOCKS = 3)', () => {
  const lapse = (walletId: string) => sql("update wallet_pins set locked_until = now() - interval '1 second' where wallet_id = ?", [walletId]);

  test('VERIFICATION_LOCKED carries retryAfter (whole seconds) and Retry-After', async () => {
    const { user, id } = await pending();
    for (let i = 0; i < 5; i++) await approve(app.baseUrl, user.token, id, '999999');
    const locked = await approve(app.baseUrl, user.token, id);
    expect(codeOf(locked)).toBe('VERIFICATION_LOCKED');
    const retryAfter = locked.body.errors[0].extensions.retryAfter;
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(14 * 60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
  });

  test('lapse after lapse: the third lock lasts until an operator unlocks, with no retryAfter; a success between locks starts the budget again', async () => {
    const { user, id } = await pending();
    for (let lock = 1; lock <= 3; lock++) {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await approve(app.baseUrl, user.token, id, '999999'));
      expect(answers.map(codeOf)).toEqual(Array(5).fill('VERIFICATION_FAILED'));
      expect(answers[4]!.body.errors[0].message).toBe(
        lock < 3 ? 'Wrong PIN; approvals are now locked for 15 minutes' : 'Wrong PIN; approvals are now locked until an operator unlocks them',
      );
      if (lock < 3) await lapse(user.walletId);
    }
    // The lock's time "passes" again: it does not lapse.
    await sql("update wallet_pins set updated_at = now() - interval '30 days' where wallet_id = ?", [user.walletId]);
    const locked = await approve(app.baseUrl, user.token, id);
    expect(codeOf(locked)).toBe('VERIFICATION_LOCKED');
    expect(locked.body.errors[0].message).toBe('Approvals are locked after too many failed verifications; ask the wallet operator to unlock them');
    expect(locked.body.errors[0].extensions).not.toHaveProperty('retryAfter');
    expect(await sql('select locks, locked_until = \'infinity\' as "forGood" from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([{ locks: 3, forGood: true }]);
    // The operator's unlock (audited) lifts it and starts the budget again.
    expect((await gql(app.baseUrl, 'mutation($w: String!) { unlockTransactionPin(walletId: $w) }', { w: user.walletId }, admin)).body.data.unlockTransactionPin).toBe(true);
    expect(await sql('select failures, locks, locked_until from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([{ failures: 0, locks: 0, locked_until: null }]);
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('a success between locks clears the count of locks', async () => {
    const dev = await f.developer();
    const user = await f.user({ balance: 100 });
    for (let round = 0; round < 4; round++) {
      const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 1);
      for (let i = 0; i < 5; i++) await approve(app.baseUrl, user.token, id, '999999');
      await lapse(user.walletId);
      expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    }
    expect(await sql('select locks from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([{ locks: 0 }]);
  });
});

describe('easy PINs are refused wherever a PIN is set', () => {
  const CHANGE = 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }';
  const message = (field: string) => `${field} is too easy to guess (a repeated digit, a run of consecutive digits or a very common PIN); choose another`;

  test.each(['0000', '1234', '111111', '012345', '9876', '6969'])('%s: changeTransactionPin, createUser and resetTransactionPin answer BAD_USER_INPUT; nothing changes, nothing counted', async (easy) => {
    const user = await f.user();
    const [before] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    const change = await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: easy }, user.token);
    expect(codeOf(change)).toBe('BAD_USER_INPUT');
    expect(change.body.errors[0].message).toBe(message('newPin'));
    const reset = await gql(app.baseUrl, 'mutation($w: String!, $p: String) { resetTransactionPin(walletId: $w, pin: $p) { pin } }', { w: user.walletId, p: easy }, admin);
    expect(codeOf(reset)).toBe('BAD_USER_INPUT');
    expect(reset.body.errors[0].message).toBe(message('pin'));
    expect(await sql('select pin_hash, failures from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([{ pin_hash: before!.pin_hash, failures: 0 }]);
    const username = `easy_${easy}_${Date.now().toString(36)}`;
    const create = await gql(
      app.baseUrl,
      'mutation($i: CreateUserInput!) { createUser(input: $i) { userId pin } }',
      { i: { username, phone: `0944${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`, pin: easy } },
      admin,
    );
    expect(codeOf(create)).toBe('BAD_USER_INPUT');
    expect(create.body.errors[0].message).toBe(message('pin'));
    expect(await sql('select 1 from users where username = ?', [username])).toEqual([]);
  });
});

describe('the pepper', () => {
  test('a PIN stored in the scrypt form verifies once at its cost, then is stored under the pepper', async () => {
    const { user, id } = await pending();
    await sql('update wallet_pins set pin_hash = ? where wallet_id = ?', [await scryptPinHash(TEST_PIN, 10), user.walletId]);
    expect(codeOf(await approve(app.baseUrl, user.token, id, '999999'))).toBe('VERIFICATION_FAILED');
    expect((await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]))[0]!.pin_hash).toMatch(/^scrypt\$/);
    expect((await approve(app.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    const [row] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(row!.pin_hash).toMatch(/^hmac\$/);
    expect(await verifyPin(TEST_PIN, row!.pin_hash)).toBe(true);
  });

  test('rotation: an instance with a new PIN_PEPPER and the old one in PIN_PREVIOUS_PEPPERS verifies old PINs and moves them', async () => {
    const fresh = 'f1'.repeat(32);
    const { user, id } = await pending();
    const [before] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    const rotated = await startSecondInstance(app, { PIN_PEPPER: fresh, PIN_PREVIOUS_PEPPERS: TEST_PIN_PEPPER });
    try {
      expect((await approve(rotated.baseUrl, user.token, id)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    } finally {
      await rotated.close();
    }
    const [after] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(after!.pin_hash.split('$')[1]).not.toBe(before!.pin_hash.split('$')[1]);
    expect((await new PinHasher(Buffer.from(fresh, 'hex')).verify(TEST_PIN, after!.pin_hash)).ok).toBe(true);
    // The old pepper alone no longer verifies it: the dump of today needs today's pepper.
    expect(await verifyPin(TEST_PIN, after!.pin_hash)).toBe(false);
  });

  test('development without PIN_PEPPER: one is made under DATA_DIR (0600) where the process starts, not by building the services', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'pin-pepper-'));
    try {
      const config = testConfig({ PIN_PEPPER: '', CONSENT_SIGNING_KEY: '', DATA_DIR: dataDir });
      expect(config.pinPepper).toBeUndefined();
      const resolved = resolveStartupKeys(config);
      expect(decodePepper(resolved.pinPepper!)).toHaveLength(32);
      expect(((await stat(path.join(dataDir, DEV_PEPPER_FILE))).mode & 0o777).toString(8)).toBe('600');
      expect(resolveStartupKeys(config).pinPepper).toBe(resolved.pinPepper);
      // Building the services from an unresolved configuration writes nothing: it refuses.
      expect(() => new ConsentService(config)).toThrow(/PIN_PEPPER is not resolved/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('changeTransactionPin', () => {
  const CHANGE = 'mutation($c: String!, $n: String!) { changeTransactionPin(currentPin: $c, newPin: $n) }';

  test('with the current PIN: the new one approves, the old one no longer does', async () => {
    const { user, id } = await pending();
    const res = await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '4826' }, user.token);
    expect(res.body.data.changeTransactionPin).toBe(true);
    expect(codeOf(await approve(app.baseUrl, user.token, id, TEST_PIN))).toBe('VERIFICATION_FAILED');
    expect((await approve(app.baseUrl, user.token, id, '4826')).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test('a wrong current PIN is counted like an approval and locks the same way; the PIN is unchanged', async () => {
    const user = await f.user();
    for (let i = 0; i < 5; i++) expect(codeOf(await gql(app.baseUrl, CHANGE, { c: '000000', n: '5938' }, user.token))).toBe('VERIFICATION_FAILED');
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '5938' }, user.token))).toBe('VERIFICATION_LOCKED');
    const [row] = await sql<{ pin_hash: string }>('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
    expect(await verifyPin(TEST_PIN, row!.pin_hash)).toBe(true);
  });

  test('a malformed new or current PIN: BAD_USER_INPUT, nothing counted, nothing changed', async () => {
    const user = await f.user();
    for (const [c, n, message] of [
      [TEST_PIN, '12', 'newPin must be 4 to 6 digits'],
      [TEST_PIN, '12345a', 'newPin must be 4 to 6 digits'],
      ['12', '4826', 'currentPin must be 4 to 6 digits'],
    ] as const) {
      const res = await gql(app.baseUrl, CHANGE, { c, n }, user.token);
      expect(codeOf(res)).toBe('BAD_USER_INPUT');
      expect(res.body.errors[0].message).toBe(message);
    }
    expect(await failures(user.walletId)).toBe(0);
  });

  test('needs a user token', async () => {
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '5938' }))).toBe('UNAUTHENTICATED');
    expect(codeOf(await gql(app.baseUrl, CHANGE, { c: TEST_PIN, n: '5938' }, admin))).toBe('FORBIDDEN');
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
