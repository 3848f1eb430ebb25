import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { AppError } from '../errors.js';
import { describeTestWallets, ensureTestWallets, type TestWallet } from './test-wallets.js';
import { TestWalletResponder } from './test-wallet-responder.js';
import { createSandboxPages, type SandboxPages } from './pages.js';

/** The development sandbox of one gateway instance: its test wallets (with their responder) and its pages. */
export interface Sandbox {
  /** Empty when SANDBOX_TEST_WALLETS=false. */
  readonly wallets: readonly TestWallet[];
  /** The wallet-app page, its sign-in and GraphiQL. */
  readonly pages: SandboxPages;
  stop(): Promise<void>;
}

export interface SandboxOptions {
  config: Config;
  services: Services;
  forkEm: () => EntityManager;
  logger: Logger;
}

/**
 * Starts the sandbox of a development gateway: its pages, and its test wallets unless turned
 * off. Undefined in production: no pages, and the test wallets are neither created nor
 * answered for, whatever the database holds.
 */
export async function startSandbox({ config, services, forkEm, logger }: SandboxOptions): Promise<Sandbox | undefined> {
  if (config.appEnv === 'production') return undefined;
  const pages = createSandboxPages(config, services);
  if (!config.sandboxTestWallets) return { wallets: [], pages, stop: async () => undefined };
  const log = logger.child({ component: 'sandbox' });
  const responder = new TestWalletResponder(services, forkEm, log, config.sandboxDelayMs);
  let wallets: TestWallet[] = [];
  try {
    wallets = await ensureTestWallets(() => services.works.begin(), { accounts: services.accounts, consent: services.consent, keySigningSecret: config.keySigningSecret }, log);
    for (const w of wallets) if (w.outcome === 'expire_soon') services.payments.setSandboxLifetime(w.walletId, config.sandboxShortTtlSeconds);
    await responder.start(wallets);
    log.info({ testWallets: wallets.map((w) => w.username), delayMs: config.sandboxDelayMs }, 'test wallets ready');
  } catch (err) {
    // A development convenience never keeps the gateway from starting.
    await responder.stop();
    wallets = [];
    log.error({ err }, 'test wallets unavailable; the gateway runs without them');
  }
  return {
    wallets,
    pages,
    stop: () => responder.stop(),
  };
}

/**
 * What `npx wallet-gateway test-wallets` prints: the test wallets of this development
 * environment (created first when missing, as a development gateway would at start). Refused
 * in production, and where the test wallets are turned off.
 */
export async function listTestWallets({ config, services, logger }: Omit<SandboxOptions, 'forkEm'>) {
  if (config.appEnv === 'production') throw new AppError('NOT_FOUND', 'Test wallets exist only in the development environment');
  if (!config.sandboxTestWallets) throw new AppError('NOT_FOUND', 'Test wallets are turned off (SANDBOX_TEST_WALLETS=false)');
  const setup = { accounts: services.accounts, consent: services.consent, keySigningSecret: config.keySigningSecret };
  return describeTestWallets(await ensureTestWallets(() => services.works.begin(), setup, logger), config.sandboxDelayMs);
}
