/**
 * Payment links on the wallet-app page (#25) in a real headless Chromium against a real gateway:
 * a link's /pay/{code} opens the page on that request (after sign-in), the payer pays it with
 * their PIN; a pasted link opens the same card; a MANUAL approval shows the available balance.
 * Every wait is for an element or a state, never a sleep.
 */
import type { Browser, Page } from 'playwright-core';
import { factories, http, startTestApp, TEST_PIN, type TestApp } from '../helpers/app.js';
import { launchBrowser, payWithPin, phonePage, requestCard, type PageProblems } from './browser.js';

let browser: Browser;
let app: TestApp;
let f: ReturnType<typeof factories>;
let dev: { secretKey: string };
beforeAll(async () => {
  browser = await launchBrowser();
  app = await startTestApp();
  f = factories(app);
  dev = await f.developer();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const card = requestCard;

async function link(body: Record<string, unknown> = {}) {
  const res = await http(app.baseUrl, '/api/v1/wallet/payment-links', {
    token: dev.secretKey,
    body: { amount: 12.5, description: 'Table 4', merchantName: 'Corner Café', ...body },
  });
  return res.body as { paymentRequestId: string; paymentUrl: string };
}

/** The link's path on this test gateway (paymentUrl names PUBLIC_BASE_URL, here the default localhost:<PORT>). */
const pathOf = (paymentUrl: string) => new URL(paymentUrl).pathname;

/** Pays an open request as a user of the wallet app would (GraphQL, with the factories' PIN). */
async function payLink(id: string, userToken: string): Promise<void> {
  const res = await http(app.baseUrl, '/graphql', { token: userToken, body: { query: `mutation { approvePaymentRequest(id: "${id}", verification: { pin: "${TEST_PIN}" }) { status } }` } });
  expect(res.body).toEqual({ data: { approvePaymentRequest: { status: 'APPROVED' } } });
}

async function signIn(page: Page, username: string): Promise<void> {
  await page.fill('#username', username);
  await page.click('#signin-form button[type=submit]');
  await page.locator('#who', { hasText: username }).waitFor();
}

function noProblems(problems: PageProblems): void {
  expect(problems).toEqual({ errors: [], cspViolations: [] });
}

test('a /pay/{code} link opens the page on the request; the payer pays it with their PIN', async () => {
  const user = await f.user({ balance: 100 });
  const created = await link();
  const { page, problems } = await phonePage(browser);
  await page.goto(`${app.baseUrl}${pathOf(created.paymentUrl)}`);
  expect(new URL(page.url()).pathname).toBe('/app');
  // Before sign-in the page says which payment is waiting: who asks, how much, for what.
  const waiting = page.locator('#waiting');
  await waiting.locator('text=Sign in to pay it.').waitFor();
  expect((await waiting.innerText()).split('\n').filter(Boolean)).toEqual(['Corner Café asks you to pay', 'ETB 12.50', 'Table 4', 'Sign in to pay it.']);
  await signIn(page, user.username);
  expect(await waiting.isVisible()).toBe(false);
  const c = card(page, created.paymentRequestId);
  await c.waitFor();
  expect(await c.innerText()).toContain('Corner Café');
  await payWithPin(page, created.paymentRequestId);
  await c.and(page.locator('[data-status="APPROVED"]')).waitFor();
  const status = await http(app.baseUrl, `/api/v1/wallet/payment-request/${created.paymentRequestId}`, { token: dev.secretKey });
  expect(status.body.status).toBe('APPROVED');
  noProblems(problems);
  await page.context().close();
});

test('before sign-in, a link already paid says so, and an unknown one says there is no such request', async () => {
  const created = await link();
  const payer = await f.user({ balance: 100 });
  // A development page's own read, not the REST API (plain fetch: http() holds answers to schema/openapi.yaml).
  const read = await fetch(`${app.baseUrl}/app/link/${pathOf(created.paymentUrl).split('/pay/')[1]}`);
  expect(await read.json()).toEqual({ merchantName: 'Corner Café', amount: 12.5, currency: 'ETB', description: 'Table 4', status: 'PENDING', expiresAt: expect.any(String) });
  const { page, problems } = await phonePage(browser);
  await page.goto(`${app.baseUrl}${pathOf(created.paymentUrl)}`);
  await page.locator('#waiting', { hasText: 'Sign in to pay it.' }).waitFor();
  await payLink(created.paymentRequestId, payer.token);
  await page.goto(`${app.baseUrl}/app#pay=${pathOf(created.paymentUrl).split('/pay/')[1]}x`);
  await page.locator('#waiting', { hasText: 'No payment request for this link.' }).waitFor();
  await page.goto(`${app.baseUrl}${pathOf(created.paymentUrl)}`);
  await page.locator('#waiting', { hasText: 'This payment request is approved.' }).waitFor();
  noProblems(problems);
  await page.context().close();
});

test('a pasted link opens the same card; a MANUAL approval shows the available balance beside the balance', async () => {
  const user = await f.user({ balance: 100 });
  const created = await link({ capture: 'MANUAL', amount: 30 });
  const { page, problems } = await phonePage(browser);
  await page.goto(`${app.baseUrl}/app`);
  await signIn(page, user.username);
  await expect(page.locator('#available').isHidden()).resolves.toBe(true);
  await page.fill('#link-input', created.paymentUrl);
  await page.click('#link-form button[type=submit]');
  const c = card(page, created.paymentRequestId);
  await c.waitFor();
  await payWithPin(page, created.paymentRequestId);
  await c.and(page.locator('[data-status="APPROVED"]')).waitFor();
  await page.locator('#available', { hasText: '70.00' }).waitFor();
  await page.fill('#link-input', 'not a link');
  await page.click('#link-form button[type=submit]');
  await page.locator('#link-error', { hasText: 'not a payment link' }).waitFor();
  noProblems(problems);
  await page.context().close();
});

test('production: the /pay page renders under its own CSP (its one stylesheet by hash, the QR code inline), no violation', async () => {
  const prod = await startTestApp({
    database: app.database,
    env: {
      APP_ENV: 'production',
      KEY_SIGNING_SECRET: 'test-key-signing-secret-0123456789',
      USER_TOKEN_SECRET: 'test-user-token-secret-0123456789',
      ADMIN_TOKEN: 'test-admin-token-0123456789',
    },
  });
  try {
    const created = await link();
    const { page, problems } = await phonePage(browser);
    await page.goto(`${prod.baseUrl}${pathOf(created.paymentUrl)}`);
    await page.locator('a.open', { hasText: 'Open in wallet app' }).waitFor();
    // The stylesheet applied (allowed by its hash): the button is styled, not a plain link.
    // Runs in the page (no DOM types in this project's compile).
    expect(await page.locator('a.open').evaluate((a) => (globalThis as any).getComputedStyle(a).display)).toBe('block');
    expect(await page.locator('.qr svg').count()).toBe(1);
    noProblems(problems);
    await page.context().close();
  } finally {
    await prod.close();
  }
});
