import Router from '@koa/router';
import { AppError, type ErrorBody } from '../errors.js';
import { bearerToken } from '../auth/authenticate.js';
import { safeEqual } from '../auth/hash.js';
import type { Services } from '../services.js';
import type { GatewayState } from './state.js';
import { clusterMetrics, inClusterWorker } from '../observability/cluster-metrics.js';

/**
 * GET /healthz (process up), /readyz (database reachable) and /metrics (Prometheus, optionally
 * token-protected: this instance's own metrics, summed over its cluster workers, and the
 * database-derived gauges read at scrape time).
 */
export function createProbesRouter(services: Services): Router<GatewayState> {
  const router = new Router<GatewayState>();
  router.get('/healthz', (ctx) => {
    ctx.state.route = 'GET /healthz';
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    ctx.state.route = 'GET /readyz';
    try {
      await services.forkEm().execute('select 1');
      ctx.body = { status: 'ready', events: services.eventHub.healthy ? 'connected' : 'reconnecting' };
    } catch {
      ctx.status = 503;
      ctx.body = { statusCode: 503, message: 'Database unavailable' } satisfies ErrorBody;
    }
  });
  router.get('/metrics', async (ctx) => {
    ctx.state.route = 'GET /metrics';
    const required = services.config.metricsToken;
    if (required) {
      const token = bearerToken(ctx.get('authorization') || undefined);
      if (!token || !safeEqual(token, required)) throw new AppError('UNAUTHENTICATED', 'Invalid metrics token');
    }
    // Several workers: the cluster's sum, whichever worker answers (a 503 rather than a part of it).
    let own: string;
    try {
      own = inClusterWorker() ? await clusterMetrics() : await services.metrics.registry.metrics();
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 'Metrics of the other workers are unavailable');
    }
    ctx.type = services.metrics.registry.contentType;
    ctx.body = own + (await services.metrics.databaseMetrics());
  });
  return router;
}
