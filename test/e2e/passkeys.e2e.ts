/**
 * Approving on /app in a real headless Chromium: a real passkey ceremony with the DevTools
 * protocol's virtual authenticator (a platform authenticator with user verification, driven
 * through playwright-core's CDP session), and the PIN pad at 390×844 by keyboard alone.
 *
 * The page is served on http://localhost:<port>, not 127.0.0.1: an IP address is not a valid
 * relying-party id, and the gateway's WEBAUTHN_ORIGIN names that port. Screenshots of each step
 * are left in .artefacts/e2e/ (git-ignored; E2E_ARTEFACTS to move them).
 */
import { createServer } from 'node:net';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { factories, http, startTestApp, TEST_PIN, type TestApp } from '../helpers/app.js';
import { untilSubscribed } from '../helpers/ws.js';
import { SoftPasskey } from '../helpers/webauthn.js';
import { artefact, launchBrowser, phonePage, type PageProblems } from './browser.js';

/** A port free right now on the loopback interface (the gateway's origin must be known before it starts). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

let browser: Browser;
let app: TestApp;
let origin: string;
let sk: string;

beforeAll(async () => {
  browser = await launchBrowser();
  const port = await freePort();
  origin = `http://localhost:${port}`;
  app = await startTestApp({ port, env: { WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGIN: origin } });
  ({ secretKey: sk } = await factories(app).developer('Corner Café'));
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const card = (page: Page, id: string) => page.locator(`li.request[data-id="${id}"]`);
const shot = (page: Page, name: string) => page.screenshot({ path: artefact(`${name}.png`) });

async function requestPayment(walletId: string, amount: number, description: string): Promise<string> {
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', { token: sk, body: { walletId, amount, description, merchantName: 'Corner Café' } });
  expect(res.status).toBe(200);
  return res.body.paymentRequestId as string;
}

const statusOf = async (id: string) => (await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: sk })).body;

/** Opens /app on http://localhost:<port> at 390×844 and signs in; waits until the page is live. */
async function signIn(username: string): Promise<{ page: Page; problems: PageProblems }> {
  const opened = await phonePage(browser);
  const before = app.gateway.services.eventHub.stats.subscriptions;
  await opened.page.goto(`${origin}/app`);
  await opened.page.fill('#username', username);
  await opened.page.click('#signin-form button[type=submit]');
  await opened.page.locator('#who', { hasText: username }).waitFor();
  await opened.page.locator('#live.on').waitFor();
  await untilSubscribed(app.gateway.services.eventHub, before + 3);
  return opened;
}

/** A virtual platform authenticator (CTAP2, internal transport, resident keys, user verified) on the page's browser context. */
async function virtualAuthenticator(page: Page): Promise<{ cdp: CDPSession; authenticatorId: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return { cdp, authenticatorId };
}

/** Add a passkey on /app: the PIN on the pad first (the gateway gives registration options only then), then the ceremony. */
async function addPasskey(page: Page, pin = TEST_PIN): Promise<void> {
  await page.locator('#add-passkey').click();
  await page.locator('#pin-pad').waitFor();
  await expect(page.locator('#pin-for').textContent()).resolves.toBe('Add a passkey to approve payments');
  for (const digit of pin) await page.locator(`#pin-pad .key[data-key="${digit}"]`).click();
  await page.locator('#pin-ok').click();
}

describe('/app with a passkey (virtual authenticator)', () => {
  it('enrols a passkey, pays a request made through REST with it; REST reads APPROVED; the authenticator signed once', async () => {
    const user = await factories(app).user({ balance: 100 });
    const { page, problems } = await signIn(user.username);
    const { cdp, authenticatorId } = await virtualAuthenticator(page);

    // A wrong PIN is said on the pad and registers nothing; the right one enrols.
    await addPasskey(page, '000001');
    await page.locator('#pin-error:not([hidden])').waitFor();
    await expect((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials).toEqual([]);
    await page.keyboard.press('Escape');
    await page.locator('#pin-pad').waitFor({ state: 'hidden' });
    await addPasskey(page);
    await page.locator('#passkeys li').first().waitFor();
    await expect(page.locator('#passkeys li').count()).resolves.toBe(1);
    // The page hears of it too (passkeyChanged), as every device of the user does.
    await page.locator('#security-notice:not([hidden])', { hasText: 'was added to your wallet' }).waitFor();
    const [stored] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    expect(stored).toMatchObject({ rpId: 'localhost', isResidentCredential: true });
    const listed = await http(app.baseUrl, '/graphql', { token: user.token, body: { query: '{ myPasskeys { id name } }' } });
    expect(listed.body.data.myPasskeys).toHaveLength(1);

    const id = await requestPayment(user.walletId, 12.5, 'Two flat whites');
    await card(page, id).waitFor();
    const payWithPasskey = card(page, id).locator('button.passkey');
    await expect(payWithPasskey.isVisible()).resolves.toBe(true);
    await shot(page, 'passkey-1-request');
    await payWithPasskey.click();
    await card(page, id).and(page.locator('[data-status="APPROVED"]')).waitFor();
    await page.locator('#balance', { hasText: '87.50' }).waitFor();
    await shot(page, 'passkey-2-paid');

    expect(await statusOf(id)).toMatchObject({ id, status: 'APPROVED', amount: 12.5 });
    const [after] = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
    expect(after!.signCount).toBeGreaterThan(stored!.signCount);
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('a ceremony where the person is not verified does not pay: the card says so, the request stays PENDING', async () => {
    const user = await factories(app).user({ balance: 100 });
    const { page } = await signIn(user.username);
    const { cdp, authenticatorId } = await virtualAuthenticator(page);
    await addPasskey(page);
    await page.locator('#passkeys li').first().waitFor();
    // The person does not pass the fingerprint/face check this time.
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
    const id = await requestPayment(user.walletId, 4, 'Not verified');
    await card(page, id).waitFor();
    await card(page, id).locator('button.passkey').click();
    await card(page, id).locator('.error').waitFor();
    await expect(card(page, id).getAttribute('data-status')).resolves.toBe('PENDING');
    expect((await statusOf(id)).status).toBe('PENDING');
    await page.context().close();
  });

  it('a passkey added elsewhere (another device, through the PIN) is told on the page at once and joins the list; its removal too', async () => {
    const user = await factories(app).user({ balance: 100 });
    const { page, problems } = await signIn(user.username);
    const gql = (query: string, variables: Record<string, unknown>) => http(app.baseUrl, '/graphql', { token: user.token, body: { query, variables } });
    const options = await gql('mutation($pin: String!) { passkeyRegistrationOptions(pin: $pin) }', { pin: TEST_PIN });
    const registered = await gql('mutation($r: JSONObject!) { registerPasskey(response: $r, name: "Old tablet") { id } }', {
      r: new SoftPasskey(origin).register(options.body.data.passkeyRegistrationOptions),
    });
    const id = registered.body.data.registerPasskey.id as string;
    await page.locator('#security-notice:not([hidden])', { hasText: 'A passkey "Old tablet" was added to your wallet' }).waitFor();
    await page.locator('#passkeys li', { hasText: 'Old tablet' }).waitFor();
    await shot(page, 'passkey-3-added-elsewhere');
    // Removed on the page: its Remove asks for the PIN on the pad first.
    await page.locator('#passkeys li button.remove').click();
    await page.locator('#pin-pad').waitFor();
    await expect(page.locator('#pin-for').textContent()).resolves.toBe('Remove the passkey Old tablet');
    for (const digit of TEST_PIN) await page.locator(`#pin-pad .key[data-key="${digit}"]`).click();
    await page.locator('#pin-ok').click();
    await page.locator('#security-notice:not([hidden])', { hasText: 'The passkey "Old tablet" was removed' }).waitFor();
    expect((await gql('{ myPasskeys { id } }', {})).body.data.myPasskeys).toEqual([]);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await page.locator('#passkeys li').first().waitFor({ state: 'detached' });
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });
});

describe('/app PIN pad (390×844, by keyboard alone; and 1280×800)', () => {
  it('Enter on Pay opens the pad with focus in it; digits, Backspace and Enter work; a wrong PIN is said and changes nothing; the right one pays', async () => {
    const user = await factories(app).user({ balance: 50 });
    const { page, problems } = await signIn(user.username);
    const id = await requestPayment(user.walletId, 7.5, 'Typed, not tapped');
    await card(page, id).waitFor();

    await card(page, id).locator('button.approve').focus();
    await page.keyboard.press('Enter');
    await page.locator('#pin-pad').waitFor();
    await expect(page.evaluate("document.getElementById('pin-pad').contains(document.activeElement)")).resolves.toBe(true);
    await expect(page.locator('#pin-for').textContent()).resolves.toBe('Pay ETB 7.50 to Corner Café');

    // Big enough to hit with a thumb on a phone; the pad fits the screen.
    for (const key of await page.locator('#pin-pad .key').all()) {
      const box = (await key.boundingBox())!;
      expect(box.height).toBeGreaterThanOrEqual(48);
      expect(box.width).toBeGreaterThanOrEqual(48);
      expect(box.y + box.height).toBeLessThanOrEqual(844);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }

    await page.keyboard.type('000');
    await expect(page.locator('#pin-ok').isDisabled()).resolves.toBe(true);
    await page.keyboard.type('0');
    await expect(page.locator('#pin-pad .dot.on').count()).resolves.toBe(4);
    // Masked: no digit is on the page.
    await expect(page.locator('#pin-pad').innerText()).resolves.not.toMatch(/0000/);
    await shot(page, 'pin-1-typed');
    await page.keyboard.press('Enter');
    await page.locator('#pin-error', { hasText: 'Wrong PIN' }).waitFor();
    await shot(page, 'pin-2-wrong');
    expect((await statusOf(id)).status).toBe('PENDING');
    await expect(page.locator('#pin-pad .dot.on').count()).resolves.toBe(0);

    // Seven digits typed: the seventh is ignored; Backspace takes the last one back.
    await page.keyboard.type(`${TEST_PIN}9`);
    await expect(page.locator('#pin-pad .dot.on').count()).resolves.toBe(6);
    await page.keyboard.press('Backspace');
    await expect(page.locator('#pin-pad .dot.on').count()).resolves.toBe(5);
    await page.keyboard.type(TEST_PIN.slice(-1));
    await page.keyboard.press('Enter');
    await page.locator('#pin-pad').waitFor({ state: 'hidden' });
    await card(page, id).and(page.locator('[data-status="APPROVED"]')).waitFor();
    await page.locator('#balance', { hasText: '42.50' }).waitFor();
    await shot(page, 'pin-3-paid');
    expect((await statusOf(id)).status).toBe('APPROVED');
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('wrong PINs until the lock: the pad says each failure, then closes and the card says approvals are locked', async () => {
    const user = await factories(app).user({ balance: 50 });
    const { page, problems } = await signIn(user.username);
    const id = await requestPayment(user.walletId, 2, 'Guessing');
    await card(page, id).waitFor();
    await card(page, id).locator('button.approve').click();
    await page.locator('#pin-pad').waitFor();
    let failures = 0;
    while (await page.locator('#pin-pad').isVisible()) {
      expect(failures).toBeLessThan(10);
      await page.keyboard.type('9999'); // typing hides the previous answer
      await expect(page.locator('#pin-error').isHidden()).resolves.toBe(true);
      await page.keyboard.press('Enter');
      // The answer lands on the pad (failed) or on the card (locked: the pad closes).
      await page.locator('#pin-error:not([hidden]), #pin-pad[hidden]').first().waitFor({ state: 'attached' });
      if (await page.locator('#pin-pad').isVisible()) {
        await expect(page.locator('#pin-error').textContent()).resolves.toMatch(/^Wrong PIN/);
        failures++;
      }
    }
    await card(page, id).locator('.error', { hasText: /locked/i }).waitFor();
    await shot(page, 'pin-4-locked');
    expect(failures).toBe(app.config.pinMaxAttempts);
    expect((await statusOf(id)).status).toBe('PENDING');
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('at 1280×800 the pad is a dialog in the middle of the screen, whole and on top', async () => {
    const user = await factories(app).user({ balance: 50 });
    const opened = await phonePage(browser, 1280, 800, false);
    const { page } = opened;
    await page.goto(`${origin}/app`);
    await page.fill('#username', user.username);
    await page.keyboard.press('Enter');
    await page.locator('#live.on').waitFor();
    const id = await requestPayment(user.walletId, 1.25, 'On a laptop');
    await card(page, id).waitFor();
    await card(page, id).locator('button.approve').click();
    const box = (await page.locator('#pin-body').boundingBox())!;
    expect(box.x).toBeGreaterThan(0);
    expect(box.y).toBeGreaterThan(0);
    expect(box.x + box.width).toBeLessThan(1280);
    expect(box.y + box.height).toBeLessThan(800);
    expect(Math.abs(box.x + box.width / 2 - 640)).toBeLessThanOrEqual(2);
    await shot(page, 'pin-5-desktop');
    await page.keyboard.press('Escape');
    await page.context().close();
  });

  it('Escape closes the pad and gives focus back to Pay; nothing is sent', async () => {
    const user = await factories(app).user({ balance: 50 });
    const { page } = await signIn(user.username);
    const id = await requestPayment(user.walletId, 3, 'Changed my mind');
    await card(page, id).waitFor();
    await card(page, id).locator('button.approve').focus();
    await page.keyboard.press('Enter');
    await page.locator('#pin-pad').waitFor();
    await page.keyboard.type('1234');
    const sent: string[] = [];
    page.on('request', (r) => sent.push(r.url()));
    await page.keyboard.press('Escape');
    await page.locator('#pin-pad').waitFor({ state: 'hidden' });
    await expect(page.evaluate("document.activeElement.classList.contains('approve')")).resolves.toBe(true);
    expect(sent).toEqual([]);
    expect((await statusOf(id)).status).toBe('PENDING');
    await page.context().close();
  });
});
