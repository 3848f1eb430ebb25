import 'reflect-metadata';
import cluster from 'node:cluster';
import pino from 'pino';
import { loadConfig, ConfigError } from './config.js';
import { resolveStartupKeys } from './startup-keys.js';
import { createLogger, defaultLogFormat } from './logger.js';
import { nextSteps, nextStepsText } from './next-steps.js';
import { openDatabase } from './db/database.js';
import { createGateway } from './server.js';
import { runPrimary } from './cluster.js';
import { shutdownTracing, tracing } from './observability/tracing.js';

/**
 * The gateway process (entered through src/main.ts): configuration → database (migrated) →
 * gateway → signal handling. With more than one worker (`WEB_CONCURRENCY`, by default one per
 * core on a PostgreSQL server) this process is the cluster's primary: it migrates once, then
 * supervises the workers (src/cluster.ts), each of which comes back here as a whole gateway
 * instance on the shared port.
 */
async function main(): Promise<void> {
  let config;
  try {
    config = resolveStartupKeys(loadConfig());
  } catch (err) {
    if (err instanceof ConfigError) failedToStart(err.message);
    throw err;
  }
  const format = config.logFormat ?? defaultLogFormat(config.appEnv);
  const logger = createLogger(config.logLevel, undefined, { format });
  if (tracing.startError) logger.warn({ err: { message: tracing.startError } }, 'tracing not started; running without it');
  else if (tracing.on) logger.info({ exporter: process.env.OTEL_TRACES_EXPORTER ?? 'otlp' }, 'tracing on');
  // Node prints warnings (MaxListenersExceeded, deprecations) as plain text on stderr; here they
  // become JSON log lines like everything else.
  process.removeAllListeners('warning');
  process.on('warning', (w) => logger.warn({ warning: { name: w.name, code: (w as NodeJS.ErrnoException).code, message: w.message } }, 'process warning'));
  if (config.devSecretsInUse.length > 0) {
    logger.warn({ secrets: config.devSecretsInUse }, 'using built-in development secrets; never do this in production');
  }
  if (cluster.isPrimary && config.webConcurrency > 1) {
    // Migrations once, before the workers start; then the primary only supervises (no database).
    const migrated = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolMax: 1, logger });
    await migrated.close();
    runPrimary({ workers: config.webConcurrency, logger });
    return;
  }
  const db = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, poolMax: config.dbPoolMax, logger });
  logger.info({ database: config.databaseUrl ? 'DATABASE_URL' : `embedded (${config.dataDir})` }, 'database ready, migrations applied');
  const gateway = await createGateway({ config, db, logger });
  const url = await gateway.listen();
  logger.info({ url, env: config.appEnv }, 'wallet gateway listening');
  // Development: where to go next, once per start (the first worker of a cluster says it).
  const steps = nextSteps(url, config);
  if (steps && (cluster.isPrimary || cluster.worker?.id === 1)) {
    if (format === 'pretty') process.stdout.write(`${nextStepsText(steps)}\n`);
    else logger.info({ next: steps }, 'next steps');
  }

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 10 s; exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    try {
      await gateway.dispose();
      await db.close();
      await shutdownTracing(); // the last spans are exported before the exit
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  if (cluster.isWorker) {
    // The primary died (kill -9, a crash): node:cluster would end this worker at once, cutting
    // its requests. Instead it drains like on SIGTERM (no new connections come without the
    // primary) and exits; its leadership, if it held it, passes to another instance.
    process.prependOnceListener('disconnect', () => {
      if (stopping) return;
      if (cluster.worker) cluster.worker.exitedAfterDisconnect = true;
      logger.warn('the cluster primary is gone; draining and exiting');
      void stop('primary gone');
    });
  }
}

/**
 * A start that cannot go on (bad configuration, no database): one JSON log line on stderr, like
 * every other line a log collector reads (level fatal, a message saying what failed and the
 * reason), written synchronously before the exit. No stack trace: the reason is the message.
 */
function failedToStart(reason: string): never {
  createLogger('info', pino.destination({ fd: 2, sync: true }), { format: 'json' }).fatal({ reason }, `wallet-gateway failed to start: ${reason}`);
  process.exit(1);
}

main().catch((err: unknown) => failedToStart(err instanceof Error ? err.message : String(err)));
