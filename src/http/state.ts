import type { Context } from '../context.js';

/** Per-request state the Koa middleware share. */
export interface GatewayState {
  requestId: string;
  /** Route template for logs and metrics (never the raw path with ids). */
  route?: string;
  /** The GraphQL context of the operation this request runs, once built (its rate-limit verdict becomes headers). */
  context?: Context;
}
