import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one gateway instance (its own registry, so instances in one process stay apart). */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly paymentRequests = new Counter({
    name: 'payment_requests_total',
    help: 'Payment requests by outcome: created, approved, rejected, cancelled, expired, insufficient_funds.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly openSubscriptions: Gauge;

  readonly eventLag = new Histogram({
    name: 'event_delivery_lag_seconds',
    help: 'Time from an event being published (inside its transaction) to its delivery to subscribers here.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  /** `subscriptions` is read at scrape time. */
  constructor(opts: { subscriptions: () => number; defaultMetrics?: boolean }) {
    this.openSubscriptions = new Gauge({
      name: 'graphql_open_subscriptions',
      help: 'Open GraphQL subscriptions on this instance.',
      registers: [this.registry],
      collect() {
        this.set(opts.subscriptions());
      },
    });
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }
}
