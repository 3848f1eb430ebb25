import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { SpanStatusCode, type Span } from '@opentelemetry/api';
import { register as registerImportHooks, supportsSyncHooks } from 'import-in-the-middle/register-hooks.mjs';
import { sqlShape } from '../logger.js';
import { onTracingShutdown, tracing } from './tracing.js';

/** Requests that are not worth a trace: probes and scrapes, every few seconds. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Starts the OpenTelemetry SDK (only imported when `tracingConfigured()`, before the app's own
 * modules load: src/main.ts). The SDK reads the standard OTEL_* variables itself: exporter and
 * protocol, endpoint and headers, sampler, resource attributes, batch sizes. Instrumented:
 * incoming HTTP (one server span per request; probes and scrapes left out) and PostgreSQL
 * statements made inside a traced operation (with the statement's shape, never its values). The
 * gateway adds its own spans for GraphQL, WebSocket operations and webhook deliveries
 * (src/observability/tracing.ts). Metrics and logs stay with Prometheus and pino: the SDK's
 * metric and log pipelines are not started.
 */
export async function startTracing(): Promise<void> {
  // ESM: `import http from 'node:http'` is patched through a module hook, which must be in place
  // before the app is imported (main.ts imports it afterwards). Only these modules are hooked.
  const include = ['http', 'node:http', 'https', 'node:https', 'pg'];
  if (supportsSyncHooks()) registerImportHooks({ include });

  const [{ NodeSDK }, { HttpInstrumentation }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME?.trim() || 'wallet-gateway',
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]!),
        // The one outgoing call is a webhook send (a delivery or a test send), which has its own client span (WebhookSender);
        // the exporter's own requests are not traced either.
        disableOutgoingRequestInstrumentation: true,
        // The query string may carry a merchant's reference: none of it is recorded.
        startIncomingSpanHook: (req: IncomingMessage) => ((req.url ?? '').includes('?') ? { 'url.query': '(redacted)' } : {}),
      }),
      new PgInstrumentation({
        // Statements of background loops (outbox reads every 300 ms) only inside a traced operation.
        requireParentSpan: true,
        ignoreConnectSpans: true,
        enhancedDatabaseReporting: false,
        requestHook: (span: Span, { query }: { query: { text?: string } }) => {
          // The ORM inlines values into its SQL: only the statement's shape is recorded.
          if (query.text) span.setAttribute('db.query.text', sqlShape(query.text));
          // A driver error's message can quote a value ("invalid input value for enum …: \"X\"").
          const setStatus = span.setStatus.bind(span);
          span.setStatus = (status) => setStatus(status.code === SpanStatusCode.ERROR ? { code: status.code, message: 'PostgreSQL error' } : status);
        },
      }),
    ],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  // `http` may already have been required by the SDK's exporter before the hook saw an import
  // of it; requiring it here lets the CommonJS hook patch the shared module object for certain.
  createRequire(import.meta.url)('node:http');
  tracing.on = true;
  onTracingShutdown(() => sdk.shutdown());
}
