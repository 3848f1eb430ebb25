import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { GraphQLError } from 'graphql';
import { formatGraphQLError } from './format-error.js';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { Context, Services } from './context.js';
import { AppError, INTERNAL_MESSAGE, isDatabaseUnavailable, type ErrorBody } from './errors.js';
import { getSchema } from './schema.js';
import { SecretKeyVerifier } from './auth/secret-keys.js';
import { createAuthenticator } from './auth/authenticate.js';
import type { Principal } from './auth/principal.js';
import { PaymentRequestService } from './payment-requests/payment-request.service.js';
import { AccountService } from './accounts/account.service.js';
import { TransactionService } from './transactions/transaction.service.js';
import { DeveloperService } from './developers/developer.service.js';
import { createRestRouter } from './rest/rest-router.js';
import { apolloKoaMiddleware } from './http/apollo-koa.js';
import type { GatewayState } from './http/state.js';
import { EventHub } from './events/event-hub.js';
import { CommitHookSource, PgListenSource } from './events/event-source.js';
import { ExpirySweeper } from './payment-requests/expiry-sweeper.js';
import { attachGraphqlWs, type GraphqlWs } from './ws/graphql-ws.js';

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
  readonly ws: GraphqlWs;
  listen(port?: number, host?: string): Promise<string>;
  /** Stops accepting, drains HTTP, closes sockets and the background work (not the database). */
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
  return {
    config,
    payments: new PaymentRequestService(config),
    accounts: new AccountService(config),
    transactions: new TransactionService(),
    developers: new DeveloperService(),
    keys: new SecretKeyVerifier(config, forkEm, logger),
    events: new EventHub(source, forkEm, logger),
  };
}

/** Wires Koa (REST, health, Apollo) onto one http.Server. */
export async function createGateway({ config, db, logger }: GatewayOptions): Promise<Gateway> {
  const schema = await getSchema();
  const services = createServices(config, db, logger);
  const auth = createAuthenticator(config, services.keys);
  const server = http.createServer();
  await services.events.start();
  const sweeper = new ExpirySweeper(services.payments, () => db.orm.em.fork(), config.expirySweepIntervalMs, logger);
  sweeper.start();
  const ws = attachGraphqlWs({ server, schema, config, services, logger, forkEm: () => db.orm.em.fork() });

  const contextFor = (ctx: Koa.ParameterizedContext<GatewayState>, principal: Principal): Context => ({
    principal,
    em: db.orm.em.fork(),
    services,
    requestId: ctx.state.requestId,
    log: logger.child({ requestId: ctx.state.requestId }),
  });

  const apollo = new ApolloServer<Context>({
    schema,
    introspection: config.appEnv !== 'production',
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    includeStacktraceInErrorResponses: false,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer: server }),
      ...(config.appEnv === 'production' ? [ApolloServerPluginLandingPageDisabled()] : []),
    ],
    formatError: (formatted, error) => formatGraphQLError(formatted, error, logger),
  });
  await apollo.start();

  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;

  // Request id, access log and the one error boundary of the HTTP door.
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    ctx.state.requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    try {
      await next();
      if (ctx.status >= 400 && (ctx.body === undefined || ctx.body === null)) {
        ctx.body = { statusCode: ctx.status, message: STATUS_MESSAGES[ctx.status] ?? 'Error' } satisfies ErrorBody;
      }
    } catch (err) {
      const body = errorBody(err);
      if (body.statusCode >= 500 && body.statusCode !== 503) {
        logger.error({ err, requestId: ctx.state.requestId }, 'unexpected error');
      } else if (body.statusCode === 503) {
        logger.warn({ requestId: ctx.state.requestId, err: { message: (err as Error).message } }, 'database unavailable');
      }
      ctx.status = body.statusCode;
      ctx.body = body;
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logger.info(
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          route: ctx.state.route ?? (ctx.status === 404 ? 'unmatched' : ctx.path),
          status: ctx.status,
          durationMs: Math.round(durationMs * 100) / 100,
        },
        'request',
      );
    }
  });

  const rest = createRestRouter({
    schema,
    context: async (ctx) => contextFor(ctx, await auth.developerFromAuthorization(ctx.get('authorization') || undefined)),
  });

  const root = new Router<GatewayState>();
  root.get('/healthz', (ctx) => {
    ctx.state.route = 'GET /healthz';
    ctx.body = { status: 'ok' };
  });
  const graphql = apolloKoaMiddleware(apollo, async (ctx: Koa.ParameterizedContext<GatewayState>) => {
    ctx.state.route = `${ctx.method} /graphql`;
    try {
      return contextFor(ctx, await auth.fromAuthorization(ctx.get('authorization') || undefined));
    } catch (err) {
      if (err instanceof AppError) {
        throw new GraphQLError(err.message, {
          extensions: { code: err.code, statusCode: err.statusCode, http: { status: err.statusCode } },
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
  server.on('request', app.callback());

  return {
    server,
    services,
    sweeper,
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
      await sweeper.stop();
      await ws.dispose();
      await services.events.close();
      await apollo.stop();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
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
