import { z } from 'zod';

/** Development-only secrets: accepted (with a warning) in development, refused in production. */
export const DEV_DEFAULTS = {
  KEY_SIGNING_SECRET: 'dev-key-signing-secret-change-me-0000000000',
  USER_TOKEN_SECRET: 'dev-user-token-secret-change-me-00000000000',
  ADMIN_TOKEN: 'dev-admin-token',
} as const;

const secret = z.string().min(16, 'must be at least 16 characters');

const schema = z.object({
  APP_ENV: z.enum(['development', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(100).default(10),
  KEY_SIGNING_SECRET: secret.optional(),
  USER_TOKEN_SECRET: secret.optional(),
  ADMIN_TOKEN: secret.optional(),
  DEFAULT_CURRENCY: z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as ETB')
    .default('ETB'),
  MAX_AMOUNT: z.coerce.number().positive().max(1e12).default(1_000_000),
  PAYMENT_REQUEST_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(5000).default(2000),
  EXPIRY_SWEEP_INTERVAL_MS: z.coerce.number().int().min(50).default(5000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
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
  readonly keySigningSecret: string;
  readonly userTokenSecret: string;
  readonly adminToken: string;
  readonly defaultCurrency: string;
  readonly maxAmount: number;
  readonly paymentRequestTtlSeconds: number;
  readonly keyCacheTtlMs: number;
  readonly expirySweepIntervalMs: number;
  readonly logLevel: string;
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
  const secretOf = (name: keyof typeof DEV_DEFAULTS): string => {
    const value = c[name];
    if (c.APP_ENV === 'production') {
      if (!value) throw new ConfigError(`Invalid configuration: ${name} is required in production`);
      if (value === DEV_DEFAULTS[name]) {
        throw new ConfigError(
          `Invalid configuration: ${name} is the development default; set a real secret in production`,
        );
      }
      return value;
    }
    if (!value || value === DEV_DEFAULTS[name]) devSecretsInUse.push(name);
    return value ?? DEV_DEFAULTS[name];
  };
  return Object.freeze({
    appEnv: c.APP_ENV,
    port: c.PORT,
    host: c.HOST,
    databaseUrl: c.DATABASE_URL,
    dataDir: c.DATA_DIR,
    dbPoolMax: c.DB_POOL_MAX,
    keySigningSecret: secretOf('KEY_SIGNING_SECRET'),
    userTokenSecret: secretOf('USER_TOKEN_SECRET'),
    adminToken: secretOf('ADMIN_TOKEN'),
    defaultCurrency: c.DEFAULT_CURRENCY,
    maxAmount: c.MAX_AMOUNT,
    paymentRequestTtlSeconds: c.PAYMENT_REQUEST_TTL_SECONDS,
    keyCacheTtlMs: c.KEY_CACHE_TTL_MS,
    expirySweepIntervalMs: c.EXPIRY_SWEEP_INTERVAL_MS,
    logLevel: c.LOG_LEVEL,
    keyPrefix: c.APP_ENV === 'production' ? 'sk_live_' : 'sk_test_',
    devSecretsInUse,
  });
}
