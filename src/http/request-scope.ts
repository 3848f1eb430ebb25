import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { describeError, httpMessage, type ErrorBody } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { annotateHttpRoute, tracing } from '../observability/tracing.js';
import type { GatewayState } from './state.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Routes that clients poll: the events feed, which `wallet-gateway listen` (and a merchant's own
 * poller) reads twice a second. A successful read of one of them is logged at debug, not info: it
 * changes nothing and says nothing new, and at info it was most of a development log (667 of 815
 * lines in 8 minutes of `listen`). A failed poll, and every other request, stays at info.
 */
const POLLED_ROUTES: ReadonlySet<string> = new Set(['GET /api/v1/events']);

/**
 * The outermost middleware of the HTTP door: the request id (a sane incoming X-Request-Id, else
 * a new one), the one error boundary (every error becomes the Error body through
 * `describeError`, with the headers it brings), the access log line and the duration metric; with tracing on, the HTTP span's route.
 */
export function requestScope(logger: Logger, metrics: Metrics): Koa.Middleware<GatewayState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    ctx.state.requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
      if (ctx.status >= 400 && (ctx.body === undefined || ctx.body === null)) {
        const status = ctx.status;
        ctx.body = { statusCode: status, message: httpMessage(status) } satisfies ErrorBody;
        ctx.status = status; // Koa would turn an implicit 404 into 200 once a body is set
      }
    } catch (err) {
      const reply = describeError(err);
      if (reply.kind === 'unavailable') {
        logger.warn({ requestId: ctx.state.requestId, err: { message: (err as Error).message } }, 'database unavailable');
      } else if (reply.kind === 'unexpected') {
        logger.error({ err, requestId: ctx.state.requestId }, 'unexpected error');
      }
      ctx.set({ ...reply.headers });
      ctx.status = reply.statusCode;
      ctx.body = { statusCode: reply.statusCode, message: reply.message } satisfies ErrorBody;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = ctx.state.route ?? (ctx.status === 404 ? 'unmatched' : `${ctx.method} other`);
      if (tracing.on) annotateHttpRoute(ctx.state.route);
      metrics.httpDuration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      const quiet = POLLED_ROUTES.has(route) && ctx.status < 400;
      logger[quiet ? 'debug' : 'info'](
        { requestId: ctx.state.requestId, method: ctx.method, route, status: ctx.status, durationMs: Math.round(seconds * 1e5) / 100 },
        'request',
      );
    }
  };
}
