import {
  context as otelContext,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context as OtelContext,
  type Span,
} from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import { getOperationAST, type DocumentNode, type OperationDefinitionNode } from 'graphql';

/**
 * The gateway's side of OpenTelemetry tracing: the spans it makes itself (GraphQL operations and
 * resolvers, WebSocket operations, webhook deliveries) and the annotations of the HTTP server
 * span. Tracing is off unless configured (see `tracingConfigured`); `src/observability/otel.ts`
 * starts the SDK before the app is loaded and turns `tracing.on` on. While it is off, every hook
 * here is behind that one boolean, so the request path does no tracing work at all.
 */
export const tracing: { on: boolean; startError?: string } = { on: false };

const TRACER_NAME = 'wallet-gateway';

/**
 * Whether the environment asks for traces: an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or an explicit `OTEL_TRACES_EXPORTER` (e.g. `console`),
 * unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`.
 */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters[0] === 'none') return false;
  return exporters.length > 0 || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

let shutdownHook: (() => Promise<void>) | undefined;

/** Registers how to flush and stop the SDK (otel.ts); `shutdownTracing` runs it. */
export function onTracingShutdown(fn: () => Promise<void>): void {
  shutdownHook = fn;
}

/** Exports the spans still buffered and stops the SDK (at process exit); a no-op when tracing is off. */
export async function shutdownTracing(): Promise<void> {
  const fn = shutdownHook;
  shutdownHook = undefined;
  await fn?.().catch(() => undefined);
}

const tracer = () => trace.getTracer(TRACER_NAME);

/**
 * Runs `fn` inside a new span (the active one while `fn` runs, so database statements and nested
 * spans become its children), recording a thrown error on it. Only call it while `tracing.on`.
 */
export function inSpan<T>(name: string, options: { kind?: SpanKind; attributes?: Attributes; parent?: OtelContext }, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? otelContext.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs background work (a poll loop's pass, woken by a request's commit) outside the trace of
 * whatever woke it: its statements, and the timers it schedules, must not join that request's
 * trace for good. A plain call while tracing is off.
 */
export function detachedFromTrace<T>(fn: () => T): T {
  return tracing.on ? otelContext.with(ROOT_CONTEXT, fn) : fn();
}

/** Marks a span failed with the error's class and code only: messages may carry input values. */
export function failSpan(span: Span, err: unknown): void {
  const e = err as { name?: unknown; code?: unknown };
  const type = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** The trace and span ids of the active span, for log lines (pino mixin); empty outside a span. */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(otelContext.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/**
 * Names the HTTP server span of this request after its route (`POST /api/v1/wallet/request-payment`):
 * the route template becomes `http.route` (the HTTP instrumentation renames the span with it when
 * the response ends), and `url.path` is replaced by the template too: raw paths carry phone
 * numbers and usernames (`/account/{identifier}`), which never leave the gateway.
 */
export function annotateHttpRoute(route: string | undefined): void {
  const active = otelContext.active();
  const rpc = getRPCMetadata(active);
  const span = rpc?.type === RPCType.HTTP ? rpc.span : trace.getSpan(active);
  if (!span) return;
  // Our route labels read "METHOD /path"; the template is the path part.
  const template = route && route.includes(' /') ? route.slice(route.indexOf(' ') + 1) : undefined;
  if (template && rpc?.type === RPCType.HTTP) rpc.route = template;
  span.setAttribute('url.path', template ?? '(unmatched)');
}

/** `query`, `mutation` or `subscription` and the operation's name (its root fields when it has none). */
export function operationLabel(operation: OperationDefinitionNode | null | undefined): { type: string; name: string | undefined; spanName: string } {
  if (!operation) return { type: 'graphql', name: undefined, spanName: 'graphql' };
  const type = operation.operation;
  const name = operation.name?.value;
  const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === 'Field' ? [s.name.value] : []));
  const label = name ?? (fields.length > 0 ? fields.join(',') : undefined);
  return { type, name, spanName: label ? `${type} ${label}` : type };
}

/** Span attributes of a GraphQL operation (semantic conventions; never the document or variables, which carry values). */
export function operationAttributes(label: ReturnType<typeof operationLabel>, transport: 'http' | 'websocket'): Attributes {
  return {
    'graphql.operation.type': label.type,
    ...(label.name ? { 'graphql.operation.name': label.name } : {}),
    'network.protocol.name': transport,
  };
}

/** The GraphQL operation span of a document (REST routes, graphql-ws). */
export function graphqlOperationSpan<T>(
  document: DocumentNode,
  operationName: string | null | undefined,
  transport: 'http' | 'websocket',
  fn: () => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  const label = operationLabel(getOperationAST(document, operationName ?? undefined));
  return inSpan(label.spanName, { kind, attributes: operationAttributes(label, transport) }, fn);
}

/** Marks the context of an Apollo request whose operation is not known yet (the span is renamed once it is). */
const PENDING_OPERATION = createContextKey('wallet-gateway.graphql-operation-span');

/** Runs an Apollo HTTP request inside a `graphql` span that `nameApolloOperation` renames after parsing. */
export function apolloRequestSpan<T>(fn: () => Promise<T>): Promise<T> {
  return inSpan('graphql', { attributes: { 'network.protocol.name': 'http' } }, (span) =>
    otelContext.with(otelContext.active().setValue(PENDING_OPERATION, span), fn),
  );
}

/** Apollo's didResolveOperation: names the request's span after its operation. */
export function nameApolloOperation(operation: OperationDefinitionNode | null | undefined): void {
  const span = otelContext.active().getValue(PENDING_OPERATION) as Span | undefined;
  if (!span) return;
  const label = operationLabel(operation);
  span.updateName(label.spanName);
  span.setAttributes(operationAttributes(label, 'http'));
}

export { SpanKind };

/** What a webhook POST came to, as `postWebhook` reports it. */
interface WebhookOutcome {
  status?: number;
  error?: string;
}

/**
 * A webhook delivery attempt as a client span (`POST webhook`): the merchant's server receives
 * its `traceparent` (W3C Trace Context), so a merchant that traces can join the delivery to its
 * own handling. Attributes: host, port, scheme (never the path or query, which may hold a
 * merchant's token), the response status, the event, endpoint and attempt number.
 */
export function webhookSpan<T extends WebhookOutcome>(
  url: URL,
  attributes: Attributes,
  headers: Record<string, string>,
  post: (headers: Record<string, string>) => Promise<T>,
): Promise<T> {
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  const base: Attributes = {
    'http.request.method': 'POST',
    'server.address': url.hostname,
    'server.port': port,
    'url.scheme': url.protocol.replace(/:$/, ''),
    ...attributes,
  };
  return inSpan('POST webhook', { kind: SpanKind.CLIENT, attributes: base }, async (span) => {
    const carrier = { ...headers };
    propagation.inject(otelContext.active(), carrier);
    const outcome = await post(carrier);
    if (outcome.status !== undefined) span.setAttribute('http.response.status_code', outcome.status);
    const failure = outcome.status === undefined ? (outcome.error ?? 'request failed') : outcome.status >= 300 ? String(outcome.status) : undefined;
    if (failure) {
      span.setAttribute('error.type', failure);
      span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
    }
    return outcome;
  });
}
