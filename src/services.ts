import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import { SecretKeyVerifier } from './auth/secret-keys.js';
import { createAuthenticator, type Authenticator } from './auth/authenticate.js';
import { PaymentRequestService } from './payment-requests/payment-request.service.js';
import { AccountService } from './accounts/account.service.js';
import { TransactionService } from './transactions/transaction.service.js';
import { DeveloperService } from './developers/developer.service.js';
import { EventHub } from './events/event-hub.js';
import { createOutboxFeed } from './events/feeds.js';
import { sql } from './db/sql.js';
import { UnitsOfWork } from './db/unit-of-work.js';
import { RateLimits } from './rate-limit.js';
import { EventService } from './events/event.service.js';
import { SecretBox } from './webhooks/secret-box.js';
import { WebhookEndpointService } from './webhooks/webhook-endpoint.service.js';
import { DeliveryWorker } from './webhooks/delivery-worker.js';
import { WebhookSender } from './webhooks/sender.js';
import { EndpointHealth } from './webhooks/endpoint-health.js';
import { Metrics } from './observability/metrics.js';
import { OutboxLag } from './observability/outbox-lag.js';
import { OperatorService } from './operators/operator.service.js';
import { AuditService } from './audit/audit.service.js';
import { PasskeyService } from './consent/passkey.service.js';
import { ConsentService } from './consent/consent.service.js';
import { ConsentSigner } from './consent/consent-keys.js';
import { PayerControls } from './payer-controls/payer-controls.service.js';
import { SettlementService } from './settlement/settlement.service.js';
import { PayoutService } from './settlement/payout.service.js';

/** The services every door shares, built once per process (the HTTP server and the CLI alike). */
export interface Services {
  readonly config: Config;
  /** A fresh EntityManager, for the ORM's reads outside units of work (credential look-ups, the internal tools' lists). */
  forkEm(): EntityManager;
  /** Opens the unit of work of one operation (src/db/unit-of-work.ts); its commits reach this instance's event hub. */
  readonly works: UnitsOfWork;
  readonly payments: PaymentRequestService;
  readonly accounts: AccountService;
  /** Transaction PINs and the verification of every approval (src/consent). */
  readonly consent: ConsentService;
  readonly transactions: TransactionService;
  readonly developers: DeveloperService;
  readonly keys: SecretKeyVerifier;
  /** Operator identities (named admin tokens). */
  readonly operators: OperatorService;
  /** The append-only audit log of admin mutations. */
  readonly audit: AuditService;
  /** Who is calling, from an Authorization header (every door). */
  readonly auth: Authenticator;
  /** This instance's event fan-out to subscribers. */
  readonly eventHub: EventHub;
  /** The events API (a developer's events read from the outbox). */
  readonly eventLog: EventService;
  /** Merchants' webhook endpoints. */
  readonly webhookEndpoints: WebhookEndpointService;
  /** This instance's webhook delivery worker (started with the server; woken with the outbox readers). */
  readonly deliveries: DeliveryWorker;
  /** Per-secret-key limits shared by all instances. */
  readonly rateLimits: RateLimits;
  readonly metrics: Metrics;
  /** Wallet users' passkeys (WebAuthn) and approval challenges. */
  readonly passkeys: PasskeyService;
  /** Signs consent receipts and publishes their keys (GET /.well-known/jwks.json). */
  readonly consentReceipts: ConsentSigner;
  /** The payer's blocks and reports. */
  readonly payerControls: PayerControls;
  /** Fees, the developer's balance and its balance transactions (the merchant's side of every payment and refund). */
  readonly settlement: SettlementService;
  /** Payouts: made by a run, read by their developer, settled by operators. */
  readonly payouts: PayoutService;
}

/** Builds the services; nothing is started here (see `eventHub.start()`). */
export function createServices(config: Config, db: Database, logger: Logger): Services {
  const forkEm = (): EntityManager => db.orm.em.fork();
  // Each process is an instance with its own feed (src/events/feeds.ts): it reads the outbox for
  // its own subscribers, or, with NATS_URL, takes them from the stream the leader publishes.
  const lag = new OutboxLag();
  const feed = createOutboxFeed(
    config,
    logger,
    (name, text, values) => db.sql.run(sql(name, text), values),
    (rows, reader) => {
      lag.read(rows);
      // (Reads begin after the services are built: `metrics` is there by then.)
      if (reader !== 'marker') metrics.outboxReads.inc({ reader });
    },
  );
  // The gauges read the hub and the reader at scrape time, the hub reports each delivery's lag to the histogram.
  const metrics: Metrics = new Metrics({
    subscriptions: () => eventHub.stats.subscriptions,
    outboxLagSeconds: () => lag.seconds,
    database: forkEm,
  });
  const eventHub = new EventHub(feed, logger, {
    onDelivered: (seconds) => metrics.eventLag.observe(seconds),
  });
  const works = new UnitsOfWork(db.sql, forkEm);
  works.onCommit((committed) => eventHub.committed(committed));
  const keys = new SecretKeyVerifier(config, forkEm, logger);
  const settlement = new SettlementService(config);
  const transactions = new TransactionService(config.maxAmount, settlement);
  const operators = new OperatorService(config, forkEm, logger);
  const secretBox = new SecretBox(config.keySigningSecret);
  // One signed send (deliveries, retries, resends and test sends) and one keeper of endpoint health.
  const webhookSender = new WebhookSender(config, secretBox, logger);
  const endpointHealth = new EndpointHealth(config);
  const deliveries = new DeliveryWorker(works, config, webhookSender, endpointHealth, logger, (outcome, result) =>
    metrics.webhookAttempts.inc({ outcome, result }),
  );
  eventHub.onWake(() => deliveries.wake());
  const rateLimits = new RateLimits(db.orm.em.getKnex(), {
    requestsPerSecond: config.rateLimitPerSecond,
    lookupsPerMinute: config.lookupLimitPerMinute,
    webhookTestsPerMinute: config.webhookTestLimitPerMinute,
    userOperationsPerSecond: config.userRateLimitPerSecond,
    payPagePerMinute: config.payPageLimitPerMinute,
  });
  // A passkey approval is checked by the WebAuthn verifier (src/consent/passkey.service.ts).
  const passkeys = new PasskeyService(config);
  const consent = new ConsentService(config, passkeys, (method, outcome) => metrics.approvalVerifications.inc({ method, outcome }));
  const consentReceipts = ConsentSigner.fromConfig(config);
  const payments = new PaymentRequestService(
    config,
    transactions,
    consent,
    consentReceipts,
    settlement,
    (outcome, count = 1) => metrics.paymentRequests.inc({ outcome }, count),
    (decision, seconds) => metrics.paymentDecision.observe({ decision }, seconds),
  );
  return {
    config,
    forkEm,
    works,
    payments,
    accounts: new AccountService(config, consent),
    consent,
    transactions,
    developers: new DeveloperService(),
    keys,
    operators,
    audit: new AuditService(),
    auth: createAuthenticator(config, keys, operators),
    eventHub,
    eventLog: new EventService(),
    webhookEndpoints: new WebhookEndpointService(config, secretBox, rateLimits, webhookSender, endpointHealth),
    deliveries,
    rateLimits,
    metrics,
    passkeys,
    consentReceipts,
    payerControls: new PayerControls(payments),
    settlement,
    payouts: new PayoutService(works, config, logger.child({ component: 'payouts' })),
  };
}
