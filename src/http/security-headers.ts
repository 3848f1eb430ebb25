import helmet from 'helmet';
import type Koa from 'koa';
import type { Config } from '../config.js';

/**
 * Security headers. The API answers JSON only, so its responses may load nothing; /docs and the
 * development landing page of /graphql need their own scripts and styles.
 */
export function securityHeaders(config: Config): Koa.Middleware {
  const apiHeaders = helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } });
  const pageHeaders = helmet({ contentSecurityPolicy: false });
  return async (ctx, next) => {
    const landingPage = config.appEnv !== 'production' && ctx.path === '/graphql' && ctx.method === 'GET';
    const page = ctx.path.startsWith('/docs') || landingPage;
    await new Promise<void>((resolve, reject) =>
      (page ? pageHeaders : apiHeaders)(ctx.req, ctx.res, (err?: unknown) => (err ? reject(err) : resolve())),
    );
    await next();
  };
}
