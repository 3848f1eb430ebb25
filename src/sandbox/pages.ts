import { createReadStream, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import helmet from 'helmet';
import type { Context as KoaContext } from 'koa';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import type { GatewayState } from '../http/state.js';
import { readJsonBody } from '../http/body.js';
import type { HeadersMiddleware, PageHeaders } from '../http/security-headers.js';
import { badInput, AppError } from '../errors.js';
import { mintUserToken } from '../auth/user-tokens.js';
import { projectRoot } from '../project-root.js';

/** The wallet-app page (development only). */
export const APP_PATH = '/app';
/** Development sign-in of the page: a username in, a user token out. */
export const APP_SESSION_PATH = '/app/session';
/**
 * What the page shows before sign-in when a payment link opened it (`/app#pay=<code>`): the
 * merchant, the amount, the description and the status of the link's request, the same the
 * production `/pay/{code}` page shows anyone holding the link; never who paid.
 */
export const APP_LINK_PATH = '/app/link';
/** Built client code of the sandbox pages (`npm run build` writes it to dist/web). */
export const SANDBOX_ASSETS_PATH = '/sandbox/assets';
/** How long a token minted by the page's sign-in lives. */
const SESSION_TTL_SECONDS = 12 * 3600;

/** The files the build writes to dist/web; nothing else there is reachable. */
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app-style.css': 'text/css; charset=utf-8',
  'graphiql.js': 'text/javascript; charset=utf-8',
  'graphiql.css': 'text/css; charset=utf-8',
};

/** dist/web under the repository root (the same from the sources and from the build). */
export function webAssetsDir(): string {
  return path.join(projectRoot(), 'dist', 'web');
}


/**
 * Security headers of the sandbox pages: scripts and styles from this origin only (no inline
 * code, no CDN), fetch and WebSocket to this origin only, nothing may frame them. GraphiQL's
 * stylesheet carries its fonts and icons as data: URLs.
 */
const pageHeaders: HeadersMiddleware = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      baseUri: ["'none'"],
      frameAncestors: ["'none'"],
    },
  },
});

const APP_PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
    <meta name="color-scheme" content="light">
    <meta name="theme-color" content="#0a7d5a">
    <link rel="icon" href="data:,">
    <title>Wallet — development app</title>
    <link rel="stylesheet" href="${SANDBOX_ASSETS_PATH}/app-style.css">
    <script type="module" src="${SANDBOX_ASSETS_PATH}/app.js"></script>
  </head>
  <body>
    <header class="bar">
      <span class="logo">Wallet</span>
      <span class="env">development</span>
      <span id="live" class="live" hidden>offline</span>
    </header>
    <main>
      <section id="signin" class="card signin">
        <div id="waiting" class="waiting" role="status" hidden></div>
        <h1>Sign in</h1>
        <p class="muted">A stand-in for the wallet's mobile app. Pick a user or type a username.</p>
        <form id="signin-form" autocomplete="off">
          <label for="username">Username</label>
          <input id="username" name="username" list="usernames" required maxlength="64" placeholder="alice" autocapitalize="none" spellcheck="false">
          <datalist id="usernames"><option value="alice"><option value="bob"></datalist>
          <button type="submit" class="primary">Sign in</button>
          <p id="signin-error" class="error" role="alert" hidden></p>
        </form>
        <div class="picks">
          <button type="button" class="pick" data-username="alice">alice</button>
          <button type="button" class="pick" data-username="bob">bob</button>
        </div>
      </section>
      <section id="wallet" hidden>
        <div class="card balance">
          <div class="who"><span id="who"></span><button id="signout" type="button" class="link">Sign out</button></div>
          <div class="label">Balance</div>
          <div class="amount"><span id="currency"></span> <span id="balance">–</span></div>
          <div id="available" class="available" hidden></div>
          <div id="wallet-status" class="muted"></div>
        </div>
        <form id="link-form" class="link-form" autocomplete="off">
          <input id="link-input" aria-label="Payment link" placeholder="Paste a payment link (…/pay/…)" spellcheck="false">
          <button type="submit">Open</button>
          <p id="link-error" class="error" role="alert" hidden></p>
        </form>
        <h2>Waiting for you <span id="pending-count" class="count">0</span></h2>
        <p id="empty" class="muted empty">No payment requests right now. New ones appear here as they arrive.</p>
        <ul id="pending" class="requests"></ul>
        <h2 id="recent-title" hidden>Recent</h2>
        <ul id="recent" class="requests recent"></ul>
        <h2>Passkeys</h2>
        <div class="card settings">
          <p class="muted">Approve with your fingerprint, face or screen lock instead of your PIN.</p>
          <ul id="passkeys" class="plain-list"></ul>
          <button id="add-passkey" type="button">Add a passkey</button>
          <p id="passkey-error" class="error" role="alert" hidden></p>
        </div>
        <h2>Blocked merchants</h2>
        <div class="card settings">
          <p id="blocked-empty" class="muted">No blocked merchants. Block one from its request to stop it asking you for money.</p>
          <ul id="blocked" class="plain-list"></ul>
          <p id="blocked-error" class="error" role="alert" hidden></p>
        </div>
      </section>
    </main>
    <div id="pin-pad" class="sheet" role="dialog" aria-modal="true" aria-labelledby="pin-title" aria-describedby="pin-for" hidden>
      <div class="sheet-body" id="pin-body" tabindex="-1">
        <h2 id="pin-title">Enter your PIN</h2>
        <p id="pin-for" class="muted"></p>
        <div id="pin-dots" class="pin-dots" role="status" aria-live="polite"></div>
        <p id="pin-error" class="error" role="alert" hidden></p>
        <div class="keys">
          <button type="button" class="key" data-key="1">1</button>
          <button type="button" class="key" data-key="2">2</button>
          <button type="button" class="key" data-key="3">3</button>
          <button type="button" class="key" data-key="4">4</button>
          <button type="button" class="key" data-key="5">5</button>
          <button type="button" class="key" data-key="6">6</button>
          <button type="button" class="key" data-key="7">7</button>
          <button type="button" class="key" data-key="8">8</button>
          <button type="button" class="key" data-key="9">9</button>
          <button type="button" class="key" data-key="Backspace" aria-label="Delete last digit">⌫</button>
          <button type="button" class="key" data-key="0">0</button>
          <button type="button" class="key primary" data-key="Enter" id="pin-ok" disabled>OK</button>
        </div>
        <button type="button" id="pin-cancel" class="link cancel">Cancel</button>
      </div>
    </div>
  </body>
</html>
`;

const GRAPHIQL_PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>GraphiQL — Wallet gateway (development)</title>
    <link rel="icon" href="data:,">
    <link rel="stylesheet" href="${SANDBOX_ASSETS_PATH}/graphiql.css">
    <script type="module" src="${SANDBOX_ASSETS_PATH}/graphiql.js"></script>
  </head>
  <body>
    <p class="narrow-notice" role="note">GraphiQL needs a window at least 800 px wide: on a phone its editors are too narrow to use.
      Open <a href="/graphql">/graphql</a> on a computer; on this phone, the wallet-app page <a href="/app">/app</a> works.</p>
    <div id="graphiql">Loading GraphiQL…</div>
  </body>
</html>
`;

function sendHtml(ctx: KoaContext, html: string): void {
  ctx.set('Cache-Control', 'no-cache');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

/** True for a browser's GET of /graphql without an operation (it prefers HTML over JSON). */
function wantsIde(ctx: KoaContext): boolean {
  return ctx.method === 'GET' && ctx.query.query === undefined && ctx.accepts(['application/json', 'text/html']) === 'text/html';
}

export interface SandboxPages {
  readonly router: Router<GatewayState>;
  /** The sandbox pages' own security headers for a request, or undefined for the gateway's usual ones. */
  readonly headersFor: PageHeaders;
}

/**
 * Development pages: the wallet app at `/app` with its development sign-in, and GraphiQL at
 * GET `/graphql` (what a browser opens; operations still go to Apollo). Never mounted in production.
 */
export function createSandboxPages(config: Config, services: Pick<Services, 'accounts' | 'payments' | 'works'>): SandboxPages {
  if (config.appEnv === 'production') throw new Error('the sandbox pages exist only in development');
  const router = new Router<GatewayState>();
  const assetsDir = webAssetsDir();

  router.get(APP_PATH, (ctx) => {
    ctx.state.route = `GET ${APP_PATH}`;
    sendHtml(ctx, APP_PAGE);
  });

  router.post(APP_SESSION_PATH, async (ctx) => {
    ctx.state.route = `POST ${APP_SESSION_PATH}`;
    const body = await readJsonBody(ctx);
    const username = (body as { username?: unknown } | null | undefined)?.username;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw badInput('body must be a JSON object with a username');
    if (typeof username !== 'string' || username.trim() === '' || username.length > 64) {
      throw badInput('username must be a non-empty string of at most 64 characters');
    }
    const user = await services.accounts.userByUsername(services.works.begin(), username);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { token: await mintUserToken(config, user.id, SESSION_TTL_SECONDS), username: user.username };
  });

  router.get(`${APP_LINK_PATH}/:code`, async (ctx) => {
    ctx.state.route = `GET ${APP_LINK_PATH}/:code`;
    const pr = await services.payments.publicByCode(services.works.begin(), ctx.params.code ?? '');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { merchantName: pr.merchantName, amount: Number(pr.amount), currency: pr.currency, description: pr.description, status: pr.status, expiresAt: pr.expiresAt };
  });

  router.get('/graphql', async (ctx, next) => {
    if (!wantsIde(ctx)) return next();
    ctx.state.route = 'GET /graphql (GraphiQL)';
    sendHtml(ctx, GRAPHIQL_PAGE);
  });

  router.get(`${SANDBOX_ASSETS_PATH}/:file`, (ctx) => {
    ctx.state.route = `GET ${SANDBOX_ASSETS_PATH}/:file`;
    const name = ctx.params.file ?? '';
    const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
    if (!type) {
      ctx.status = 404;
      return;
    }
    const file = path.join(assetsDir, name);
    if (!existsSync(file)) throw new AppError('SERVICE_UNAVAILABLE', 'The page assets are not built; run npm run build');
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = type;
    ctx.length = statSync(file).size;
    ctx.body = createReadStream(file);
  });

  return {
    router,
    headersFor: (requestPath, method) => {
      const page =
        requestPath === APP_PATH ||
        requestPath.startsWith(`${SANDBOX_ASSETS_PATH}/`) ||
        (requestPath === '/graphql' && method === 'GET');
      return page ? pageHeaders : undefined;
    },
  };
}
