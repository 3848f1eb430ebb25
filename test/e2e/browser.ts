import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TEST_PIN } from '../helpers/app.js';

/** Debian's Chromium (`apt-get install -y chromium`), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium for a test file. playwright-core never downloads a browser; it drives the
 * installed one. Each launch gets a fresh, temporary profile (user-data-dir), removed on close.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What went wrong in a page: uncaught errors and Content-Security-Policy violations. */
export interface PageProblems {
  errors: string[];
  cspViolations: string[];
}

/** A page (phone-sized and mobile unless told otherwise) that records its errors and CSP violations. */
export async function phonePage(browser: Browser, width = 390, height = 844, mobile = true): Promise<{ page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: mobile ? 2 : 1, isMobile: mobile, hasTouch: mobile });
  const page = await context.newPage();
  const problems: PageProblems = { errors: [], cspViolations: [] };
  page.on('pageerror', (err) => problems.errors.push(err.message));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.cspViolations.push(msg.text());
  });
  return { page, problems };
}

/** Where the browser tests leave their screenshots: `.artefacts/e2e/<name>` (git-ignored), or E2E_ARTEFACTS. */
export function artefact(name: string): string {
  const dir = process.env.E2E_ARTEFACTS ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../.artefacts/e2e');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}

/** A request's card on the /app page. */
export const requestCard = (page: Page, id: string) => page.locator(`li.request[data-id="${id}"]`);

/** Pay on a card of /app: the Pay button opens the PIN pad; the PIN is typed and confirmed with OK. */
export async function payWithPin(page: Page, id: string, pin = TEST_PIN): Promise<void> {
  await requestCard(page, id).locator('button.approve').click();
  await page.locator('#pin-pad').waitFor();
  for (const digit of pin) await page.locator(`#pin-pad .key[data-key="${digit}"]`).click();
  await page.locator('#pin-ok').click();
}
