/**
 * The API reference at /docs (Swagger UI, served by the gateway) shows the event catalogue: the
 * OpenAPI document's `webhooks` section, every event type with its payload (issue 20).
 */
import type { Browser } from 'playwright-core';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../src/events/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { artefact, launchBrowser, phonePage } from './browser.js';

let browser: Browser;
let app: TestApp;

beforeAll(async () => {
  browser = await launchBrowser();
  app = await startTestApp();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

test('/docs lists every webhook event with its payload schema', async () => {
  const { page, problems } = await phonePage(browser, 1280, 900, false);
  await page.goto(`${app.baseUrl}/docs`);
  const section = page.locator('.webhooks');
  await section.waitFor();
  for (const type of [...EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE]) {
    await section.locator('.opblock-summary', { hasText: type }).first().waitFor();
  }
  // One event opened: its headers and its payload, with the documented example.
  await section.locator('.opblock-summary', { hasText: 'payment_request.approved' }).first().click();
  const body = page.locator('.opblock-body').first();
  await body.waitFor();
  const text = await body.innerText();
  for (const shown of ['webhook-id', 'webhook-timestamp', 'webhook-signature', '"type": "payment_request.approved"', '"status": "COMPLETED"', '"paymentReference"']) {
    expect([shown, text.includes(shown)]).toEqual([shown, true]);
  }
  expect(problems).toEqual({ errors: [], cspViolations: [] });
});

test('/docs fits a phone: nothing runs off the right edge at 390 px (screenshots at 390 and 1280 px in .artefacts/e2e)', async () => {
  const { page, problems } = await phonePage(browser, 390, 844, true);
  await page.goto(`${app.baseUrl}/docs`);
  await page.locator('.webhooks .opblock-summary').first().waitFor();
  // One operation opened too: its parameters and responses must fit as well.
  await page.locator('.opblock-summary', { hasText: '/api/v1/wallet/request-payment' }).first().click();
  await page.locator('.opblock-body').first().waitFor();
  // A phone widens its layout viewport to the content, so innerWidth alone would follow the overflow.
  const widths = await page.evaluate(() => {
    const g = globalThis as any;
    return { scroll: g.document.scrollingElement.scrollWidth, inner: g.innerWidth, client: g.document.documentElement.clientWidth };
  });
  expect(widths).toEqual({ scroll: 390, inner: 390, client: 390 });
  await page.screenshot({ path: artefact('docs-390x844.png') });
  const wide = await phonePage(browser, 1280, 800, false);
  await wide.page.goto(`${app.baseUrl}/docs`);
  await wide.page.locator('.webhooks .opblock-summary').first().waitFor();
  expect(await wide.page.evaluate(() => (globalThis as any).document.scrollingElement.scrollWidth <= (globalThis as any).innerWidth)).toBe(true);
  await wide.page.screenshot({ path: artefact('docs-1280x800.png') });
  expect(problems).toEqual({ errors: [], cspViolations: [] });
  expect(wide.problems).toEqual({ errors: [], cspViolations: [] });
});
