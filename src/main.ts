import { assertSupportedNode } from './runtime.js';

/**
 * Process entry of `npm start` (and of every cluster worker, which runs this file again): refuses
 * an unsupported Node before anything else loads, starts OpenTelemetry tracing when it is
 * configured (the SDK and its instrumentations must be in place before the app's modules load,
 * hence the dynamic imports), then runs the gateway (src/gateway-main.ts). Without tracing
 * configured the SDK is never loaded.
 */
assertSupportedNode();
const { tracing, tracingConfigured } = await import('./observability/tracing.js');
if (tracingConfigured()) {
  try {
    await (await import('./observability/otel.js')).startTracing();
  } catch (err) {
    // Tracing is an aid, not a dependency: the gateway runs without it and logs why (gateway-main.ts).
    tracing.startError = err instanceof Error ? err.message : String(err);
  }
}
await import('./gateway-main.js');
