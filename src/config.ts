import { availableParallelism } from 'node:os';
import { z } from 'zod';

/** Development-only secrets: accepted (with a warning) in development, refused in production. */
export const DEV_DEFAULTS = {
  KEY_SIGNING_SECRET: 'dev-key-signing-secret-change-me-0000000000',
  USER_TOKEN_SECRET: 'dev-user-token-secret-change-me-00000000000',
  ADMIN_TOKEN: 'dev-admin-token',
} as const;

/**
 * Seconds between webhook delivery attempts (Standard Webhooks' recommendation, stretched to ~3 days):
 * after the first attempt, 11 retries; each delay gets ±20% jitter.
 */
const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18000, 36000, 36000, 43200, 43200, 43200, 43200];

/** A secret: at least 16 characters, or exactly its development default (refused later in production). */
const secret = (name: keyof typeof DEV_DEFAULTS) =>
  z.string().refine((v) => v === DEV_DEFAULTS[name] || v.length >= 16, 'must be at least 16 characters');

const schema = z.object({
  APP_ENV: z.enum(['development', 'production']).default('development'),
  PORT: z
    .string()
    .regex(/^\s*\d{1,5}\s*$/, 'must be a port number from 0 to 65535')
    .transform(Number)
    .refine((n) => n <= 65535, 'must be a port number from 0 to 65535')
    .default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(10),
  WEB_CONCURRENCY: z.coerce.number().int().min(1).max(64).optional(),
  KEY_SIGNING_SECRET: secret('KEY_SIGNING_SECRET').optional(),
  USER_TOKEN_SECRET: secret('USER_TOKEN_SECRET').optional(),
  ADMIN_TOKEN: secret('ADMIN_TOKEN').optional(),
  DEFAULT_CURRENCY: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as ETB')
    .default('ETB'),
  MAX_AMOUNT: z.coerce
    .number()
    .min(0.01)
    .max(1e12)
    .refine((n) => Number(n.toFixed(2)) === n, 'must have at most 2 decimal places')
    .default(1_000_000),
  PAYMENT_REQUEST_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(4000).default(2000),
  EXPIRY_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(5000),
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(1).default(100),
  LOOKUP_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(30),
  WEBHOOK_TEST_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
  WS_MAX_CONNECTIONS_PER_USER: z.coerce.number().int().min(1).default(5),
  WS_CONNECTION_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  GRAPHQL_MAX_DEPTH: z.coerce.number().int().min(2).default(8),
  GRAPHQL_MAX_COST: z.coerce.number().int().min(10).default(2000),
  GRAPHQL_MAX_COST_ADMIN: z.coerce.number().int().min(10).default(25_000),
  OUTBOX_POLL_INTERVAL_MS: z.coerce.number().int().min(20).max(60_000).default(300),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be a comma-separated list of seconds, e.g. 5,300,1800')
    .transform((v) => v.split(',').map((n) => Number(n.trim())))
    .default(DEFAULT_RETRY_SCHEDULE),
  WEBHOOK_DISABLE_AFTER_SECONDS: z.coerce.number().int().min(1).default(3 * 86_400),
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(20).max(60_000).default(1000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().int().min(24).max(876_000).default(24),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  SANDBOX_TEST_WALLETS: z.enum(['true', 'false']).default('true'),
  SANDBOX_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
  SANDBOX_SHORT_TTL_SECONDS: z.coerce.number().int().min(1).max(300).default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  LEDGER_CHECK_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(7 * 86_400).default(3600),
});

export type AppEnv = 'development' | 'production';

/** The gateway's configuration, read from the environment once and frozen. */
export interface Config {
  readonly appEnv: AppEnv;
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  readonly dbPoolMax: number;
  /** Worker processes `npm start` runs (node:cluster): WEB_CONCURRENCY, else one per core on a PostgreSQL server, one on the embedded database. */
  readonly webConcurrency: number;
  readonly keySigningSecret: string;
  readonly userTokenSecret: string;
  readonly adminToken: string;
  readonly defaultCurrency: string;
  readonly maxAmount: number;
  readonly paymentRequestTtlSeconds: number;
  readonly keyCacheTtlMs: number;
  readonly expirySweepIntervalMs: number;
  readonly logLevel: string;
  /** `json` or `pretty` (LOG_FORMAT); unset: pretty in development on a terminal, else JSON. Production is always JSON. */
  readonly logFormat: 'json' | 'pretty' | undefined;
  /** How often one instance proves the ledger and records the result for /metrics (0: never). */
  readonly ledgerCheckIntervalSeconds: number;
  readonly rateLimitPerSecond: number;
  readonly lookupLimitPerMinute: number;
  /** Test sends (POST /webhook-endpoints/{id}/test) per endpoint per minute. */
  readonly webhookTestLimitPerMinute: number;
  readonly wsMaxConnectionsPerUser: number;
  /** How long a WebSocket's place in the per-user limit outlives its process's last renewal. */
  readonly wsConnectionLeaseSeconds: number;
  readonly graphqlMaxDepth: number;
  /** Cost limit of an operation with a secret key, a user token or no credential (src/graphql/cost.ts). */
  readonly graphqlMaxCost: number;
  /** Cost limit of an operation with an operator token or ADMIN_TOKEN (internal tools navigate the graph). */
  readonly graphqlMaxCostAdmin: number;
  /** How often each instance reads the outbox when no wake-up arrived. */
  readonly outboxPollIntervalMs: number;
  /** Delays (seconds) before each webhook retry; after the last one the delivery fails. */
  readonly webhookRetrySchedule: readonly number[];
  /** An endpoint failing for this long (no 2xx in between) is disabled. */
  readonly webhookDisableAfterSeconds: number;
  /** How often the delivery worker looks for due deliveries when no wake-up arrived. */
  readonly webhookPollIntervalMs: number;
  /** Timeout of one webhook POST. */
  readonly webhookTimeoutMs: number;
  /**
   * Retention (src/maintenance.ts): events older than this are deleted, except each payment
   * request's latest event and events with deliveries still kept.
   */
  readonly eventRetentionDays: number;
  /** Finished (DELIVERED/FAILED) webhook deliveries and their attempts are deleted after this many days; pending ones never. */
  readonly webhookDeliveryRetentionDays: number;
  /** Idempotency records are deleted after this many hours (at least 24: a key answers as used for 24 hours, SPEC §10). */
  readonly idempotencyRetentionHours: number;
  /** When set, GET /metrics requires `Authorization: Bearer <token>`. */
  readonly metricsToken: string | undefined;
  /** Development only: whether the scripted test wallets (src/sandbox) exist and answer; never in production. */
  readonly sandboxTestWallets: boolean;
  /** How long a test wallet waits after a payment request is created before it answers. */
  readonly sandboxDelayMs: number;
  /** Development only: the lifetime of requests to the `test_expire_soon` wallet (every other request lives PAYMENT_REQUEST_TTL_SECONDS). */
  readonly sandboxShortTtlSeconds: number;
  /** Secret-key prefix accepted by this environment. */
  readonly keyPrefix: 'sk_test_' | 'sk_live_';
  /** Names of secrets that fell back to a development default (empty in production). */
  readonly devSecretsInUse: readonly string[];
}

/** Thrown when the environment does not describe a valid configuration; the message lists every problem. */
export class ConfigError extends Error {}

/**
 * Reads and validates the configuration. Production refuses missing secrets and the
 * development defaults; development fills them in and reports which ones it used.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(
    Object.entries(env).filter(([, v]) => v !== undefined && v !== ''),
  );
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const c = parsed.data;
  const devSecretsInUse: string[] = [];
  const secretProblems: string[] = [];
  const secretOf = (name: keyof typeof DEV_DEFAULTS): string => {
    const value = c[name];
    if (c.APP_ENV === 'production') {
      if (!value) secretProblems.push(`${name} is required in production`);
      else if (value === DEV_DEFAULTS[name]) {
        secretProblems.push(`${name} is the development default; set a real secret in production`);
      }
      return value ?? '';
    }
    if (!value || value === DEV_DEFAULTS[name]) devSecretsInUse.push(name);
    return value ?? DEV_DEFAULTS[name];
  };
  const keySigningSecret = secretOf('KEY_SIGNING_SECRET');
  const userTokenSecret = secretOf('USER_TOKEN_SECRET');
  const adminToken = secretOf('ADMIN_TOKEN');
  if (c.APP_ENV === 'production' && c.LOG_FORMAT === 'pretty') {
    secretProblems.push('LOG_FORMAT: production logs are JSON (pretty is for development)');
  }
  if (c.WEB_CONCURRENCY !== undefined && c.WEB_CONCURRENCY > 1 && !c.DATABASE_URL) {
    secretProblems.push('WEB_CONCURRENCY: more than one process needs DATABASE_URL (the embedded database belongs to one process)');
  }
  if (secretProblems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${secretProblems.join('\n  ')}`);
  }
  return Object.freeze({
    appEnv: c.APP_ENV,
    port: c.PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
    dataDir: c.DATA_DIR,
    dbPoolMax: c.DB_POOL_MAX,
    webConcurrency: c.WEB_CONCURRENCY ?? (c.DATABASE_URL ? availableParallelism() : 1),
    keySigningSecret,
    userTokenSecret,
    adminToken,
    defaultCurrency: c.DEFAULT_CURRENCY,
    maxAmount: c.MAX_AMOUNT,
    paymentRequestTtlSeconds: c.PAYMENT_REQUEST_TTL_SECONDS,
    keyCacheTtlMs: c.KEY_CACHE_TTL_MS,
    expirySweepIntervalMs: c.EXPIRY_SWEEP_INTERVAL_MS,
    logLevel: c.LOG_LEVEL,
    logFormat: c.LOG_FORMAT,
    ledgerCheckIntervalSeconds: c.LEDGER_CHECK_INTERVAL_SECONDS,
    rateLimitPerSecond: c.RATE_LIMIT_PER_SECOND,
    lookupLimitPerMinute: c.LOOKUP_LIMIT_PER_MINUTE,
    webhookTestLimitPerMinute: c.WEBHOOK_TEST_LIMIT_PER_MINUTE,
    wsMaxConnectionsPerUser: c.WS_MAX_CONNECTIONS_PER_USER,
    wsConnectionLeaseSeconds: c.WS_CONNECTION_LEASE_SECONDS,
    graphqlMaxDepth: c.GRAPHQL_MAX_DEPTH,
    graphqlMaxCost: c.GRAPHQL_MAX_COST,
    graphqlMaxCostAdmin: c.GRAPHQL_MAX_COST_ADMIN,
    metricsToken: c.METRICS_TOKEN,
    sandboxTestWallets: c.APP_ENV !== 'production' && c.SANDBOX_TEST_WALLETS === 'true',
    sandboxDelayMs: c.SANDBOX_DELAY_MS,
    sandboxShortTtlSeconds: c.SANDBOX_SHORT_TTL_SECONDS,
    outboxPollIntervalMs: c.OUTBOX_POLL_INTERVAL_MS,
    webhookRetrySchedule: Object.freeze(c.WEBHOOK_RETRY_SCHEDULE),
    webhookDisableAfterSeconds: c.WEBHOOK_DISABLE_AFTER_SECONDS,
    webhookPollIntervalMs: c.WEBHOOK_POLL_INTERVAL_MS,
    webhookTimeoutMs: c.WEBHOOK_TIMEOUT_MS,
    eventRetentionDays: c.EVENT_RETENTION_DAYS,
    webhookDeliveryRetentionDays: c.WEBHOOK_DELIVERY_RETENTION_DAYS,
    idempotencyRetentionHours: c.IDEMPOTENCY_RETENTION_HOURS,
    keyPrefix: c.APP_ENV === 'production' ? 'sk_live_' : 'sk_test_',
    devSecretsInUse,
  });
}
