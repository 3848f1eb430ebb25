import type { EntityManager } from '@mikro-orm/postgresql';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the instance's gauges read at scrape time. */
export interface MetricsSources {
  /** Open GraphQL subscriptions on this instance. */
  subscriptions: () => number;
  /** Seconds since this process's outbox reader (or, with NATS, the leader's relay) last read everything committed. */
  outboxLagSeconds?: () => number;
  /** A fresh EntityManager, for the gauges read from the database at scrape time. */
  database?: () => EntityManager;
  defaultMetrics?: boolean;
}

/** The outbox reader's lag, read at scrape time; summed over a cluster as the largest value. */
export function outboxLagGauge(registry: Registry, seconds: () => number): Gauge {
  return new Gauge({
    name: 'outbox_reader_lag_seconds',
    help: 'Seconds since the outbox reader last read everything committed (0 while idle is no lag; grows while it cannot read).',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(seconds());
    },
  });
}

/** The database-derived figures of one scrape (one statement). */
interface DatabaseFigures {
  pending: string | number;
  oldest: string | number | null;
  mismatches: number | null;
  checkedAt: string | number | null;
}

/**
 * Prometheus metrics of one gateway instance, in two registries:
 * - `registry`: what this process counts itself (HTTP, payment outcomes and decision times,
 *   webhook attempts, subscriptions, the outbox reader's lag, Node's own). With several cluster
 *   workers these are summed over the workers at scrape time (src/observability/cluster-metrics.ts);
 *   each metric says how it aggregates.
 * - `databaseRegistry`: figures of the whole system read from PostgreSQL at scrape time (pending
 *   webhook deliveries, the latest ledger check), the same whichever worker or instance answers.
 * No label ever holds a merchant, user, wallet or reference value: only routes, outcomes and classes.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly databaseRegistry = new Registry();

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

  readonly paymentDecision = new Histogram({
    name: 'payment_request_decision_seconds',
    help: 'Time from a payment request’s creation to its decision, by decision: approved, rejected, cancelled, expired.',
    labelNames: ['decision'] as const,
    buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 180, 240, 300, 600],
    registers: [this.registry],
  });

  readonly approvalVerifications = new Counter({
    name: 'approval_verifications_total',
    help: 'Approval verifications by method (pin, passkey) and outcome (ok, failed, locked: refused while the wallet is locked).',
    labelNames: ['method', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome (delivered, retrying, failed: given up) and result (2xx, 3xx, 4xx, 5xx, timeout, network_error, blocked).',
    labelNames: ['outcome', 'result'] as const,
    registers: [this.registry],
  });

  readonly openSubscriptions: Gauge;

  readonly outboxLag: Gauge;

  readonly eventLag = new Histogram({
    name: 'event_delivery_lag_seconds',
    help: 'Time from an event being published (inside its transaction) to its delivery to subscribers here.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  /** Outbox reads (each one statement): an instance's own reader, the NATS relay (the leader's), or a reader standing in while NATS is away. */
  readonly outboxReads = new Counter({
    name: 'outbox_reads_total',
    help: 'Reads of the outbox by reader: instance (its own subscribers), relay (the leader, for NATS), fallback (while NATS does not carry the events).',
    labelNames: ['reader'] as const,
    registers: [this.registry],
  });

  private readonly webhookPending = new Gauge({
    name: 'webhook_deliveries_pending',
    help: 'Webhook deliveries waiting to be delivered (or retried) to enabled endpoints, all instances.',
    registers: [this.databaseRegistry],
  });

  private readonly webhookOldestPending = new Gauge({
    name: 'webhook_oldest_pending_delivery_age_seconds',
    help: 'Age of the oldest webhook delivery still pending to an enabled endpoint (0 when none).',
    registers: [this.databaseRegistry],
  });

  private readonly ledgerMismatches = new Gauge({
    name: 'ledger_check_mismatches',
    help: 'Balances that differed from the sum of their ledger entries at the latest scheduled ledger check.',
    registers: [this.databaseRegistry],
  });

  private readonly ledgerCheckedAt = new Gauge({
    name: 'ledger_check_last_run_timestamp_seconds',
    help: 'When the latest scheduled ledger check ran (Unix time; 0 before the first).',
    registers: [this.databaseRegistry],
  });

  constructor(private readonly sources: MetricsSources) {
    this.openSubscriptions = new Gauge({
      name: 'graphql_open_subscriptions',
      help: 'Open GraphQL subscriptions (summed over the workers).',
      registers: [this.registry],
      aggregator: 'sum',
      collect() {
        this.set(sources.subscriptions());
      },
    });
    // 0 in a cluster worker: the primary reads the outbox for the workers and reports the lag.
    this.outboxLag = outboxLagGauge(this.registry, () => sources.outboxLagSeconds?.() ?? 0);
    if (sources.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * The database-derived gauges, read now in one statement (an index scan of the pending
   * deliveries and the latest ledger check). Empty when the database does not answer: the
   * scrape still reports everything else.
   */
  async databaseMetrics(): Promise<string> {
    const em = this.sources.database?.();
    if (!em) return '';
    let figures: DatabaseFigures | undefined;
    try {
      [figures] = await em.execute<DatabaseFigures[]>(
        `select p.pending, p.oldest, lc.mismatches, extract(epoch from lc.checked_at) as "checkedAt"
           from (select count(*) as pending, extract(epoch from now() - min(d.created_at)) as oldest
                   from webhook_deliveries d join webhook_endpoints ep on ep.id = d.endpoint_id and ep.status = 'ENABLED'
                  where d.status = 'PENDING') p
           left join lateral (select mismatches, checked_at from ledger_checks order by checked_at desc limit 1) lc on true`,
      );
    } catch {
      return '';
    }
    if (!figures) return '';
    this.webhookPending.set(Number(figures.pending));
    this.webhookOldestPending.set(figures.oldest === null ? 0 : Math.max(0, Number(figures.oldest)));
    // Before any check both read 0: alert on the timestamp's age as well as on the mismatches.
    this.ledgerMismatches.set(Number(figures.mismatches ?? 0));
    this.ledgerCheckedAt.set(Number(figures.checkedAt ?? 0));
    return this.databaseRegistry.metrics();
  }
}
