import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Services } from '../services.js';
import { AppError } from '../errors.js';
import { describeTestWallets, ensureTestWallets, type TestWallet } from './test-wallets.js';
import { TestWalletResponder } from './test-wallet-responder.js';
import { createSandboxPages, type SandboxPages } from './pages.js';
import type { LeaderTask } from '../background/leader-work.js';

/** The development sandbox of one gateway instance: its test wallets, their responder (run by the leader) and its pages. */
export interface Sandbox {
  /** Empty when SANDBOX_TEST_WALLETS=false. */
  readonly wallets: readonly TestWallet[];
  /** The wallet-app page, its sign-in and GraphiQL. */
  readonly pages: SandboxPages;
  /** The test wallets' answers: one responder per database, on the elected leader (src/background/leadership.ts). */
  readonly responder: LeaderTask;
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
  const idle: LeaderTask = { name: 'test wallets', start: () => undefined, stop: async () => undefined };
  if (!config.sandboxTestWallets) return { wallets: [], pages, responder: idle };
  const log = logger.child({ component: 'sandbox' });
  let wallets: TestWallet[] = [];
  try {
    wallets = await ensureTestWallets(() => services.works.begin(), { accounts: services.accounts, consent: services.consent, keySigningSecret: config.keySigningSecret }, log);
    for (const w of wallets) if (w.outcome === 'expire_soon') services.payments.setSandboxLifetime(w.walletId, config.sandboxShortTtlSeconds);
    log.info({ testWallets: wallets.map((w) => w.username), delayMs: config.sandboxDelayMs }, 'test wallets ready');
  } catch (err) {
    // A development convenience never keeps the gateway from starting.
    log.error({ err }, 'test wallets unavailable; the gateway runs without them');
    return { wallets: [], pages, responder: idle };
  }
  // A responder per term of leadership (each answers through the hub; one stopped is not restarted).
  let responder: TestWalletResponder | undefined;
  const task: LeaderTask = {
    name: 'test wallets',
    async start() {
      const current = new TestWalletResponder(services, forkEm, log, config.sandboxDelayMs);
      responder = current;
      try {
        await current.start(wallets);
      } catch (err) {
        await current.stop();
        if (responder === current) responder = undefined;
        log.error({ err }, 'test wallets cannot answer; the gateway runs without their answers');
      }
    },
    async stop() {
      const current = responder;
      responder = undefined;
      await current?.stop();
    },
  };
  return { wallets, pages, responder: task };
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
