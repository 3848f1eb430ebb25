/**
 * The API reference at /docs (Swagger UI, served by the gateway) shows the event catalogue: the
 * OpenAPI document's `webhooks` section, every event type with its payload (issue 20).
 */
import type { Browser } from 'playwright-core';
import { EVENT_TYPES, WEBHOOK_TEST_EVENT_TYPE } from '../../src/events/events.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, phonePage } from './browser.js';

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
