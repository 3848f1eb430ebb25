import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import helmet from 'helmet';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { GraphQLError, type ValidationContext, type ValidationRule } from 'graphql';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Context, Services } from './context.js';
import { AppError, INTERNAL_MESSAGE, isDatabaseUnavailable, type ErrorBody } from './errors.js';
import { formatGraphQLError, isUnexpectedError } from './format-error.js';
import { unwrapResolverError } from '@apollo/server/errors';
import { getSchema } from './schema.js';
import { SecretKeyVerifier } from './auth/secret-keys.js';
import { bearerToken, createAuthenticator } from './auth/authenticate.js';
import { safeEqual } from './auth/hash.js';
import type { Principal } from './auth/principal.js';
import { PaymentRequestService } from './payment-requests/payment-request.service.js';
import { AccountService } from './accounts/account.service.js';
import { TransactionService } from './transactions/transaction.service.js';
import { DeveloperService } from './developers/developer.service.js';
import { createRestRouter } from './rest/rest-router.js';
import { IdempotencyStore } from './rest/idempotency.js';
import { apolloKoaMiddleware } from './http/apollo-koa.js';
import { createHttpDrain } from './http/drain.js';
import type { GatewayState } from './http/state.js';
import { EventHub } from './events/event-hub.js';
import { CommitHookSource, PgListenSource } from './events/event-source.js';
import { ExpirySweeper } from './payment-requests/expiry-sweeper.js';
import { attachGraphqlWs, type GraphqlWs } from './ws/graphql-ws.js';
import { createDocsRouter } from './openapi/openapi.js';
import { RateLimitedError, RateLimits, type RateLimitInfo } from './rate-limit.js';
import { Metrics } from './observability/metrics.js';
import { Maintenance } from './maintenance.js';
import { startSandbox } from './sandbox/sandbox.js';

export interface GatewayOptions {
  config: Config;
  db: Database;
  logger: Logger;
}

/** A running gateway: one http.Server carrying REST, GraphQL over HTTP and GraphQL over WebSocket. */
export interface Gateway {
  readonly server: http.Server;
  readonly services: Services;
  readonly sweeper: ExpirySweeper;
  readonly maintenance: Maintenance;
  readonly ws: GraphqlWs;
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Stops accepting, drains in-flight HTTP, closes WebSockets with 1001 and stops the background
   * work. The database is the caller's to close afterwards.
   */
  dispose(): Promise<void>;
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const STATUS_MESSAGES: Record<number, string> = {
  404: 'Not found',
  405: 'Method not allowed',
  501: 'Not implemented',
};

/** Builds the services shared by every door. */
export function createServices(config: Config, db: Database, logger: Logger): Services {
  const forkEm = () => db.orm.em.fork();
  // NOTIFY does not cross connections of the embedded PostgreSQL: there, events are handed over
  // by the commit hook in-process (one process owns an embedded database).
  const source = db.embedded ? new CommitHookSource(db.orm) : new PgListenSource(db.url, logger);
  // The gauge reads the hub at scrape time, the hub reports each delivery's lag to the histogram.
  const metrics: Metrics = new Metrics({ subscriptions: () => events.stats.subscriptions });
  const events = new EventHub(source, forkEm, logger, (seconds) => metrics.eventLag.observe(seconds));
  return {
    config,
    payments: new PaymentRequestService(config, (outcome, count = 1) => metrics.paymentRequests.inc({ outcome }, count)),
    accounts: new AccountService(config),
    transactions: new TransactionService(),
    developers: new DeveloperService(),
    keys: new SecretKeyVerifier(config, forkEm, logger),
    events,
    limits: new RateLimits(db.orm.em.getKnex(), {
      requestsPerSecond: config.rateLimitPerSecond,
      lookupsPerMinute: config.lookupLimitPerMinute,
    }),
    metrics,
  };
}

/** Sets the RateLimit-* headers (IETF draft names) of a verdict. */
function setRateLimitHeaders(ctx: Koa.Context, info: RateLimitInfo | undefined): void {
  if (!info) return;
  ctx.set('RateLimit-Limit', String(info.limit));
  ctx.set('RateLimit-Remaining', String(Math.max(0, info.remaining)));
  ctx.set('RateLimit-Reset', String(info.reset));
}

/** GraphQL depth and cost limits, shared by the HTTP and WebSocket doors. */
export function graphqlLimits(config: Config): ValidationRule[] {
  // Report, never throw: a rule that throws escapes graphql's validate(), which Apollo answers
  // with 500 and graphql-ws with closing the whole socket (4500).
  const report = { propagateOnRejection: false, onReject: [(ctx: ValidationContext | null, err: GraphQLError) => ctx?.reportError(err)] };
  return [
    maxDepthRule({ n: config.graphqlMaxDepth, exposeLimits: true, ...report }) as unknown as ValidationRule,
    costLimitRule({ maxCost: config.graphqlMaxCost, exposeLimits: true, ...report }) as unknown as ValidationRule,
  ];
}

/** Wires Koa (REST, health, metrics, docs, Apollo) and graphql-ws onto one http.Server. */
export async function createGateway({ config, db, logger }: GatewayOptions): Promise<Gateway> {
  const schema = await getSchema();
  const services = createServices(config, db, logger);
  const auth = createAuthenticator(config, services.keys);
  const server = http.createServer();
  const drain = createHttpDrain(server);
  const forkEm = () => db.orm.em.fork();
  await services.events.start();
  const sweeper = new ExpirySweeper(services.payments, forkEm, config.expirySweepIntervalMs, logger);
  sweeper.start();
  const maintenance = new Maintenance(forkEm, logger);
  maintenance.start();
  const sandbox = await startSandbox({ config, services, forkEm, logger }); // development only
  const validationRules = graphqlLimits(config);
  const ws = attachGraphqlWs({ server, schema, config, services, logger, forkEm, validationRules });

  const contextFor = (ctx: Koa.ParameterizedContext<GatewayState>, principal: Principal): Context => ({
    principal,
    em: forkEm(),
    services,
    requestId: ctx.state.requestId,
    log: logger.child({ requestId: ctx.state.requestId }),
  });

  /** Every use of a secret key counts against its overall limit, whatever the door. */
  const developerContext = async (ctx: Koa.ParameterizedContext<GatewayState>, principal: Principal): Promise<Context> => {
    const context = contextFor(ctx, principal);
    if (principal.kind === 'developer') context.rateLimit = await services.limits.request(principal.keyId);
    return context;
  };

  const apollo = new ApolloServer<Context>({
    schema,
    introspection: config.appEnv !== 'production',
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    includeStacktraceInErrorResponses: false,
    // main.ts owns the signals (drain, close the pool, exit 0); Apollo's own handler would re-raise SIGTERM.
    stopOnTerminationSignals: false,
    validationRules,
    plugins: [
      ...(config.appEnv === 'production' ? [ApolloServerPluginLandingPageDisabled()] : []),
      {
        async requestDidStart() {
          return {
            async didEncounterErrors({ errors, contextValue }) {
              for (const error of errors) {
                if (isUnexpectedError(error)) (contextValue?.log ?? logger).error({ err: unwrapResolverError(error) }, 'unexpected GraphQL error');
              }
            },
          };
        },
      },
    ],
    // formatError has no context; the plugin below logs unexpected errors with the request's logger.
    formatError: (formatted, error) => formatGraphQLError(formatted, error),
  });
  await apollo.start();

  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;

  // Request id, access log, metrics and the one error boundary of the HTTP door.
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    ctx.state.requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
      if (ctx.status >= 400 && (ctx.body === undefined || ctx.body === null)) {
        const status = ctx.status;
        ctx.body = { statusCode: status, message: STATUS_MESSAGES[status] ?? 'Error' } satisfies ErrorBody;
        ctx.status = status; // Koa would turn an implicit 404 into 200 once a body is set
      }
    } catch (err) {
      const body = errorBody(err);
      if (body.statusCode === 503) {
        logger.warn({ requestId: ctx.state.requestId, err: { message: (err as Error).message } }, 'database unavailable');
      } else if (body.statusCode >= 500) {
        logger.error({ err, requestId: ctx.state.requestId }, 'unexpected error');
      }
      if (err instanceof RateLimitedError) {
        ctx.set('Retry-After', String(err.info.reset));
        setRateLimitHeaders(ctx, err.info);
      }
      ctx.status = body.statusCode;
      ctx.body = body;
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = ctx.state.route ?? (ctx.status === 404 ? 'unmatched' : `${ctx.method} other`);
      services.metrics.httpDuration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      logger.info(
        { requestId: ctx.state.requestId, method: ctx.method, route, status: ctx.status, durationMs: Math.round(seconds * 1e5) / 100 },
        'request',
      );
    }
  });

  // Security headers. The API answers JSON only, so its pages may load nothing; /docs and the
  // development landing page of /graphql need their own scripts and styles.
  const apiHeaders = helmet({ contentSecurityPolicy: { directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } });
  const pageHeaders = helmet({ contentSecurityPolicy: false });
  app.use(async (ctx, next) => {
    const landingPage = config.appEnv !== 'production' && ctx.path === '/graphql' && ctx.method === 'GET';
    const page = ctx.path.startsWith('/docs') || landingPage;
    await new Promise<void>((resolve, reject) =>
      (page ? pageHeaders : apiHeaders)(ctx.req, ctx.res, (err?: unknown) => (err ? reject(err) : resolve())),
    );
    await next();
  });

  const rest = createRestRouter({
    schema,
    context: async (ctx) => developerContext(ctx, await auth.developerFromAuthorization(ctx.get('authorization') || undefined, logger.child({ requestId: ctx.state.requestId }))),
    idempotency: new IdempotencyStore(forkEm),
    onResult: (ctx, context) => setRateLimitHeaders(ctx, context.rateLimit),
  });

  const root = new Router<GatewayState>();
  root.get('/healthz', (ctx) => {
    ctx.state.route = 'GET /healthz';
    ctx.body = { status: 'ok' };
  });
  root.get('/readyz', async (ctx) => {
    ctx.state.route = 'GET /readyz';
    try {
      await forkEm().execute('select 1');
      ctx.body = { status: 'ready', events: services.events.healthy ? 'connected' : 'reconnecting' };
    } catch {
      ctx.status = 503;
      ctx.body = { statusCode: 503, message: 'Database unavailable' } satisfies ErrorBody;
    }
  });
  root.get('/metrics', async (ctx) => {
    ctx.state.route = 'GET /metrics';
    if (config.metricsToken) {
      const token = bearerToken(ctx.get('authorization') || undefined);
      if (!token || !safeEqual(token, config.metricsToken)) throw new AppError('UNAUTHENTICATED', 'Invalid metrics token');
    }
    ctx.type = services.metrics.registry.contentType;
    ctx.body = await services.metrics.registry.metrics();
  });
  const graphql = apolloKoaMiddleware(apollo, async (ctx: Koa.ParameterizedContext<GatewayState>) => {
    ctx.state.route = `${ctx.method} /graphql`;
    try {
      return await developerContext(ctx, await auth.fromAuthorization(ctx.get('authorization') || undefined, logger.child({ requestId: ctx.state.requestId })));
    } catch (err) {
      if (err instanceof AppError) {
        const headers = new HeaderMap();
        if (err instanceof RateLimitedError) {
          headers.set('retry-after', String(err.info.reset));
          headers.set('ratelimit-limit', String(err.info.limit));
          headers.set('ratelimit-remaining', '0');
          headers.set('ratelimit-reset', String(err.info.reset));
        }
        throw new GraphQLError(err.message, {
          extensions: { code: err.code, statusCode: err.statusCode, http: { status: err.statusCode, headers } },
        });
      }
      throw err;
    }
  });
  root.get('/graphql', graphql);
  root.post('/graphql', graphql);

  app.use(rest.routes());
  app.use(rest.allowedMethods());
  app.use(root.routes());
  app.use(root.allowedMethods());
  const docs = createDocsRouter();
  app.use(docs.routes());
  app.use(docs.allowedMethods());
  server.on('request', drain.guard(app.callback()));

  return {
    server,
    services,
    sweeper,
    maintenance,
    ws,
    listen(port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const addr = server.address() as AddressInfo;
          resolve(`http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`);
        });
      });
    },
    async dispose() {
      // HTTP drains (in-flight requests answered, later ones refused with 503) while every
      // WebSocket is closed with 1001 (going away); then Apollo and the background work stop.
      await Promise.all([drain.close(8000), ws.dispose()]);
      await apollo.stop();
      await Promise.all([sweeper.stop(), maintenance.stop(), sandbox?.stop()]);
      await services.events.close();
    },
  };
}

function errorBody(err: unknown): ErrorBody {
  if (err instanceof AppError) return { statusCode: err.statusCode, message: err.message };
  const status = (err as { status?: unknown; expose?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose) {
    return { statusCode: status, message: STATUS_MESSAGES[status] ?? (err as Error).message };
  }
  if (isDatabaseUnavailable(err)) return { statusCode: 503, message: 'Service temporarily unavailable' };
  return { statusCode: 500, message: INTERNAL_MESSAGE };
}
