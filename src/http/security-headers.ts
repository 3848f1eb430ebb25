import helmet from 'helmet';
import type Koa from 'koa';
import type { Config } from '../config.js';
import type { SandboxPages } from '../sandbox/pages.js';

/**
 * Security headers. The API answers JSON only, so its responses may load nothing; /docs needs its
 * own scripts and styles; the development pages (/app, GraphiQL on GET /graphql) bring their own
 * self-only policy (`sandboxPages`, absent in production).
 */
export function securityHeaders(_config: Config, sandboxPages?: Pick<SandboxPages, 'headersFor'>): Koa.Middleware {
  const apiHeaders = helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } });
  const pageHeaders = helmet({ contentSecurityPolicy: false });
  return async (ctx, next) => {
    const headers = sandboxPages?.headersFor(ctx.path, ctx.method) ?? (ctx.path.startsWith('/docs') ? pageHeaders : apiHeaders);
    await new Promise<void>((resolve, reject) => headers(ctx.req, ctx.res, (err?: unknown) => (err ? reject(err) : resolve())));
    await next();
  };
}
