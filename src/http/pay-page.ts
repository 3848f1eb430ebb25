import { createHash } from 'node:crypto';
import Router from '@koa/router';
import type { Context as KoaContext } from 'koa';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { AppError } from '../errors.js';
import { RateLimitedError, rateLimitHeaders } from '../rate-limit.js';
import type { GatewayState } from './state.js';
import { qrSvg } from '../links/qr-code.js';
import type { PublicPaymentRequest } from '../payment-requests/payment-request.service.js';

/** Where a payment link points: PUBLIC_BASE_URL + PAY_PATH + code. */
export const PAY_PATH = '/pay';

const STYLE = `body{font-family:system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:26rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002;text-align:center}
.amount{font-size:2rem;font-weight:700;margin:.5rem 0}.muted{color:#5b6472}
a.open{display:block;margin:1.25rem 0;padding:.9rem;border-radius:8px;background:#1d5fd6;color:#fff;text-decoration:none;font-weight:600}
.qr svg{width:220px;height:220px}`;

/** The page brings its one stylesheet (by hash) and nothing else; the QR code is inline SVG markup, not a loaded image. */
const PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

function sendPage(ctx: KoaContext, status: number, html: string): void {
  ctx.status = status;
  ctx.set('Content-Security-Policy', PAGE_CSP);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = html;
}

/** Production's page of a link: the merchant, the amount, "Open in wallet app" and the QR code for another device. Never the payer. */
async function linkPage(config: Config, pr: PublicPaymentRequest): Promise<string> {
  const appLink = config.walletAppLinkTemplate.replaceAll('{code}', encodeURIComponent(pr.code));
  const amount = `${Number(pr.amount).toFixed(2)} ${pr.currency}`;
  const open = pr.status === 'PENDING';
  return page(
    `Pay ${pr.merchantName}`,
    `<p class="muted">Payment request from</p><h1>${escapeHtml(pr.merchantName)}</h1>
<p class="amount">${escapeHtml(amount)}</p><p>${escapeHtml(pr.description)}</p>
${
  open
    ? `<a class="open" href="${escapeHtml(appLink)}">Open in wallet app</a>
<p class="muted">On another device? Scan this code with your wallet app.</p><div class="qr">${await qrSvg(pr.paymentUrl)}</div>`
    : `<p class="muted">This payment request is ${escapeHtml(pr.status.toLowerCase())}.</p>`
}`,
  );
}

const NOT_FOUND_PAGE = page('Payment link not found', '<h1>Payment link not found</h1><p class="muted">Check the link, or ask the merchant for a new one.</p>');
const TOO_MANY_PAGE = page('Too many requests', '<h1>Too many requests</h1><p class="muted">Too many payment links were opened from this address; try again in a minute.</p>');

/**
 * `GET /pay/{code}`, where a payment link (and its QR code) points. Development: the wallet-app
 * page opened on that request (`/app#pay=<code>`, which reads it with `paymentRequestByCode`).
 * Production: a small page with the merchant, the amount, an "Open in wallet app" link
 * (WALLET_APP_LINK_TEMPLATE) and the QR code for another device. An unknown code: a 404 page.
 * Past PAY_PAGE_LIMIT_PER_MINUTE reads from one address (with `paymentRequestByCode`): a 429 page
 * with Retry-After.
 */
export function createPayPageRouter(config: Config, services: Pick<Services, 'payments' | 'works' | 'rateLimits'>): Router<GatewayState> {
  const router = new Router<GatewayState>();
  router.get(`${PAY_PATH}/:code`, async (ctx) => {
    ctx.state.route = `GET ${PAY_PATH}/:code`;
    // One budget with `paymentRequestByCode` per client address (PAY_PAGE_LIMIT_PER_MINUTE): codes are not guessed page by page.
    try {
      ctx.set(rateLimitHeaders(await services.rateLimits.payPage(ctx.ip)));
    } catch (err) {
      if (!(err instanceof RateLimitedError)) throw err;
      ctx.set(err.headers);
      return sendPage(ctx, 429, TOO_MANY_PAGE);
    }
    let pr: PublicPaymentRequest;
    try {
      pr = await services.payments.publicByCode(services.works.begin(), ctx.params.code ?? '');
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') return sendPage(ctx, 404, NOT_FOUND_PAGE);
      throw err;
    }
    if (config.appEnv !== 'production') {
      ctx.set('Cache-Control', 'no-store');
      ctx.redirect(`/app#pay=${encodeURIComponent(pr.code)}`);
      return;
    }
    sendPage(ctx, 200, await linkPage(config, pr));
  });
  return router;
}
