import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';
import type Koa from 'koa';

/** A helmet-style middleware that writes a response's security headers. */
export type HeadersMiddleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** Pages that bring their own security headers: the middleware for a request, or undefined for the gateway's usual ones. */
export type PageHeaders = (path: string, method: string) => HeadersMiddleware | undefined;

/**
 * The header writes of a helmet middleware built from static options, recorded once and replayed
 * on each response: the same headers, without running helmet's chain of middlewares per request
 * (#10). A middleware that does not finish synchronously (dynamic directives) is refused.
 */
export function replayable(middleware: HeadersMiddleware): (res: ServerResponse) => void {
  const writes: Array<[name: string, value: number | string | readonly string[] | undefined]> = [];
  const recorder = {
    setHeader: (name: string, value: number | string | readonly string[]) => writes.push([name, value]),
    removeHeader: (name: string) => writes.push([name, undefined]),
  };
  let finished = false;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err) => {
    if (err) throw err;
    finished = true;
  });
  if (!finished) throw new Error('security headers must be static to be replayed');
  return (res) => {
    for (const [name, value] of writes) {
      if (value === undefined) res.removeHeader(name);
      else res.setHeader(name, value);
    }
  };
}

/**
 * Security headers. The API answers JSON only, so its responses may load nothing; /docs needs its
 * own scripts and styles; the development pages (/app, GraphiQL on GET /graphql) bring their own
 * self-only policy (`ownHeaders`, absent in production).
 */
export function securityHeaders(ownHeaders?: PageHeaders): Koa.Middleware {
  const apiHeaders = replayable(helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } }));
  const pageHeaders = replayable(helmet({ contentSecurityPolicy: false }));
  return async (ctx, next) => {
    const sandbox = ownHeaders?.(ctx.path, ctx.method);
    if (sandbox) {
      await new Promise<void>((resolve, reject) => sandbox(ctx.req, ctx.res, (err?: unknown) => (err ? reject(err) : resolve())));
    } else {
      (ctx.path.startsWith('/docs') ? pageHeaders : apiHeaders)(ctx.res);
    }
    await next();
  };
}
