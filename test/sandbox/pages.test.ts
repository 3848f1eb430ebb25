/**
 * The development pages without a browser (the browser tests are test/e2e): the development
 * sign-in of /app, the pages' own CSP, GraphiQL on a browser's GET /graphql, and none of it in
 * production.
 */
import { randomBytes } from 'node:crypto';
import { verifyUserTokenClaims } from '../../src/auth/user-tokens.js';
import { useTestApp, factories, gql, http, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
useTestApp({}, (x) => ({ app } = x));

describe('POST /app/session (development sign-in)', () => {
  it("mints a user token for a username (any case) that the GraphQL door accepts as that user", async () => {
    const user = await factories(app).user({ balance: 3 });
    // A development page's endpoint, not part of the REST contract (so not through the OpenAPI-checking helper).
    // fetch on purpose in this file: the sandbox pages and the GraphiQL page are not in the OpenAPI document.
    const res = await fetch(`${app.baseUrl}/app/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: user.username.toUpperCase() }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as { token: string; username: string };
    expect(body).toEqual({ token: expect.any(String), username: user.username });
    expect((await verifyUserTokenClaims(app.config, body.token)).userId).toBe(user.userId);
    const wallet = await gql(app.baseUrl, '{ myWallet { walletId balance } }', {}, body.token);
    expect(wallet.body.data.myWallet).toEqual({ walletId: user.walletId, balance: 3 });
  });

  it.each([
    [{ username: 'nobody_here' }, 404, 'User not found'],
    [{}, 400, 'username must be a non-empty string of at most 64 characters'],
    [{ username: '' }, 400, 'username must be a non-empty string of at most 64 characters'],
    [{ username: 'x'.repeat(65) }, 400, 'username must be a non-empty string of at most 64 characters'],
    [{ username: 42 }, 400, 'username must be a non-empty string of at most 64 characters'],
    [[1], 400, 'body must be a JSON object with a username'],
  ])('%j answers %i', async (body, status, message) => {
    const res = await http(app.baseUrl, '/app/session', { body });
    expect({ status: res.status, body: res.body }).toEqual({ status, body: { statusCode: status, message } });
  });

  it('refuses a body that is not JSON (415) and GET (405)', async () => {
    const res = await http(app.baseUrl, '/app/session', { rawBody: 'username=alice', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
    const get = await http(app.baseUrl, '/app/session');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe('pages', () => {
  it('GET /app is an HTML page with no inline code, under a CSP of self-only scripts, styles and connections', async () => {
    const res = await fetch(`${app.baseUrl}/app`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/sandbox/assets/app.js"></script>');
    expect(html).not.toMatch(/<script>|<style|\sstyle="|\son\w+="/);
    const csp = res.headers.get('content-security-policy')!;
    expect(csp.split(';')).toEqual(
      expect.arrayContaining(["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]),
    );
  });

  it('a browser opening /graphql gets GraphiQL (self-hosted); a client asking for JSON still reaches Apollo', async () => {
    const page = await fetch(`${app.baseUrl}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('/sandbox/assets/graphiql.js');
    expect(html).not.toMatch(/https?:\/\//); // nothing from a CDN
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const api = await fetch(`${app.baseUrl}/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { accept: 'application/json', 'apollo-require-preflight': 'true' },
    });
    expect(await api.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('only the built bundles are served from /sandbox/assets', async () => {
    for (const name of ['..%2Fpackage.json', 'app.js.map', 'index.html']) {
      const res = await http(app.baseUrl, `/sandbox/assets/${name}`);
      expect(res.status).toBe(404);
    }
  });
});

describe('production', () => {
  it('has no /app, no sign-in, no GraphiQL', async () => {
    const secret = () => randomBytes(24).toString('base64url');
    const prod = await startTestApp({ env: { APP_ENV: 'production', KEY_SIGNING_SECRET: secret(), USER_TOKEN_SECRET: secret(), ADMIN_TOKEN: secret() } });
    try {
      const user = await factories(prod).user();
      expect((await http(prod.baseUrl, '/app')).status).toBe(404);
      expect((await http(prod.baseUrl, '/app/session', { body: { username: user.username } })).status).toBe(404);
      const ide = await fetch(`${prod.baseUrl}/graphql`, { headers: { accept: 'text/html' } });
      expect(ide.status).not.toBe(200);
      expect(await ide.text()).not.toContain('graphiql');
    } finally {
      await prod.close();
    }
  });
});
