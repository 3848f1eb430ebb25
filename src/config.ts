import { createPrivateKey, createPublicKey } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { MIN_PEPPER_BYTES, decodePepper, pepperList } from './consent/pin.js';

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

/** A decimal setting in [min, max] with at most 2 decimal places (an amount, a fee's percent). */
const twoDecimals = (min: number, max: number) =>
  z.coerce
    .number()
    .min(min)
    .max(max)
    .refine((n) => Number(n.toFixed(2)) === n, 'must have at most 2 decimal places');

/** An IANA time zone name (Region/City, or UTC) that this Node's time zone data knows. */
function isIanaZone(name: string): boolean {
  if (!/^(UTC|[A-Za-z]+(\/[A-Za-z0-9_+-]+)+)$/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name }).format(0);
    return true;
  } catch {
    return false;
  }
}

/** PEM blocks of `label` in a value (an environment file may carry the newlines as `\\n`). */
export function pemBlocks(value: string, label: string): string[] {
  const text = value.replace(/\\n/g, '\n');
  return [...text.matchAll(new RegExp(`-----BEGIN ${label}-----[\\s\\S]+?-----END ${label}-----`, 'g'))].map((m) => `${m[0]}\n`);
}

/**
 * Ed25519 keys as PEM: a private key (exactly one PKCS#8 block) or public keys (one or more SPKI
 * blocks). The messages never repeat the value.
 */
const pem = (label: 'PRIVATE KEY' | 'PUBLIC KEY') =>
  z
    .string()
    .transform((v, ctx): string => {
      const blocks = pemBlocks(v, label);
      const wanted = label === 'PRIVATE KEY' ? 'an Ed25519 private key as PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)' : 'Ed25519 public keys as PEM (-----BEGIN PUBLIC KEY-----)';
      if (blocks.length === 0 || (label === 'PRIVATE KEY' && blocks.length > 1)) {
        ctx.addIssue({ code: 'custom', message: `must be ${wanted}` });
        return z.NEVER;
      }
      for (const block of blocks) {
        try {
          const key = label === 'PRIVATE KEY' ? createPrivateKey(block) : createPublicKey(block);
          if (key.asymmetricKeyType !== 'ed25519') throw new Error('not Ed25519');
        } catch {
          ctx.addIssue({ code: 'custom', message: `must be ${wanted}` });
          return z.NEVER;
        }
      }
      return blocks.join('');
    });

/**
 * Every setting, declared once: its environment variable, how it is validated and its default.
 * The Config a process reads is this object with camelCase names (KEY_CACHE_TTL_MS →
 * keyCacheTtlMs), typed by z.infer; the Configuration table of docs/operations.md says what each one means.
 */
const settings = z.object({
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
  /** Worker processes `npm start` runs (node:cluster); unset: one per core on a PostgreSQL server, one on the embedded database. */
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
  /** NATS with JetStream for the fan-out of events (the leader publishes the outbox once; every instance consumes). Unset: each instance reads PostgreSQL. */
  NATS_URL: z
    .string()
    .regex(/^(nats|tls):\/\/[^\s]+$/, 'must be a nats:// or tls:// URL (several separated by commas)')
    .optional(),
  /** The JetStream stream (and the root of its subjects) of this database's events: one per database sharing a NATS server. */
  NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, - or _')
    .default('WALLET_GATEWAY_EVENTS'),
  /** How often a follower bids for leadership and the leader checks its connection. */
  LEADER_ELECT_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be a comma-separated list of seconds, e.g. 5,300,1800')
    .transform((v): readonly number[] => Object.freeze(v.split(',').map((n) => Number(n.trim()))))
    .default(Object.freeze(DEFAULT_RETRY_SCHEDULE)),
  WEBHOOK_DISABLE_AFTER_SECONDS: z.coerce.number().int().min(1).default(3 * 86_400),
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(20).max(60_000).default(1000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
  WEBHOOK_DELIVERY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  /** At least 24: a key answers as used for 24 hours (SPEC §10). */
  IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().int().min(24).max(876_000).default(24),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Development only (never in production, whatever it says). */
  SANDBOX_TEST_WALLETS: z
    .enum(['true', 'false'])
    .default('true')
    .transform((v) => v === 'true'),
  SANDBOX_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
  SANDBOX_SHORT_TTL_SECONDS: z.coerce.number().int().min(1).max(300).default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Unset: pretty in development on a terminal, else JSON; production is always JSON. */
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  /** Ed25519 private key, PKCS#8 PEM (a literal "\\n" reads as a newline): signs consent receipts. Required in production. */
  CONSENT_SIGNING_KEY: pem('PRIVATE KEY').optional(),
  /** Earlier signing keys' public halves (SPKI PEM, one or more blocks): still published so older receipts verify. */
  CONSENT_PREVIOUS_PUBLIC_KEYS: pem('PUBLIC KEY').optional(),
  /** PENDING requests one developer may have open with one wallet; 0: no limit. */
  MAX_PENDING_PER_PAYER: z.coerce.number().int().min(0).max(2_147_483_647).default(3),
  /** 0: never. */
  LEDGER_CHECK_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(7 * 86_400).default(3600),
  /** Passkeys' relying party: the domain passkeys are bound to. Development default: localhost; production must set it. */
  WEBAUTHN_RP_ID: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/, 'must be a domain name such as wallet.example.com (no scheme, port or path; not an IP address)')
    .refine((v) => !/^[\d.]+$/.test(v), 'must be a domain name, not an IP address')
    .optional(),
  /** The origin the wallet app's passkey ceremonies run on. Development default: http://localhost:<PORT>; production must set it. */
  WEBAUTHN_ORIGIN: z
    .string()
    .regex(/^https?:\/\/[^\s/?#]+$/, 'must be an origin such as https://wallet.example.com (scheme and host, optional port, no path)')
    .optional(),
  /** Where payers open links: paymentUrl = PUBLIC_BASE_URL + /pay/ + code. Unset: http://localhost:<PORT>. */
  PUBLIC_BASE_URL: z
    .string()
    .regex(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'must be an http:// or https:// URL without query or fragment')
    .optional(),
  /** The wallet app's link for a code (production's /pay page): `{code}` is replaced. */
  WALLET_APP_LINK_TEMPLATE: z
    .string()
    .refine((v) => v.includes('{code}'), 'must contain {code}')
    .default('walletapp://pay/{code}'),
  /** A MANUAL payment's hold is voided by itself after this many hours if not captured (a fraction is allowed, e.g. 0.01 = 36 s, for trials). */
  HOLD_TTL_HOURS: z.coerce.number().positive().max(8760).default(168),
  /** The fee of a developer without a schedule of its own (`setFeeSchedule`): percent of the gross, 0 to 10, at most 2 decimals. */
  DEFAULT_FEE_PERCENT: twoDecimals(0, 10).default(0),
  /** ... plus this fixed amount per payment (at most 2 decimals). A fee is never more than the payment. */
  DEFAULT_FEE_FIXED: twoDecimals(0, 1e12).default(0),
  /** The daily payouts' cut-off, HH:MM (24-hour) in SETTLEMENT_TIMEZONE. */
  PAYOUT_CUTOFF: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day HH:MM, e.g. 00:00 or 17:30')
    .default('00:00'),
  /** The time zone of PAYOUT_CUTOFF: an IANA name such as Africa/Addis_Ababa or Europe/Berlin. */
  SETTLEMENT_TIMEZONE: z
    .string()
    .refine(isIanaZone, 'must be an IANA time zone name such as Africa/Addis_Ababa or Europe/Berlin')
    .default('Africa/Addis_Ababa'),
  /** A developer's balance in a currency is paid out when it is at least this much. */
  PAYOUT_MINIMUM: twoDecimals(0.01, 1e12).default(1),
  /** How often an instance looks whether a cut-off is due (and makes up a missed one); 0: this instance never runs the payout schedule. */
  PAYOUT_CHECK_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  /** Failed approval verifications in a row (PIN or passkey) that lock a wallet's approvals (src/consent). */
  PIN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
  /** How long such a lock lasts. */
  PIN_LOCK_MINUTES: z.coerce.number().int().min(1).max(7 * 24 * 60).default(15),
  /** GraphQL operations per wallet user per second, across instances (then RATE_LIMITED). */
  USER_RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(1).default(10),
  /** GET /pay/{code} and `paymentRequestByCode` together, per client address per minute (then 429 / RATE_LIMITED). */
  PAY_PAGE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(60),
  /** Locks (PIN_MAX_ATTEMPTS failures each) with no successful verification between them after which only an operator's `unlockTransactionPin` lifts the lock. */
  PIN_MAX_LOCKS: z.coerce.number().int().min(1).max(100).default(3),
  /**
   * The secret PINs are hashed under (HMAC-SHA-256, src/consent/pin.ts): at least 32 bytes, hex or
   * base64. Required in production; development makes one under DATA_DIR (src/startup-keys.ts).
   */
  PIN_PEPPER: z.string().refine((v) => decodePepper(v) !== null, `must be at least ${MIN_PEPPER_BYTES} bytes, hex or base64`).optional(),
  /** Earlier peppers (comma separated): PINs stored under them still verify and move to PIN_PEPPER at their next success. */
  PIN_PREVIOUS_PEPPERS: z
    .string()
    .refine((v) => pepperList(v).every((p) => decodePepper(p) !== null), `each must be at least ${MIN_PEPPER_BYTES} bytes, hex or base64 (comma separated)`)
    .optional(),
});

export type AppEnv = 'development' | 'production';

/** The environment variables the gateway reads itself (OpenTelemetry's standard OTEL_* ones are read by its SDK). */
export const SETTING_NAMES: readonly string[] = Object.freeze(Object.keys(settings.shape));

/** KEY_CACHE_TTL_MS → keyCacheTtlMs. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Lowercase<Head>}${Capitalize<CamelCase<Tail>>}` : Lowercase<S>;
const camelCase = (name: string): string => name.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
/** The settings under their camelCase names, every one of them (an unset optional one as undefined). */
const camelKeys = <T extends Record<string, unknown>>(values: T): { [K in keyof T & string as CamelCase<K>]: T[K] } =>
  Object.fromEntries(Object.keys(settings.shape).map((name) => [camelCase(name), values[name]])) as never;

type Settings = z.infer<typeof settings>;
type Resolved = 'KEY_SIGNING_SECRET' | 'USER_TOKEN_SECRET' | 'ADMIN_TOKEN' | 'WEB_CONCURRENCY' | 'WEBAUTHN_RP_ID' | 'WEBAUTHN_ORIGIN' | 'PUBLIC_BASE_URL';

/** The gateway's configuration, read from the environment once and frozen: every setting under its camelCase name, plus what is derived from them. */
export type Config = { readonly [K in Exclude<keyof Settings, Resolved> as CamelCase<K>]: Settings[K] } & {
  /** The secrets, resolved: a development default where none was set (development only). */
  readonly keySigningSecret: string;
  readonly userTokenSecret: string;
  readonly adminToken: string;
  /** WEB_CONCURRENCY, or its default (one per core on a PostgreSQL server, one on the embedded database). */
  readonly webConcurrency: number;
  /** WEBAUTHN_RP_ID, or its development default: PUBLIC_BASE_URL's host (localhost; never an IP address). */
  readonly webauthnRpId: string;
  /** WEBAUTHN_ORIGIN, or its development default: PUBLIC_BASE_URL's origin (http://localhost:<PORT>). */
  readonly webauthnOrigin: string;
  /** PUBLIC_BASE_URL without a trailing slash, or http://localhost:<PORT>. */
  readonly publicBaseUrl: string;
  /** Secret-key prefix accepted by this environment. */
  readonly keyPrefix: 'sk_test_' | 'sk_live_';
  /** Names of secrets that fell back to a development default (empty in production). */
  readonly devSecretsInUse: readonly string[];
};

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
  const parsed = settings.safeParse(cleaned);
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
  if (c.APP_ENV === 'production' && !c.CONSENT_SIGNING_KEY) {
    secretProblems.push('CONSENT_SIGNING_KEY is required in production (an Ed25519 private key as PKCS#8 PEM: it signs consent receipts)');
  }
  if (c.APP_ENV === 'production' && !c.PIN_PEPPER) {
    secretProblems.push(`PIN_PEPPER is required in production (at least ${MIN_PEPPER_BYTES} random bytes, hex or base64: the secret PINs are hashed under)`);
  }
  if (c.WEB_CONCURRENCY !== undefined && c.WEB_CONCURRENCY > 1 && !c.DATABASE_URL) {
    secretProblems.push('WEB_CONCURRENCY: more than one process needs DATABASE_URL (the embedded database belongs to one process)');
  }
  if (c.APP_ENV === 'production') {
    // A passkey is bound to its relying party for good: production names it, never a guess.
    if (!c.WEBAUTHN_RP_ID) secretProblems.push('WEBAUTHN_RP_ID is required in production (the domain passkeys are bound to, e.g. wallet.example.com)');
    if (!c.WEBAUTHN_ORIGIN) secretProblems.push('WEBAUTHN_ORIGIN is required in production (the wallet app\'s origin, e.g. https://wallet.example.com)');
  }
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, '');
  // Development defaults follow PUBLIC_BASE_URL (the page payers open): its origin, and its host as
  // the relying party unless that is an IP address (never a valid one), then localhost.
  const publicHost = new URL(publicBaseUrl).hostname;
  const rpId = c.WEBAUTHN_RP_ID ?? (/^[\d.]+$|:/.test(publicHost) || publicHost.startsWith('[') ? 'localhost' : publicHost);
  const webauthnOrigin = c.WEBAUTHN_ORIGIN ?? (rpId === publicHost ? new URL(publicBaseUrl).origin : `http://localhost:${c.PORT}`);
  if (c.WEBAUTHN_ORIGIN) {
    const host = URL.canParse(c.WEBAUTHN_ORIGIN) ? new URL(c.WEBAUTHN_ORIGIN).hostname : '';
    if (host !== rpId && !host.endsWith(`.${rpId}`)) {
      secretProblems.push(`WEBAUTHN_ORIGIN: its host ${host} must be WEBAUTHN_RP_ID (${rpId}) or a subdomain of it`);
    }
  }
  if (secretProblems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${secretProblems.join('\n  ')}`);
  }
  const config: Config = {
    ...camelKeys(c),
    keySigningSecret,
    userTokenSecret,
    adminToken,
    webConcurrency: c.WEB_CONCURRENCY ?? (c.DATABASE_URL ? availableParallelism() : 1),
    webauthnRpId: rpId,
    webauthnOrigin,
    sandboxTestWallets: c.APP_ENV !== 'production' && c.SANDBOX_TEST_WALLETS,
    publicBaseUrl,
    keyPrefix: c.APP_ENV === 'production' ? 'sk_live_' : 'sk_test_',
    devSecretsInUse,
  };
  return Object.freeze(config);
}
