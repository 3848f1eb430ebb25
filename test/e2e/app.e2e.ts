/**
 * The wallet-app page (GET /app) in a real headless Chromium against a real gateway: sign in,
 * receive a payment request created through REST live over graphql-ws, approve or reject it on
 * the page, and read the outcome through REST; a countdown reaching EXPIRED; an approval the
 * wallet cannot afford shown in words. Every wait is for an element or a state, never a sleep.
 *
 * `E2E_SCREENSHOT=docs/app.png npm run test:e2e` also refreshes the README's screenshot.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { factories, http, startTestApp, TEST_PIN, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/cli.js';
import { untilSubscribed } from '../helpers/ws.js';
import { until } from '../helpers/expect.js';
import { launchBrowser, payWithPin, phonePage, requestCard, type PageProblems } from './browser.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/**
 * How long a test waits for a request's card before failing: a deadline against a hang, not a
 * measurement. What "live" means is checked by `arrivesLive` (it came over the WebSocket, with no
 * HTTP request by the page in between), not by how fast it came.
 */
const ARRIVAL_DEADLINE_MS = 15_000;

/** What the page sent over HTTP and received over its WebSockets since sign-in. */
interface Traffic {
  requests: string[];
  frames: string[];
  /** Requests sent but not answered yet. */
  pending: Set<unknown>;
}

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
});

/** Opens /app, signs in by typing the username and waits until the page is live (both subscriptions registered). */
async function signIn(app: TestApp, username: string): Promise<{ page: Page; problems: PageProblems; traffic: Traffic }> {
  const opened = await phonePage(browser);
  const { page } = opened;
  const traffic: Traffic = { requests: [], frames: [], pending: new Set() };
  page.on('request', (r) => {
    traffic.requests.push(`${r.method()} ${r.url()}`);
    traffic.pending.add(r);
  });
  page.on('requestfinished', (r) => traffic.pending.delete(r));
  page.on('requestfailed', (r) => traffic.pending.delete(r));
  page.on('websocket', (ws) => ws.on('framereceived', ({ payload }) => traffic.frames.push(String(payload))));
  const before = app.gateway.services.eventHub.stats.subscriptions;
  await page.goto(`${app.baseUrl}/app`);
  await page.fill('#username', username);
  await page.click('#signin-form button[type=submit]');
  await page.locator('#who', { hasText: username }).waitFor();
  await page.locator('#live.on').waitFor();
  await untilSubscribed(app.gateway.services.eventHub, before + 3);
  // The catch-up read the page makes once connected has been answered: from here on it is quiet.
  await until(() => traffic.pending.size === 0, 10_000, 'the page finishing its sign-in requests');
  return { ...opened, traffic };
}

/**
 * Creates a payment request and waits for its card; requires that it arrived live: a WebSocket
 * frame carrying its id reached the page, and the page sent no HTTP request meanwhile (no poll,
 * no reload). The card's arrival is the event waited for; nothing here is timed.
 */
async function arrivesLive(page: Page, traffic: Traffic, create: () => Promise<{ paymentRequestId: string; expiresAt: string }>) {
  const requestsBefore = traffic.requests.length;
  const framesBefore = traffic.frames.length;
  const created = await create();
  await card(page, created.paymentRequestId).waitFor({ timeout: ARRIVAL_DEADLINE_MS });
  expect(traffic.requests.slice(requestsBefore)).toEqual([]);
  expect(traffic.frames.slice(framesBefore).some((f) => f.includes(created.paymentRequestId))).toBe(true);
  return created;
}

async function requestPayment(app: TestApp, secretKey: string, walletId: string, amount: number, description: string, merchantName = 'Corner Café') {
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: secretKey,
    body: { walletId, amount, description, merchantName },
  });
  expect(res.status).toBe(200);
  return res.body as { paymentRequestId: string; expiresAt: string };
}

const card = requestCard;

describe('GET /app in development', () => {
  let app: TestApp;
  let sk: string;

  beforeAll(async () => {
    app = await startTestApp();
    ({ secretKey: sk } = await factories(app).developer('Corner Café'));
  });
  afterAll(async () => {
    await app.close();
  });

  it('a request created through REST appears live; approving it on the page moves the money; REST reads APPROVED and the transaction', async () => {
    // The README's walk-through: alice with 1,000.00 pays Corner Café 12.50 (docs/app.png shows this page).
    const user = await factories(app).user({ balance: 1000, ...(process.env.E2E_SCREENSHOT ? { username: 'alice' } : {}) });
    const { page, problems, traffic } = await signIn(app, user.username);
    await expect(page.locator('#balance').textContent()).resolves.toBe('1,000.00');
    await expect(page.locator('#currency').textContent()).resolves.toBe('ETB');
    await expect(page.locator('#empty').isVisible()).resolves.toBe(true);

    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, sk, user.walletId, 12.5, 'Two flat whites'));

    const text = await card(page, id).innerText();
    expect(text).toContain('Corner Café');
    expect(text).toContain('Two flat whites');
    expect(text).toContain('ETB 12.50');
    expect(text).toMatch(/Expires in [45]:\d\d/);
    await expect(page.locator('#pending-count').textContent()).resolves.toBe('1');

    if (process.env.E2E_SCREENSHOT) {
      const second = await requestPayment(app, sk, user.walletId, 240, 'Order #1042 — groceries', 'Fresh Market');
      await card(page, second.paymentRequestId).waitFor();
      await page.screenshot({ path: path.resolve(ROOT, process.env.E2E_SCREENSHOT) });
      await card(page, second.paymentRequestId).locator('button.reject').click();
      await card(page, second.paymentRequestId).and(page.locator('[data-status="REJECTED"]')).waitFor();
    }

    await payWithPin(page, id);
    await card(page, id).and(page.locator('[data-status="APPROVED"]')).waitFor();
    await page.locator('#balance', { hasText: '987.50' }).waitFor();
    await expect(card(page, id).locator('.status').textContent()).resolves.toBe('Paid');
    // A paid item reads as what it was: its merchant and description, never a transaction id.
    const paid = await card(page, id).innerText();
    expect(paid).toContain('Corner Café');
    expect(paid).toContain('Two flat whites');
    expect(paid).not.toMatch(/Transaction [0-9a-f]{8}/);

    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: sk });
    expect(status.body).toMatchObject({ id, status: 'APPROVED', amount: 12.5, transactionId: expect.stringMatching(UUID) });
    const tx = await http(app.baseUrl, `/api/v1/wallet/transaction/${status.body.transactionId}`, { token: sk });
    expect(tx.status).toBe(200);
    expect(tx.body).toMatchObject({ id: status.body.transactionId, amount: 12.5, status: 'COMPLETED', type: 'WALLET_PAYMENT' });
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it("merchant text is isolated (<bdi>) on the card, the PIN pad and the block question: a right-to-left name cannot reorder the amount beside it", async () => {
    const user = await factories(app).user({ balance: 50 });
    const { page, problems, traffic } = await signIn(app, user.username);
    const name = 'מסעדה 7';
    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, sk, user.walletId, 9, 'ארוחה 2', name));
    await expect(card(page, id).locator('bdi.merchant').textContent()).resolves.toBe(name);
    await expect(card(page, id).locator('.description bdi').textContent()).resolves.toBe('ארוחה 2');
    await card(page, id).locator('button.approve').click();
    await page.locator('#pin-pad').waitFor();
    await expect(page.locator('#pin-for bdi').textContent()).resolves.toBe(name);
    await expect(page.locator('#pin-for').textContent()).resolves.toBe(`Pay ETB 9.00 to ${name}`);
    await page.keyboard.press('Escape');
    await card(page, id).locator('button.block').click();
    await expect(card(page, id).locator('.confirm p bdi').textContent()).resolves.toBe(name);
    // What the gateway would not let through at all: a right-to-left override in the name.
    const refused = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
      token: sk,
      body: { walletId: user.walletId, amount: 1, description: 'x', merchantName: 'Shop \u202Egnp.exe' },
    });
    expect(refused.status).toBe(400);
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('rejecting on the page: REST reads REJECTED without a transaction, the balance is unchanged', async () => {
    const user = await factories(app).user({ balance: 50 });
    const { page, problems, traffic } = await signIn(app, user.username);
    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, sk, user.walletId, 20, 'Unwanted order'));
    await card(page, id).locator('button.reject').click();
    await card(page, id).and(page.locator('[data-status="REJECTED"]')).waitFor();
    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: sk });
    expect(status.body).toMatchObject({ id, status: 'REJECTED', transactionId: null });
    await expect(page.locator('#balance').textContent()).resolves.toBe('50.00');
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('an approval the wallet cannot afford is explained in words; the request stays pending', async () => {
    const user = await factories(app).user({ balance: 5 });
    const { page, traffic } = await signIn(app, user.username);
    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, sk, user.walletId, 80, 'Too expensive'));
    await payWithPin(page, id);
    await card(page, id).locator('.error', { hasText: 'Not enough money in your wallet' }).waitFor();
    await expect(card(page, id).getAttribute('data-status')).resolves.toBe('PENDING');
    await expect(card(page, id).locator('button.approve').isEnabled()).resolves.toBe(true);
    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: sk });
    expect(status.body.status).toBe('PENDING');
    await page.context().close();
  });

  it('requests made before signing in are listed at sign-in (myPendingPaymentRequests); an unknown user is told so', async () => {
    const user = await factories(app).user({ balance: 10 });
    const { paymentRequestId: id } = await requestPayment(app, sk, user.walletId, 1.25, 'Made while offline');
    const { page } = await phonePage(browser);
    await page.goto(`${app.baseUrl}/app`);
    await page.fill('#username', 'no_such_user');
    await page.click('#signin-form button[type=submit]');
    await page.locator('#signin-error', { hasText: 'There is no user "no_such_user"' }).waitFor();
    await page.fill('#username', user.username);
    await page.click('#signin-form button[type=submit]');
    await card(page, id).waitFor();
    await page.context().close();
  });

  it('payments approved elsewhere show: before sign-in in Recent, after sign-in live, with the balance from the server', async () => {
    const user = await factories(app).user({ balance: 100 });
    const approveElsewhere = (id: string) =>
      http(app.baseUrl, '/graphql', {
        token: user.token,
        body: { query: 'mutation($id: ID!, $pin: String!) { approvePaymentRequest(id: $id, verification: { pin: $pin }) { id status } }', variables: { id, pin: TEST_PIN } },
      });
    const before = await requestPayment(app, sk, user.walletId, 20, 'Paid on another phone');
    expect((await approveElsewhere(before.paymentRequestId)).body.data.approvePaymentRequest.status).toBe('APPROVED');
    const { page, problems, traffic } = await signIn(app, user.username);
    await card(page, before.paymentRequestId).and(page.locator('[data-status="APPROVED"]')).waitFor();
    await expect(page.locator('#recent').innerText()).resolves.toContain('Paid on another phone');
    await expect(page.locator('#balance').textContent()).resolves.toBe('80.00');
    const later = await arrivesLive(page, traffic, () => requestPayment(app, sk, user.walletId, 5.25, 'Also paid elsewhere'));
    await approveElsewhere(later.paymentRequestId);
    await card(page, later.paymentRequestId).and(page.locator('[data-status="APPROVED"]')).waitFor();
    await page.locator('#balance', { hasText: '74.75' }).waitFor();
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('Block merchant on a card (confirmed first) rejects the request and lists the merchant; its next request is refused; Unblock lifts it; Report rejects', async () => {
    const user = await factories(app).user({ balance: 50 });
    const { secretKey: pesterer } = await factories(app).developer('Pushy Shop');
    const { page, problems, traffic } = await signIn(app, user.username);
    await expect(page.locator('#blocked-empty').isVisible()).resolves.toBe(true);
    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, pesterer, user.walletId, 9, 'Buy now!', 'Pushy Shop'));

    await card(page, id).locator('button.block').click();
    await card(page, id).locator('.confirm', { hasText: 'Block Pushy Shop?' }).waitFor();
    await card(page, id).locator('.confirm button.danger').click();
    await card(page, id).and(page.locator('[data-status="REJECTED"]')).waitFor();
    await page.locator('#blocked li', { hasText: 'Pushy Shop' }).waitFor();
    expect((await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: pesterer })).body.status).toBe('REJECTED');
    const refused = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
      token: pesterer,
      body: { walletId: user.walletId, amount: 1, description: 'Again', merchantName: 'Pushy Shop' },
    });
    expect(refused.status).toBe(403);

    await page.locator('#blocked li', { hasText: 'Pushy Shop' }).locator('button.unblock').click();
    await page.locator('#blocked-empty').waitFor();
    const { paymentRequestId: again } = await arrivesLive(page, traffic, () => requestPayment(app, pesterer, user.walletId, 2, 'Once more', 'Pushy Shop'));
    await card(page, again).locator('button.report').click();
    await card(page, again).locator('.confirm button.danger').click();
    await card(page, again).and(page.locator('[data-status="REJECTED"]')).waitFor();
    expect((await http(app.baseUrl, `/api/v1/wallet/payment-request/${again}`, { token: pesterer })).body.status).toBe('REJECTED');
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });

  it('the page and its scripts carry a CSP of their own: self only, WebSocket to self; the API keeps its strict one', async () => {
    const res = await fetch(`${app.baseUrl}/app`);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    const api = await fetch(`${app.baseUrl}/api/v1/account/x`);
    expect(api.headers.get('content-security-policy')).toMatch(/^default-src 'none';/);
  });
});

describe('GET /app counting down to EXPIRED', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { PAYMENT_REQUEST_TTL_SECONDS: '3', EXPIRY_SWEEP_INTERVAL_MS: '200' } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('the countdown runs to zero, the card reads Expired, REST reads EXPIRED', async () => {
    const f = factories(app);
    const { secretKey } = await f.developer();
    const user = await f.user({ balance: 10 });
    const { page, problems, traffic } = await signIn(app, user.username);
    const { paymentRequestId: id } = await arrivesLive(page, traffic, () => requestPayment(app, secretKey, user.walletId, 4, 'Quick, before it expires'));
    await card(page, id).locator('.expires', { hasText: /Expires in 0:0[0-3]/ }).waitFor();
    await card(page, id).and(page.locator('[data-status="EXPIRED"]')).waitFor({ timeout: 10_000 });
    await expect(card(page, id).locator('.status').textContent()).resolves.toBe('Expired');
    await expect(card(page, id).locator('button.approve').isDisabled()).resolves.toBe(true);
    const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${id}`, { token: secretKey });
    expect(status.body).toMatchObject({ id, status: 'EXPIRED', transactionId: null });
    expect(problems).toEqual({ errors: [], cspViolations: [] });
    await page.context().close();
  });
});

describe('GET /app in production', () => {
  it('is 404, like the development sign-in', async () => {
    const app = await startTestApp({ env: { APP_ENV: 'production' } });
    try {
      for (const [method, p] of [
        ['GET', '/app'],
        ['POST', '/app/session'],
        ['GET', '/sandbox/assets/app.js'],
      ] as const) {
        const res = await http(app.baseUrl, p, { method, ...(method === 'POST' ? { body: { username: 'alice' } } : {}) });
        expect({ p, status: res.status, body: res.body }).toEqual({ p, status: 404, body: { statusCode: 404, message: 'Not found' } });
      }
    } finally {
      await app.close();
    }
  });
});
