import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { createServices, type Services } from './services.js';
import { getSchema, RESOLVERS } from './schema.js';
import { createResolvers } from './resolvers.js';
import { createRestRouter } from './rest/rest-router.js';
import { IdempotencyStore } from './rest/idempotency.js';
import { apolloKoaMiddleware } from './http/apollo-koa.js';
import { createHttpDrain } from './http/drain.js';
import { httpContext, sendRateLimit } from './http/operation-context.js';
import { requestScope } from './http/request-scope.js';
import { securityHeaders } from './http/security-headers.js';
import { tagWorker } from './http/worker-tag.js';
import { createProbesRouter } from './http/probes.js';
import { createJwksRouter } from './http/jwks.js';
import { createPayPageRouter } from './http/pay-page.js';
import { answerMalformedRequests, unknownMethods } from './http/protocol.js';
import type { GatewayState } from './http/state.js';
import { createApollo, contextError } from './graphql/apollo.js';
import { graphqlLimits } from './graphql/limits.js';
import { BatchSweeper } from './background/batch-sweeper.js';
import { attachGraphqlWs, type GraphqlWs } from './ws/graphql-ws.js';
import { createDocsRouter } from './openapi/openapi.js';
import { Maintenance } from './maintenance.js';
import { startSandbox } from './sandbox/sandbox.js';
import { LedgerCheckSchedule } from './ledger/ledger-check-schedule.js';
import { serveWorkerMetrics } from './observability/cluster-metrics.js';
import { PayoutSchedule } from './settlement/payout-schedule.js';
import { AdvisoryLeadership, SoleLeadership, type Leadership } from './background/leadership.js';
import { LeaderWork, type LeaderTask } from './background/leader-work.js';

export interface GatewayOptions {
  config: Config;
  db: Database;
  logger: Logger;
}

/** A running gateway: one http.Server carrying REST, GraphQL over HTTP and GraphQL over WebSocket. */
export interface Gateway {
  readonly server: http.Server;
  readonly services: Services;
  readonly sweeper: BatchSweeper;
  /** Voids holds past HOLD_TTL_HOURS, on the expiry sweeper's interval. */
  readonly holdSweeper: BatchSweeper;
  /** The daily payouts (PAYOUT_CUTOFF in SETTLEMENT_TIMEZONE; PAYOUT_CHECK_INTERVAL_SECONDS=0: not on this instance). */
  readonly payoutSchedule: PayoutSchedule;
  readonly maintenance: Maintenance;
  /** Whether this instance is the elected leader, which runs the background work (src/background/leadership.ts). */
  readonly leadership: Leadership;
  readonly ws: GraphqlWs;
  listen(port?: number, host?: string): Promise<string>;
  /**
   * Stops accepting, drains in-flight HTTP, closes WebSockets with 1001 and stops the background
   * work. The database is the caller's to close afterwards.
   */
  dispose(): Promise<void>;
}

/** Wires the three doors (REST, GraphQL over HTTP, graphql-ws) and the background work onto one http.Server. */
export async function createGateway({ config, db, logger }: GatewayOptions): Promise<Gateway> {
  const schema = await getSchema();
  const services = createServices(config, db, logger);
  // The resolvers with their services; a resolver the schema needs but nobody made fails here, at start.
  const container = createResolvers(services);
  container.requireAll(RESOLVERS);
  const contexts = { works: services.works, rateLimits: services.rateLimits, container };
  const server = http.createServer();
  const drain = createHttpDrain(server);
  answerMalformedRequests(server);
  await services.eventHub.start();
  // The background work runs once per database, on the elected leader; every instance sends its
  // own commits' webhooks at once and serves its own subscribers.
  const sweeper = new BatchSweeper(
    { what: 'expiry', done: 'expired payment requests', batch: (work, size) => services.payments.expireDue(work, size) },
    () => services.works.begin(),
    config.expirySweepIntervalMs,
    logger,
  );
  const holdSweeper = new BatchSweeper(
    { what: 'hold', done: 'voided expired holds', batch: (work, size) => services.transactions.expireHolds(work, size) },
    () => services.works.begin(),
    config.expirySweepIntervalMs,
    logger,
  );
  services.deliveries.start();
  const maintenance = new Maintenance(services.forkEm, logger, config);
  const ledgerChecks = new LedgerCheckSchedule(services.forkEm, config.ledgerCheckIntervalSeconds, logger);
  // The daily payouts: leader's work like the other schedules (any number of instances may run it:
  // the database refuses a second payout for a cut-off; the leader runs it once).
  const payoutSchedule = new PayoutSchedule(
    services.payouts,
    () => services.works.begin(),
    { time: config.payoutCutoff, zone: config.settlementTimezone, intervalSeconds: config.payoutCheckIntervalSeconds },
    logger.child({ component: 'payout-schedule' }),
  );
  serveWorkerMetrics(services.metrics.registry); // a cluster worker: its metrics go into the cluster's sum
  const sandbox = await startSandbox({ config, services, forkEm: services.forkEm, logger }); // development only
  const loop = (name: string, job: { start(): void; stop(): Promise<void> }): LeaderTask => ({ name, start: () => job.start(), stop: () => job.stop() });
  const leaderTasks: LeaderTask[] = [
    loop('expiry sweep', sweeper),
    loop('hold sweep', holdSweeper),
    loop('maintenance', maintenance),
    loop('ledger check', ledgerChecks),
    loop('payout schedule', payoutSchedule),
    services.deliveries.leaderTask,
    ...(services.eventHub.leaderTask ? [services.eventHub.leaderTask] : []),
    ...(sandbox ? [sandbox.responder] : []),
  ];
  const leadership: Leadership = db.embedded
    ? new SoleLeadership(logger)
    : new AdvisoryLeadership({ url: db.url, log: logger, intervalMs: config.leaderElectIntervalMs });
  const leaderWork = new LeaderWork(leadership, leaderTasks, logger);
  await leadership.start();
  const validationRules = graphqlLimits(config);
  const ws = attachGraphqlWs({ server, schema, config, services, contexts, logger, validationRules });
  const apollo = await createApollo({ schema, config, logger, validationRules });

  const app = new Koa<GatewayState>({ proxy: false });
  app.silent = true;
  app.use(requestScope(logger, services.metrics));
  app.use(securityHeaders(sandbox?.pages.headersFor));

  const rest = createRestRouter({
    schema,
    context: (ctx) => httpContext(ctx, services.auth, contexts, logger, 'rest'),
    idempotency: new IdempotencyStore(db.sql),
    replies: { reports: services.payouts },
  });
  const graphql = apolloKoaMiddleware(
    apollo,
    async (ctx: Koa.ParameterizedContext<GatewayState>) => {
      ctx.state.route = `${ctx.method} /graphql`;
      try {
        return await httpContext(ctx, services.auth, contexts, logger, 'graphql');
      } catch (err) {
        throw contextError(err);
      }
    },
    sendRateLimit,
  );
  const graphqlRouter = new Router<GatewayState>();
  graphqlRouter.get('/graphql', graphql);
  graphqlRouter.post('/graphql', graphql);

  app.use(unknownMethods);
  // The sandbox pages (development) come before /graphql: a browser's GET /graphql is GraphiQL.
  const sandboxRouters = sandbox ? [sandbox.pages.router] : [];
  const payPages = createPayPageRouter(config, services);
  const jwks = createJwksRouter(services.consentReceipts);
  for (const router of [rest, createProbesRouter(services), jwks, payPages, ...sandboxRouters, graphqlRouter, createDocsRouter()]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  server.on('request', drain.guard(app.callback()));
  tagWorker(config, server, ws.wss);

  return {
    server,
    services,
    sweeper,
    holdSweeper,
    payoutSchedule,
    maintenance,
    leadership,
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
      // The leader's work stops, then the leadership is handed over at once (the others bid now).
      await leadership.close();
      await Promise.all([leaderWork.stop(), services.deliveries.stop()]);
      await services.eventHub.close();
    },
  };
}
