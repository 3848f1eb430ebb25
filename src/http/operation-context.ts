import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Authenticator, Door } from '../auth/authenticate.js';
import { createContext, type Context, type ContextDeps } from '../context.js';
import type { GatewayState } from './state.js';
import { rateLimitHeaders } from '../rate-limit.js';

/** The door's RateLimit-* headers: the strictest verdict its operation's own limits returned (none for a call no limit counted). */
export function sendRateLimit(ctx: Koa.Context, context: Pick<Context, 'limits'> | undefined): void {
  const verdict = context?.limits.verdict;
  if (verdict) ctx.set(rateLimitHeaders(verdict));
}

/** The context of an operation arriving over HTTP (REST or GraphQL): the caller from the Authorization header, then `createContext`. */
export async function httpContext(
  ctx: Koa.ParameterizedContext<GatewayState>,
  auth: Authenticator,
  deps: ContextDeps,
  logger: Logger,
  door: Door,
): Promise<Context> {
  const log = logger.child({ requestId: ctx.state.requestId });
  const principal = await auth.authenticate(ctx.get('authorization') || undefined, door, log);
  return createContext(deps, { principal, requestId: ctx.state.requestId, logger, clientAddress: ctx.ip });
}
