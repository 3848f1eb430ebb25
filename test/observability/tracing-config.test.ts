// When tracing is on: only when the standard OTEL_* variables ask for it (src/main.ts loads the
// SDK only then). Without them nothing of the SDK is loaded and the hooks stay off.
import { tracing, tracingConfigured } from '../../src/observability/tracing.js';

test.each([
  [{}, false],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
  [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
  [{ OTEL_TRACES_EXPORTER: 'console' }, true],
  [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
  [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
  [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
  [{ OTEL_SERVICE_NAME: 'wallet-gateway' }, false],
] as const)('%j → %s', (env, on) => {
  expect(tracingConfigured(env)).toBe(on);
});

test('in a process where nothing started the SDK (every in-process test), tracing is off', () => {
  expect(tracing.on).toBe(false);
});
