import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Door } from '../auth/authenticate.js';
import { createContext, type Context } from '../context.js';
import type { Services } from '../services.js';
import type { GatewayState } from './state.js';

/**
 * The context of an operation arriving over HTTP (REST or GraphQL): the caller from the
 * Authorization header, then `createContext`. The context is kept on the request so the
 * request scope can send its rate-limit verdict as headers.
 */
export async function httpContext(ctx: Koa.ParameterizedContext<GatewayState>, services: Services, logger: Logger, door: Door): Promise<Context> {
  const log = logger.child({ requestId: ctx.state.requestId });
  const principal = await services.auth.authenticate(ctx.get('authorization') || undefined, door, log);
  const context = await createContext(services, { principal, requestId: ctx.state.requestId, logger });
  ctx.state.context = context;
  return context;
}
