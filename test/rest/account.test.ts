// GET /api/v1/account/{identifier}: username or phone number → walletId.
import { factories, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectOk } from '../helpers/expect.js';
import { lookupAccount, REST_TEST_ENV } from '../helpers/rest.js';

let app: TestApp;
let f: ReturnType<typeof factories>;
let token: string;
let alice: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;
let phone9: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;
let phone8: Awaited<ReturnType<ReturnType<typeof factories>['user']>>;

beforeAll(async () => {
  app = await startTestApp({ env: { ...REST_TEST_ENV } });
  f = factories(app);
  token = (await f.developer()).secretKey;
  alice = await f.user({ username: 'alice', phone: '0911000001' });
  phone9 = await f.user({ username: 'nine_user', phone: '0912345678' });
  phone8 = await f.user({ username: 'eight_user', phone: '0812345678' });
});
afterAll(async () => {
  await app.close();
});

describe('username', () => {
  test('a username resolves to exactly { walletId }', async () => {
    const res = await lookupAccount(app, token, 'alice');
    expectOk(res);
    expect(res.body).toEqual({ walletId: alice.walletId });
  });

  test('the walletId is opaque: wlt_ and random characters, not the user id', async () => {
    const res = await lookupAccount(app, token, 'alice');
    expect(res.body.walletId).toMatch(/^wlt_[A-Za-z0-9]{16,}$/);
    expect(res.body.walletId).not.toContain(alice.userId);
  });

  test.each(['ALICE', 'Alice', 'aLiCe'])('usernames compare without regard to case (%s)', async (identifier) => {
    const res = await lookupAccount(app, token, identifier);
    expectOk(res);
    expect(res.body).toEqual({ walletId: alice.walletId });
  });

  test('a username created in mixed case is found in lower case', async () => {
    const bob = await f.user({ username: 'Bob.Smith_2' });
    const res = await lookupAccount(app, token, 'bob.smith_2');
    expectOk(res);
    expect(res.body).toEqual({ walletId: bob.walletId });
  });

  test('an unknown username is 404', async () => {
    expectError(await lookupAccount(app, token, 'nobody_here'), 404);
  });

  test('a username is matched exactly, not as a pattern', async () => {
    expectError(await lookupAccount(app, token, 'al%25'), 404);
    expectError(await lookupAccount(app, token, 'al_ce'), 404);
  });
});

describe('phone number', () => {
  test('a phone created as 0912345678 is found by 0912345678', async () => {
    const res = await lookupAccount(app, token, '0912345678');
    expectOk(res);
    expect(res.body).toEqual({ walletId: phone9.walletId });
  });

  test('a phone created as 0912345678 is found by 912345678', async () => {
    const res = await lookupAccount(app, token, '912345678');
    expectOk(res);
    expect(res.body).toEqual({ walletId: phone9.walletId });
  });

  test('a phone starting 08 is found by 0812345678 and by 812345678', async () => {
    for (const identifier of ['0812345678', '812345678']) {
      const res = await lookupAccount(app, token, identifier);
      expectOk(res);
      expect(res.body).toEqual({ walletId: phone8.walletId });
    }
  });

  test('a phone created without its leading 0 is found with it', async () => {
    const user = await f.user({ phone: '944556677' });
    const res = await lookupAccount(app, token, '0944556677');
    expectOk(res);
    expect(res.body).toEqual({ walletId: user.walletId });
  });

  test('an unknown phone number is 404', async () => {
    expectError(await lookupAccount(app, token, '0999999999'), 404);
  });

  test.each(['09123abc', '9123abc', '08x', '8.123', '0912-345-678', '0912 345678'])(
    'an identifier starting 09/9/08/8 with non-digits (%s) is a malformed phone: 400',
    async (identifier) => {
      expectError(await lookupAccount(app, token, encodeURIComponent(identifier)), 400);
    },
  );

  test('a username cannot start with 8, 9, 08 or 09, so no username is ever shadowed by the phone rule', async () => {
    for (const username of ['9lives', '8ball', '09abc', '08abc']) {
      await expect(f.user({ username })).rejects.toMatchObject({ statusCode: 400 });
    }
  });
});

describe('malformed identifiers', () => {
  test.each([['%20'], ['%20%20%09']])('a blank identifier (%s) is 400', async (identifier) => {
    expectError(await lookupAccount(app, token, identifier), 400);
  });

  test('65 characters is 400', async () => {
    expectError(await lookupAccount(app, token, 'a'.repeat(65)), 400);
  });

  test('64 characters is a well-formed identifier (404 when nobody has it)', async () => {
    expectError(await lookupAccount(app, token, 'a'.repeat(64)), 404);
  });

  test.each([['a NUL byte', 'ali%00ce'], ['a tab', 'ali%09ce'], ['DEL', 'ali%7Fce']])(
    'a username with a control character (%s) is 400, not a server error',
    async (_what, identifier) => {
      expectError(await lookupAccount(app, token, identifier), 400);
    },
  );

  test('a 65-digit phone number is 400', async () => {
    expectError(await lookupAccount(app, token, `09${'1'.repeat(63)}`), 400);
  });
});

test('without an Authorization header: 401 Missing bearer token', async () => {
  expectError(await lookupAccount(app, undefined, 'alice'), 401, 'Missing bearer token');
});

test('a phone that look-ups could never find (not starting with 8 or 9) is refused at creation', async () => {
  const f = factories(app);
  await expect(f.user({ phone: '0712345678' })).rejects.toThrow('phone must start with 8 or 9');
});
