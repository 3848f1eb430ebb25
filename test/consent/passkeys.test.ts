/**
 * Passkeys (WebAuthn, SPEC §15): registration, listing and removal through the wallet app's
 * GraphQL, and approval challenges that commit to one request. The authenticator is a software
 * one (test/helpers/webauthn.ts) with a real P-256 key: every signature here is checked by the
 * gateway as a phone's would be.
 */
import { useTestApp, gql, http, startSecondInstance, TEST_PIN, type FileFixture, type TestApp } from '../helpers/app.js';
import { subscribe, untilSubscribed, wsClient } from '../helpers/ws.js';
import { balances, requestPayment, statusOf } from '../helpers/payments.js';
import { SoftPasskey, type AssertionResponse } from '../helpers/webauthn.js';
import { UUID_RE } from '../helpers/expect.js';

const ORIGIN = 'http://localhost:3000';
const ENV = { WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGIN: ORIGIN };

let app: TestApp;
let f: FileFixture['f'];
let sk: string;
useTestApp({ env: ENV, developer: true }, (x) => ({ app, f, token: sk } = x));

type User = Awaited<ReturnType<FileFixture['f']['user']>>;

const REGISTRATION_OPTIONS = 'mutation($pin: String!) { passkeyRegistrationOptions(pin: $pin) }';
const REGISTER = 'mutation($response: JSONObject!, $name: String) { registerPasskey(response: $response, name: $name) { id name createdAt lastUsedAt } }';
const MY_PASSKEYS = '{ myPasskeys { id name createdAt lastUsedAt } }';
const REMOVE = 'mutation($id: ID!, $pin: String!) { removePasskey(id: $id, pin: $pin) }';
const CHALLENGE = 'mutation($id: ID!) { approvalChallenge(id: $id) }';

/** Registers a new software passkey for `user` through the wallet app's mutations. */
async function enrol(user: User, name?: string): Promise<{ passkey: SoftPasskey; id: string }> {
  const passkey = new SoftPasskey(ORIGIN);
  const options = await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token);
  const res = await gql(app.baseUrl, REGISTER, { response: passkey.register(options.body.data.passkeyRegistrationOptions), name }, user.token);
  expect(res.body.errors).toBeUndefined();
  return { passkey, id: res.body.data.registerPasskey.id };
}

async function challengeFor(user: User, id: string): Promise<{ challenge: string; allowCredentials: Array<{ id: string }>; userVerification: string; rpId: string }> {
  const res = await gql(app.baseUrl, CHALLENGE, { id }, user.token);
  expect(res.body.errors).toBeUndefined();
  return res.body.data.approvalChallenge;
}

/** The consent seam's passkey check, as approvePaymentRequest runs it: the request as it is now. */
async function verify(user: User, id: string, assertion: AssertionResponse): Promise<boolean> {
  const em = app.db.orm.em.fork();
  const [pr] = await em.execute<Array<{ amount: string; currency: string; merchant_name: string }>>(
    'select amount::text as amount, currency, merchant_name from payment_requests where id = ?',
    [id],
  );
  const subject = { paymentRequestId: id, amount: pr!.amount, currency: pr!.currency, merchantName: pr!.merchant_name };
  return app.gateway.services.passkeys.verifyApproval(em, user.userId, subject, assertion as unknown as Record<string, unknown>);
}

const APPROVE = 'mutation($id: ID!, $passkey: JSONObject!) { approvePaymentRequest(id: $id, verification: { passkey: $passkey }) { id status transactionId } }';

/** approvePaymentRequest with a passkey assertion, as the wallet app sends it. */
const approveWithPasskey = (user: User, id: string, assertion: AssertionResponse) => gql(app.baseUrl, APPROVE, { id, passkey: assertion }, user.token);

const codeOf = (res: { body: { errors?: Array<{ extensions: { code: string } }> } }) => res.body.errors?.[0]?.extensions.code;

describe('registration, listing and removal', () => {
  test('options name our relying party, require user verification and exclude the passkeys already held', async () => {
    const user = await f.user();
    const first = await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token);
    const options = first.body.data.passkeyRegistrationOptions;
    expect(options).toMatchObject({ rp: { id: 'localhost', name: 'Wallet' }, user: { name: user.username }, attestation: 'none', excludeCredentials: [] });
    expect(options.authenticatorSelection.userVerification).toBe('required');
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const { passkey } = await enrol(user);
    const second = await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token);
    expect(second.body.data.passkeyRegistrationOptions.excludeCredentials).toEqual([expect.objectContaining({ id: passkey.id })]);
  });

  test('register, list (never the key), remove; another user can neither see nor remove it', async () => {
    const user = await f.user();
    const other = await f.user();
    const { id } = await enrol(user, 'My phone');
    const listed = await gql(app.baseUrl, MY_PASSKEYS, {}, user.token);
    expect(listed.body.data.myPasskeys).toEqual([{ id, name: 'My phone', createdAt: expect.any(String), lastUsedAt: null }]);
    expect(id).toMatch(UUID_RE);
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, other.token)).body.data.myPasskeys).toEqual([]);
    expect(codeOf(await gql(app.baseUrl, REMOVE, { id, pin: TEST_PIN }, other.token))).toBe('NOT_FOUND');
    expect((await gql(app.baseUrl, REMOVE, { id, pin: TEST_PIN }, user.token)).body.data.removePasskey).toBe(true);
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys).toEqual([]);
    expect(codeOf(await gql(app.baseUrl, REMOVE, { id, pin: TEST_PIN }, user.token))).toBe('NOT_FOUND');
  });

  test('an unnamed passkey is "Passkey"; a name over 64 characters or with control characters is BAD_USER_INPUT', async () => {
    const user = await f.user();
    await enrol(user);
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys.map((p: { name: string }) => p.name)).toEqual(['Passkey']);
    const options = (await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token)).body.data.passkeyRegistrationOptions;
    const res = await gql(app.baseUrl, REGISTER, { response: new SoftPasskey(ORIGIN).register(options), name: 'x'.repeat(65) }, user.token);
    expect(codeOf(res)).toBe('BAD_USER_INPUT');
    const control = await gql(app.baseUrl, REGISTER, { response: new SoftPasskey(ORIGIN).register(options), name: 'my\u001bphone' }, user.token);
    expect(codeOf(control)).toBe('BAD_USER_INPUT');
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys).toHaveLength(1);
  });

  test('a registration is refused (BAD_USER_INPUT, nothing stored) when replayed, from another origin, for another relying party, without user verification, or over a challenge never given', async () => {
    const user = await f.user();
    const options = async () => (await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token)).body.data.passkeyRegistrationOptions;
    const key = new SoftPasskey(ORIGIN);
    const first = key.register(await options());
    expect((await gql(app.baseUrl, REGISTER, { response: first }, user.token)).body.errors).toBeUndefined();
    const refused = [
      first, // the same response again: its challenge is spent
      new SoftPasskey(ORIGIN).register(await options(), { origin: 'http://evil.localhost:3000' }),
      new SoftPasskey(ORIGIN).register(await options(), { rpId: 'example.com' }),
      new SoftPasskey(ORIGIN).register(await options(), { userVerified: false }),
      new SoftPasskey(ORIGIN).register({ challenge: Buffer.alloc(32, 7).toString('base64url') }),
      { not: 'a credential' },
    ];
    for (const response of refused) {
      const res = await gql(app.baseUrl, REGISTER, { response }, user.token);
      expect({ code: codeOf(res), message: res.body.errors?.[0]?.message }).toEqual({
        code: 'BAD_USER_INPUT',
        message: 'The passkey could not be verified; ask for new registration options and try again',
      });
    }
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys).toHaveLength(1);
  });

  test("one user's registration options cannot register a passkey for another", async () => {
    const alice = await f.user();
    const mallory = await f.user();
    const options = (await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, alice.token)).body.data.passkeyRegistrationOptions;
    const res = await gql(app.baseUrl, REGISTER, { response: new SoftPasskey(ORIGIN).register(options) }, mallory.token);
    expect(codeOf(res)).toBe('BAD_USER_INPUT');
  });

  test('a secret key is FORBIDDEN; no token is UNAUTHENTICATED', async () => {
    expect(codeOf(await gql(app.baseUrl, MY_PASSKEYS, {}, sk))).toBe('FORBIDDEN');
    expect(codeOf(await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }))).toBe('UNAUTHENTICATED');
  });
});

describe('approvalChallenge', () => {
  test('request options for my PENDING request: my credentials in allowCredentials, user verification required', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 12.5);
    const options = await challengeFor(user, id);
    expect(options).toMatchObject({ rpId: 'localhost', userVerification: 'required' });
    expect(options.allowCredentials).toEqual([expect.objectContaining({ id: passkey.id, type: 'public-key' })]);
    expect(options.challenge).toMatch(/^[A-Za-z0-9_-]{64}$/);
  });

  test('a user keeps at most 20 live challenges: asking again and again drops the oldest, which then no longer verifies', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 2);
    const first = await challengeFor(user, id);
    for (let i = 0; i < 20; i++) await challengeFor(user, id);
    const [{ n }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from webauthn_challenges where user_id = ?', [user.userId]);
    expect(Number(n)).toBe(20);
    expect(await verify(user, id, passkey.assert(first))).toBe(false);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id)))).toBe(true);
  });

  test('allowCredentials is empty for a user with no passkey', async () => {
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 1);
    expect((await challengeFor(user, id)).allowCredentials).toEqual([]);
  });

  test("another user's request is NOT_FOUND, a decided one PAYMENT_REQUEST_NOT_PENDING, a malformed id BAD_USER_INPUT", async () => {
    const user = await f.user({ balance: 50 });
    const other = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 1);
    expect(codeOf(await gql(app.baseUrl, CHALLENGE, { id }, other.token))).toBe('NOT_FOUND');
    expect(codeOf(await gql(app.baseUrl, CHALLENGE, { id: 'nope' }, user.token))).toBe('BAD_USER_INPUT');
    await gql(app.baseUrl, 'mutation($id: ID!) { rejectPaymentRequest(id: $id) { id } }', { id }, user.token);
    expect(codeOf(await gql(app.baseUrl, CHALLENGE, { id }, user.token))).toBe('PAYMENT_REQUEST_NOT_PENDING');
  });
});

describe('the approval verifier (the consent seam)', () => {
  test('an assertion over the challenge verifies once; the same assertion replayed fails; last use is recorded', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey, id: passkeyId } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 12.5);
    const assertion = passkey.assert(await challengeFor(user, id));
    expect(await verify(user, id, assertion)).toBe(true);
    expect(await verify(user, id, assertion)).toBe(false);
    const [listed] = (await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys;
    expect(listed).toMatchObject({ id: passkeyId, lastUsedAt: expect.any(String) });
  });

  test('two parallel uses of one assertion: exactly one verifies', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 3);
    const assertion = passkey.assert(await challengeFor(user, id));
    const results = await Promise.all(Array.from({ length: 6 }, () => verify(user, id, assertion)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  test('an assertion made for request A does not approve request B (same amount, merchant and payer)', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const a = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const b = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const forA = passkey.assert(await challengeFor(user, a));
    await challengeFor(user, b); // B has a live challenge of its own too
    expect(await verify(user, b, forA)).toBe(false);
    expect(await verify(user, a, passkey.assert(await challengeFor(user, a)))).toBe(true);
  });

  test('a challenge made before the amount (or the merchant name) changed no longer verifies', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const em = app.db.orm.em.fork();
    const before = await challengeFor(user, id);
    await em.execute('update payment_requests set amount = 45 where id = ?', [id]);
    expect(await verify(user, id, passkey.assert(before))).toBe(false);
    const renamed = await challengeFor(user, id);
    await em.execute("update payment_requests set merchant_name = 'Someone Else' where id = ?", [id]);
    expect(await verify(user, id, passkey.assert(renamed))).toBe(false);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id)))).toBe(true);
  });

  test("another user's passkey cannot approve, even over a challenge of the request's owner", async () => {
    const alice = await f.user({ balance: 50 });
    const mallory = await f.user({ balance: 50 });
    const { passkey: mallorys } = await enrol(mallory);
    await enrol(alice);
    const id = await requestPayment(app.baseUrl, sk, alice.walletId, 5);
    expect(await verify(alice, id, mallorys.assert(await challengeFor(alice, id)))).toBe(false);
    // Nor can Mallory obtain a challenge for Alice's request.
    expect(codeOf(await gql(app.baseUrl, CHALLENGE, { id }, mallory.token))).toBe('NOT_FOUND');
  });

  test('a sign counter that does not go up fails (a cloned authenticator); one that does verifies', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id), { counter: 7 }))).toBe(true);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id), { counter: 7 }))).toBe(false);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id), { counter: 3 }))).toBe(false);
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id), { counter: 8 }))).toBe(true);
  });

  test('a wrong signature, no user verification, another origin or relying party, or a lapsed challenge: false, never an error', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const impostor = new SoftPasskey(ORIGIN);
    const cases: Array<[string, () => Promise<AssertionResponse>]> = [
      ['another key', async () => passkey.assert(await challengeFor(user, id), { signWith: impostor.keys.privateKey })],
      ['no user verification', async () => passkey.assert(await challengeFor(user, id), { userVerified: false })],
      ['another origin', async () => passkey.assert(await challengeFor(user, id), { origin: 'https://phish.example' })],
      ['another relying party', async () => passkey.assert(await challengeFor(user, id), { rpId: 'example.com' })],
      [
        'a lapsed challenge',
        async () => {
          const options = await challengeFor(user, id);
          await app.db.orm.em.fork().execute("update webauthn_challenges set created_at = now() - interval '1 hour', expires_at = now() - interval '1 second' where challenge = ?", [options.challenge]);
          return passkey.assert(options);
        },
      ],
      ['a challenge the gateway never gave', async () => passkey.assert({ challenge: Buffer.alloc(48, 1).toString('base64url') })],
    ];
    for (const [name, make] of cases) expect({ name, verified: await verify(user, id, await make()) }).toEqual({ name, verified: false });
    for (const junk of [{}, { id: 'x', response: 'y' }, { id: passkey.id, rawId: passkey.id, type: 'public-key', response: { clientDataJSON: '!!' } }]) {
      expect(await verify(user, id, junk as unknown as AssertionResponse)).toBe(false);
    }
    expect(await verify(user, id, passkey.assert(await challengeFor(user, id)))).toBe(true);
  });
});

describe('approvePaymentRequest(id, verification: { passkey })', () => {
  test('a passkey approval moves the money once; a second approval with the same assertion changes nothing', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const dev = await f.developer('Passkey Shop');
    const id = await requestPayment(app.baseUrl, dev.secretKey, user.walletId, 12.5);
    const assertion = passkey.assert(await challengeFor(user, id));
    const ok = await approveWithPasskey(user, id, assertion);
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.approvePaymentRequest).toMatchObject({ id, status: 'APPROVED', transactionId: expect.stringMatching(UUID_RE) });
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 37.5, developer: 12.5 });
    const again = await approveWithPasskey(user, id, assertion);
    // The request is no longer PENDING: that is what a second approval of it meets first.
    expect(codeOf(again)).toBe('PAYMENT_REQUEST_NOT_PENDING');
    expect(await balances(app.db, user.walletId, dev.developerId)).toEqual({ wallet: 37.5, developer: 12.5 });
  });

  test('an open payment link is paid with a passkey like any request: the challenge is served to any user, the approval binds it to the payer', async () => {
    const payer = await f.user({ balance: 50 });
    const { passkey } = await enrol(payer);
    const dev = await f.developer('Till');
    const link = await http(app.baseUrl, '/api/v1/wallet/payment-links', {
      token: dev.secretKey,
      body: { amount: 7.25, description: 'Table 4', merchantName: 'Till Café' },
    });
    expect(link.status).toBe(200);
    const id = link.body.paymentRequestId as string;
    const ok = await approveWithPasskey(payer, id, passkey.assert(await challengeFor(payer, id)));
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.approvePaymentRequest).toMatchObject({ id, status: 'APPROVED' });
    expect(await balances(app.db, payer.walletId, dev.developerId)).toEqual({ wallet: 42.75, developer: 7.25 });
    // Paid now: another user gets no challenge for it, with the answer the approval gives (the one policy).
    const other = await f.user();
    expect(codeOf(await gql(app.baseUrl, 'mutation($id: ID!) { approvalChallenge(id: $id) }', { id }, other.token))).toBe('PAYMENT_REQUEST_NOT_PENDING');
    expect(codeOf(await gql(app.baseUrl, 'mutation($id: ID!) { approvePaymentRequest(id: $id, verification: { pin: "135790" }) { id } }', { id }, other.token))).toBe(
      'PAYMENT_REQUEST_NOT_PENDING',
    );
  });

  test('an assertion spent on an approval that failed (insufficient funds) cannot be replayed once the wallet can pay: VERIFICATION_FAILED', async () => {
    const user = await f.user({ balance: 1 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const assertion = passkey.assert(await challengeFor(user, id));
    expect(codeOf(await approveWithPasskey(user, id, assertion))).toBe('INSUFFICIENT_FUNDS');
    await app.gateway.services.accounts.topUp(app.gateway.services.works.begin(), user.walletId, 10);
    expect(codeOf(await approveWithPasskey(user, id, assertion))).toBe('VERIFICATION_FAILED');
    expect((await statusOf(app.baseUrl, sk, id)).status).toBe('PENDING');
    expect((await approveWithPasskey(user, id, passkey.assert(await challengeFor(user, id)))).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test("an assertion for request A presented for request B is VERIFICATION_FAILED and B stays PENDING; A's still approves A", async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const a = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const b = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const forA = passkey.assert(await challengeFor(user, a));
    await challengeFor(user, b);
    const wrong = await approveWithPasskey(user, b, forA);
    expect({ code: codeOf(wrong), data: wrong.body.data }).toEqual({ code: 'VERIFICATION_FAILED', data: null });
    expect((await statusOf(app.baseUrl, sk, b)).status).toBe('PENDING');
    expect((await approveWithPasskey(user, a, forA)).body.data.approvePaymentRequest.status).toBe('APPROVED');
  });

  test("another user's passkey cannot approve: VERIFICATION_FAILED, the request stays PENDING, no money moves", async () => {
    const alice = await f.user({ balance: 50 });
    const mallory = await f.user({ balance: 50 });
    const { passkey: mallorys } = await enrol(mallory);
    const id = await requestPayment(app.baseUrl, sk, alice.walletId, 5);
    const res = await approveWithPasskey(alice, id, mallorys.assert(await challengeFor(alice, id)));
    expect(codeOf(res)).toBe('VERIFICATION_FAILED');
    expect((await statusOf(app.baseUrl, sk, id)).status).toBe('PENDING');
    const [wallet] = await app.db.orm.em.fork().execute<Array<{ balance: string }>>('select balance from wallets where id = ?', [alice.walletId]);
    expect(wallet!.balance).toBe('50.00');
  });

  test('a failed passkey counts toward the lock like a wrong PIN', async () => {
    const user = await f.user({ balance: 50 });
    const { passkey } = await enrol(user);
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 5);
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) codes.push(codeOf(await approveWithPasskey(user, id, passkey.assert(await challengeFor(user, id), { userVerified: false })))!);
    expect(codes).toEqual(['VERIFICATION_FAILED', 'VERIFICATION_FAILED', 'VERIFICATION_FAILED', 'VERIFICATION_FAILED', 'VERIFICATION_FAILED', 'VERIFICATION_LOCKED']);
  });
});

describe('the PIN guards every change to how the wallet approves (#30)', () => {
  test('the attack: a session token alone enrols a passkey (the software authenticator) and then approves with it: no passkey is registered, the approval fails, no money moves', async () => {
    const dave = await f.user({ balance: 50 });
    const dev = await f.developer('Stolen Session Shop');
    const attacker = new SoftPasskey(ORIGIN);
    // What a client holding only dave's token can ask for: options without the PIN.
    const options = await gql(app.baseUrl, 'mutation { passkeyRegistrationOptions }', {}, dave.token);
    const given = options.body.data?.passkeyRegistrationOptions ?? { challenge: Buffer.alloc(32, 9).toString('base64url') };
    const registered = await gql(app.baseUrl, REGISTER, { response: attacker.register(given), name: 'Not dave' }, dave.token);
    expect(registered.body.data?.registerPasskey ?? null).toBeNull();
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, dave.token)).body.data.myPasskeys).toEqual([]);
    const id = await requestPayment(app.baseUrl, dev.secretKey, dave.walletId, 20);
    const res = await approveWithPasskey(dave, id, attacker.assert(await challengeFor(dave, id)));
    expect(codeOf(res)).toBe('VERIFICATION_FAILED');
    expect((await statusOf(app.baseUrl, dev.secretKey, id)).status).toBe('PENDING');
    expect(await balances(app.db, dave.walletId, dev.developerId)).toEqual({ wallet: 50, developer: 0 });
  });

  test('registration options with a wrong PIN are VERIFICATION_FAILED and count toward the lock like an approval; a malformed PIN is BAD_USER_INPUT and counts nothing', async () => {
    const user = await f.user({ balance: 50 });
    expect(codeOf(await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: '12ab' }, user.token))).toBe('BAD_USER_INPUT');
    const codes: string[] = [];
    for (let i = 0; i < 5; i++) codes.push(codeOf(await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: '000001' }, user.token))!);
    expect(codes).toEqual(Array(5).fill('VERIFICATION_FAILED'));
    // The five wrong PINs locked the wallet's approvals too, and the right PIN no longer gets options.
    expect(codeOf(await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: TEST_PIN }, user.token))).toBe('VERIFICATION_LOCKED');
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 1);
    const approve = 'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { status } }';
    expect(codeOf(await gql(app.baseUrl, approve, { id, pin: TEST_PIN }, user.token))).toBe('VERIFICATION_LOCKED');
    const [{ n }] = await app.db.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from webauthn_challenges where user_id = ?', [user.userId]);
    expect(Number(n)).toBe(0);
  });

  test('a wrong PIN before the approvals of a wallet that was failing: the count is shared (two wrong approvals + three wrong options = locked)', async () => {
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 1);
    const approve = 'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { status } }';
    for (let i = 0; i < 2; i++) expect(codeOf(await gql(app.baseUrl, approve, { id, pin: '000001' }, user.token))).toBe('VERIFICATION_FAILED');
    for (let i = 0; i < 3; i++) expect(codeOf(await gql(app.baseUrl, REGISTRATION_OPTIONS, { pin: '000001' }, user.token))).toBe('VERIFICATION_FAILED');
    expect(codeOf(await gql(app.baseUrl, approve, { id, pin: TEST_PIN }, user.token))).toBe('VERIFICATION_LOCKED');
  });

  test('registerPasskey accepts only a challenge issued after the PIN: an approval challenge, or one the gateway never issued, registers nothing', async () => {
    const user = await f.user({ balance: 50 });
    const id = await requestPayment(app.baseUrl, sk, user.walletId, 1);
    const approvalOptions = await challengeFor(user, id);
    for (const challenge of [approvalOptions.challenge, Buffer.alloc(32, 3).toString('base64url')]) {
      const res = await gql(app.baseUrl, REGISTER, { response: new SoftPasskey(ORIGIN).register({ challenge }) }, user.token);
      expect(codeOf(res)).toBe('BAD_USER_INPUT');
    }
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys).toEqual([]);
  });

  test('removePasskey needs the PIN: a wrong one is VERIFICATION_FAILED (counted) and the passkey stays; without one the operation is refused', async () => {
    const user = await f.user({ balance: 50 });
    const { id } = await enrol(user);
    const wrong = await gql(app.baseUrl, REMOVE, { id, pin: '000001' }, user.token);
    expect({ code: codeOf(wrong), data: wrong.body.data }).toEqual({ code: 'VERIFICATION_FAILED', data: null });
    expect(wrong.body.errors[0].message).toMatch(/4 attempts left/);
    const bare = await gql(app.baseUrl, 'mutation($id: ID!) { removePasskey(id: $id) }', { id }, user.token);
    expect(bare.body.errors?.[0]?.message).toMatch(/argument "pin" of type "String!" is required/);
    expect((await gql(app.baseUrl, MY_PASSKEYS, {}, user.token)).body.data.myPasskeys).toHaveLength(1);
    expect((await gql(app.baseUrl, REMOVE, { id, pin: TEST_PIN }, user.token)).body.data.removePasskey).toBe(true);
  });
});

describe('the user learns of each passkey added or removed (passkeyChanged)', () => {
  const NOTICES = 'subscription { passkeyChanged { change at passkey { id name createdAt lastUsedAt } } }';

  test('a device of the user subscribed on another instance hears ADDED then REMOVED; another user hears nothing; merchants never see these events', async () => {
    const second = await startSecondInstance(app, ENV);
    const user = await f.user({ balance: 50 });
    const other = await f.user({ balance: 50 });
    const phone = wsClient(second.baseUrl, user.token);
    const stranger = wsClient(second.baseUrl, other.token);
    try {
      const before = second.gateway.services.eventHub.stats.subscriptions;
      const mine = subscribe(phone, NOTICES);
      const theirs = subscribe(stranger, NOTICES);
      await untilSubscribed(second.gateway.services.eventHub, before + 2);
      const { id } = await enrol(user, 'Laptop');
      const added = (await mine.next()).passkeyChanged;
      expect(added).toEqual({ change: 'ADDED', at: expect.any(String), passkey: { id, name: 'Laptop', createdAt: expect.any(String), lastUsedAt: null } });
      expect((await gql(app.baseUrl, REMOVE, { id, pin: TEST_PIN }, user.token)).body.data.removePasskey).toBe(true);
      expect((await mine.next()).passkeyChanged).toMatchObject({ change: 'REMOVED', passkey: { id, name: 'Laptop' } });
      // A wrong PIN changes nothing, so tells nothing.
      const { id: kept } = await enrol(user, 'Phone');
      expect((await mine.next()).passkeyChanged).toMatchObject({ change: 'ADDED', passkey: { id: kept } });
      expect(codeOf(await gql(app.baseUrl, REMOVE, { id: kept, pin: '000001' }, user.token))).toBe('VERIFICATION_FAILED');
      expect(theirs.values).toEqual([]);
      expect(mine.values).toHaveLength(3);
      expect([...mine.errors, ...theirs.errors]).toEqual([]);
      mine.dispose();
      theirs.dispose();
      // No merchant's: no developer, no webhook delivery, and the events API of any developer does not list them.
      const rows = await app.db.orm.em.fork().execute<Array<{ type: string; developer_id: string | null; deliveries: string }>>(
        `select e.type, e.developer_id, (select count(*) from webhook_deliveries d where d.event_id = e.id) as deliveries
           from events e where e.user_id = ? order by e.position`,
        [user.userId],
      );
      expect(rows.map((r) => [r.type, r.developer_id, Number(r.deliveries)])).toEqual([
        ['passkey.added', null, 0],
        ['passkey.removed', null, 0],
        ['passkey.added', null, 0],
      ]);
      const listed = await http(app.baseUrl, '/api/v1/events?limit=100', { token: sk });
      expect(listed.status).toBe(200);
      expect((listed.body.data as Array<{ type: string }>).filter((e) => e.type.startsWith('passkey.'))).toEqual([]);
    } finally {
      await Promise.all([phone.dispose(), stranger.dispose()]);
      await second.close();
    }
  });
});
