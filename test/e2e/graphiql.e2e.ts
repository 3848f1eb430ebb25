/**
 * Self-hosted GraphiQL on a browser's GET /graphql (development): it loads with no CDN, runs a
 * query with a token pasted into its header editor and shows the result, and runs a
 * subscription over graphql-ws that shows an event as it happens.
 */
import type { Browser, Page } from 'playwright-core';
import { factories, http, startTestApp, type TestApp } from '../helpers/app.js';
import { untilSubscribed } from '../helpers/ws.js';
import { artefact, launchBrowser, phonePage, type PageProblems } from './browser.js';

let browser: Browser;
let app: TestApp;
let page: Page;
let problems: PageProblems;

beforeAll(async () => {
  browser = await launchBrowser();
  app = await startTestApp();
  ({ page, problems } = await phonePage(browser, 1280, 860, false));
  // GraphiQL introspects the schema once it has mounted; editing before that answer arrives
  // would race its own initialisation of the editors.
  const introspected = page.waitForResponse((r) => r.url().endsWith('/graphql') && r.request().method() === 'POST');
  await page.goto(`${app.baseUrl}/graphql`);
  expect((await introspected).status()).toBe(200);
  await page.locator('.graphiql-container .graphiql-execute-button').waitFor();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

test('at 1280 px the starter text is shown whole: no line of the query editor runs under its toolbar or off its edge', async () => {
  const lines = page.locator('.graphiql-query-editor .CodeMirror-line');
  await lines.first().waitFor();
  const fit = await page.evaluate(() => {
    const doc = (globalThis as any).document;
    const editor = doc.querySelector('.graphiql-query-editor .CodeMirror').getBoundingClientRect();
    const toolbar = doc.querySelector('.graphiql-query-editor .graphiql-toolbar').getBoundingClientRect();
    const edge = Math.min(editor.right, toolbar.left);
    const spans: any[] = [...doc.querySelectorAll('.graphiql-query-editor .CodeMirror-line > span')];
    return { lines: spans.length, cut: spans.filter((s) => s.getBoundingClientRect().right > edge).map((s) => s.textContent as string) };
  });
  expect(fit.lines).toBeGreaterThan(10);
  expect(fit.cut).toEqual([]);
  expect(await page.locator('.graphiql-query-editor').innerText()).toContain('npx wallet-gateway user:token --username alice');
  await page.screenshot({ path: artefact('graphiql-1280x860.png') });
});

/**
 * Puts a named operation into the query editor and waits until GraphiQL has parsed it (the tab
 * takes the operation's name): Run uses the parsed document to choose HTTP or graphql-ws.
 */
async function setOperation(name: string, text: string): Promise<void> {
  await setEditor('query', text);
  await page.locator('.graphiql-tab', { hasText: name }).waitFor();
}

/** Replaces the text of the query editor or of the (visible) header editor, as pasting would. */
async function setEditor(which: 'query' | 'headers', text: string): Promise<void> {
  const selector =
    which === 'query' ? '.graphiql-query-editor .CodeMirror' : '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';
  await page.locator(selector).waitFor();
  await page.evaluate(
    // Runs in the page: CodeMirror 5 hangs its editor on the wrapper element.
    ({ selector, text }) => (globalThis as any).document.querySelector(selector).CodeMirror.setValue(text),
    { selector, text },
  );
}

const result = () => page.locator('.graphiql-response .result-window');

test('loads from the gateway alone and runs a query with the token pasted into the header editor', async () => {
  const user = await factories(app).user({ balance: 42.5 });
  await setEditor('headers', JSON.stringify({ Authorization: `Bearer ${user.token}` }));
  await setOperation('WalletOfUser', 'query WalletOfUser { myWallet { walletId balance currency } }');
  await page.click('.graphiql-execute-button');
  await result().filter({ hasText: user.walletId }).waitFor();
  const text = await result().innerText();
  expect(text).toContain('"balance": 42.5');
  expect(text).toContain('"currency": "ETB"');
  expect(problems).toEqual({ errors: [], cspViolations: [] });
});

test('a subscription runs over graphql-ws and shows a payment request as it is created', async () => {
  const user = await factories(app).user({ balance: 10 });
  const { secretKey } = await factories(app).developer();
  await setEditor('headers', JSON.stringify({ Authorization: `Bearer ${user.token}` }));
  await setOperation('Incoming', 'subscription Incoming { paymentRequested { id merchantName amount } }');
  const before = app.gateway.services.eventHub.stats.subscriptions;
  await page.click('.graphiql-execute-button');
  await untilSubscribed(app.gateway.services.eventHub, before + 1, 10_000);
  const res = await http(app.baseUrl, '/api/v1/wallet/request-payment', {
    token: secretKey,
    body: { walletId: user.walletId, amount: 3.5, description: 'Seen in GraphiQL', merchantName: 'IDE Shop' },
  });
  expect(res.status).toBe(200);
  await result().filter({ hasText: res.body.paymentRequestId }).waitFor();
  expect(await result().innerText()).toContain('"merchantName": "IDE Shop"');
  await page.click('.graphiql-execute-button'); // stops the subscription
  expect(problems).toEqual({ errors: [], cspViolations: [] });
});

test('at 390 px (a phone) the page says GraphiQL needs 800 px and where to go instead; at 1280 px it says nothing (screenshot in .artefacts/e2e)', async () => {
  expect(await page.locator('.narrow-notice').isVisible()).toBe(false);
  const phone = await phonePage(browser, 390, 844, true);
  try {
    await phone.page.goto(`${app.baseUrl}/graphql`);
    await phone.page.locator('.graphiql-container').waitFor();
    const notice = phone.page.locator('.narrow-notice');
    expect(await notice.isVisible()).toBe(true);
    expect(await notice.innerText()).toMatch(/at least 800 px wide[\s\S]*\/app/);
    // The notice sits above GraphiQL, which still fills the rest of the window.
    const box = await phone.page.evaluate(() => {
      const doc = (globalThis as any).document;
      return { notice: doc.querySelector('.narrow-notice').getBoundingClientRect().bottom, graphiql: doc.querySelector('#graphiql').getBoundingClientRect().top };
    });
    expect(box.graphiql).toBeGreaterThanOrEqual(box.notice);
    await phone.page.screenshot({ path: artefact('graphiql-390x844.png') });
    expect(phone.problems).toEqual({ errors: [], cspViolations: [] });
  } finally {
    await phone.page.context().close();
  }
});
