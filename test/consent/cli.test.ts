/**
 * The CLI's side of consent (SPEC §15): `user:create --pin` sets the PIN and prints it, without
 * `--pin` a random one is printed; `pin:reset` and `pin:unlock` for operators; a malformed PIN is
 * a usage error that never echoes the value; an easy PIN is refused (exit 2, nothing changes). The
 * CLI hashes under the pepper like the gateway (the same PIN_PEPPER).
 */
import { factories, startTestApp, type TestApp } from '../helpers/app.js';
import { cliDatabaseEnv, runCli } from '../helpers/cli.js';
import { approve, requestPayment } from '../helpers/payments.js';
import { mintUserToken } from '../../src/auth/user-tokens.js';

let app: TestApp;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  app = await startTestApp();
  env = cliDatabaseEnv(app.database);
});
afterAll(async () => {
  await app.close();
});

async function ok(args: string[]): Promise<any> {
  const r = await runCli(args, env);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(r.stdout);
}

test('user:create --pin sets the PIN the wallet approves with, hashed under the pepper; without --pin a random one', async () => {
  const out = await ok(['user:create', '--username', 'cli_pin', '--phone', '0944100001', '--balance', '50', '--pin', '482915']);
  expect(out.pin).toBe('482915');
  const [row] = await app.db.orm.em.fork().execute('select pin_hash from wallet_pins where wallet_id = ?', [out.walletId]);
  expect(row.pin_hash).toMatch(/^hmac\$/);
  const dev = await factories(app).developer();
  const id = await requestPayment(app.baseUrl, dev.secretKey, out.walletId, 5);
  const token = await mintUserToken(app.config, out.userId);
  expect((await approve(app.baseUrl, token, id, '482915')).body.data.approvePaymentRequest.status).toBe('APPROVED');
  const random = await ok(['user:create', '--username', 'cli_nopin', '--phone', '0944100002']);
  expect(random.pin).toMatch(/^[0-9]{6}$/);
});

test('a malformed --pin: exit 2, a message without the value, nothing created', async () => {
  const r = await runCli(['user:create', '--username', 'cli_badpin', '--phone', '0944100003', '--pin', '12x45'], env);
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/pin must be 4 to 6 digits/);
  expect(r.stderr).not.toContain('12x45');
  expect(await app.db.orm.em.fork().execute("select 1 from users where username = 'cli_badpin'")).toEqual([]);
});

test('pin:reset sets a new PIN (random without --pin) and pin:unlock lifts a lock', async () => {
  const dev = await factories(app).developer();
  const user = await factories(app).user({ balance: 20 });
  const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 5);
  for (let i = 0; i < 5; i++) await approve(app.baseUrl, user.token, id, '999999');
  expect((await approve(app.baseUrl, user.token, id)).body.errors[0].extensions.code).toBe('VERIFICATION_LOCKED');
  expect(await ok(['pin:unlock', '--wallet', user.walletId])).toEqual({ walletId: user.walletId, unlocked: true });
  const reset = await ok(['pin:reset', '--wallet', user.walletId]);
  expect(reset).toEqual({ walletId: user.walletId, pin: expect.stringMatching(/^[0-9]{6}$/) });
  expect((await approve(app.baseUrl, user.token, id, reset.pin)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  expect(await ok(['pin:reset', '--wallet', user.walletId, '--pin', '4826'])).toEqual({ walletId: user.walletId, pin: '4826' });
});

test.each([['0000'], ['1234'], ['987654']])('an easy PIN (%s): user:create --pin and pin:reset --pin exit 2, nothing created or changed', async (easy) => {
  const username = `cli_easy_${easy}`;
  const created = await runCli(['user:create', '--username', username, '--phone', `09445${easy.slice(0, 4).padStart(5, '0')}`, '--pin', easy], env);
  expect(created.code).toBe(2);
  expect(created.stdout).toBe('');
  expect(created.stderr).toMatch(/pin is too easy to guess/);
  expect(await app.db.orm.em.fork().execute('select 1 from users where username = ?', [username])).toEqual([]);
  const user = await factories(app).user();
  const [before] = await app.db.orm.em.fork().execute('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId]);
  const reset = await runCli(['pin:reset', '--wallet', user.walletId, '--pin', easy], env);
  expect(reset.code).toBe(2);
  expect(reset.stderr).toMatch(/pin is too easy to guess/);
  expect(await app.db.orm.em.fork().execute('select pin_hash from wallet_pins where wallet_id = ?', [user.walletId])).toEqual([before]);
});
