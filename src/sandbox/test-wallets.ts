import { isEasyPin } from '../consent/pin.js';
import type { Queryable } from '../db/sql.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import type { Logger } from 'pino';
import { AppError } from '../errors.js';
import type { AccountService } from '../accounts/account.service.js';
import { WalletStatus } from '../accounts/wallet.entity.js';
import { normalisePhone } from '../accounts/identifier.js';
import { createHmac } from 'node:crypto';
import type { ConsentService } from '../consent/consent.service.js';

/** What a test wallet does with every payment request made to it. */
export type TestWalletOutcome = 'approve' | 'reject' | 'insufficient_funds' | 'expire' | 'expire_soon' | 'suspended' | 'closed';

/** One scripted wallet of the development environment. */
export interface TestWalletDefinition {
  readonly username: string;
  /** As a merchant would type it (`0900000001` and `900000001` name the same phone). */
  readonly phone: string;
  readonly outcome: TestWalletOutcome;
  readonly status: WalletStatus;
  /** Balance it is created with (the approving wallet is topped up again when it runs low). */
  readonly balance: number;
  /** What a merchant sees, in words. */
  readonly behaviour: string;
}

/** Balance the approving wallet keeps (topped up at start when below half of it). */
const APPROVING_BALANCE = 1_000_000_000;

/**
 * The documented test wallets (SPEC §13, issue 12): phone numbers and usernames whose outcome is
 * fixed, like a payment provider's sandbox numbers. They exist only in the development
 * environment, created when a development gateway starts (never by a migration).
 */
export const TEST_WALLETS: readonly TestWalletDefinition[] = Object.freeze([
  {
    username: 'test_approve',
    phone: '0900000001',
    outcome: 'approve',
    status: WalletStatus.ACTIVE,
    balance: APPROVING_BALANCE,
    behaviour: 'approves every payment request after the sandbox delay (status APPROVED, with a transactionId)',
  },
  {
    username: 'test_reject',
    phone: '0900000002',
    outcome: 'reject',
    status: WalletStatus.ACTIVE,
    balance: 0,
    behaviour: 'rejects every payment request after the sandbox delay (status REJECTED)',
  },
  {
    username: 'test_insufficient',
    phone: '0900000003',
    outcome: 'insufficient_funds',
    status: WalletStatus.ACTIVE,
    balance: 0,
    behaviour: 'tries to approve after the sandbox delay but has no money (INSUFFICIENT_FUNDS): the request stays PENDING, then EXPIRED',
  },
  {
    username: 'test_expire',
    phone: '0900000004',
    outcome: 'expire',
    status: WalletStatus.ACTIVE,
    balance: 0,
    behaviour: 'never answers: the request stays PENDING until expiresAt, then reads EXPIRED',
  },
  {
    username: 'test_suspended',
    phone: '0900000005',
    outcome: 'suspended',
    status: WalletStatus.SUSPENDED,
    balance: 0,
    behaviour: 'a SUSPENDED wallet: request-payment answers 400 "Wallet is not active"',
  },
  {
    username: 'test_closed',
    phone: '0900000006',
    outcome: 'closed',
    status: WalletStatus.CLOSED,
    balance: 0,
    behaviour: 'a CLOSED wallet: request-payment answers 400 "Wallet is not active"',
  },
  {
    username: 'test_expire_soon',
    phone: '0900000007',
    outcome: 'expire_soon',
    status: WalletStatus.ACTIVE,
    balance: 0,
    behaviour:
      'never answers, and its requests live SANDBOX_SHORT_TTL_SECONDS (default 10 s) instead of 5 minutes: EXPIRED (and payment_request.expired) within seconds',
  },
]);

/** A test wallet as it exists in this environment's database. */
export interface TestWallet extends TestWalletDefinition {
  readonly userId: string;
  readonly walletId: string;
  /** Its transaction PIN, with which the responder approves like a person would (never printed). */
  readonly pin: string;
}

/**
 * A test wallet's transaction PIN: the same on every instance of one environment (derived from
 * its KEY_SIGNING_SECRET), so that instances setting it at start never lock each other out.
 * Development only, like the test wallets.
 */
export function testWalletPin(secret: string, username: string): string {
  for (let n = 0; ; n++) {
    const pin = String(createHmac('sha256', secret).update(`test-wallet-pin:${username}${n ? `:${n}` : ''}`).digest().readUInt32BE(0) % 1_000_000).padStart(6, '0');
    if (!isEasyPin(pin)) return pin; // never one the PIN rules refuse (SPEC §16)
  }
}

/** What setting the test wallets up needs: the accounts, and the PINs (their secret and the consent service). */
export interface TestWalletSetup {
  accounts: AccountService;
  consent: Pick<ConsentService, 'setPin'>;
  keySigningSecret: string;
}

/** The outcomes the responder acts on (the others never see a request, or never answer). */
export const ANSWERING_OUTCOMES: ReadonlySet<TestWalletOutcome> = new Set(['approve', 'reject', 'insufficient_funds']);

/**
 * Creates the test wallets that are missing and puts the existing ones back into their scripted
 * state (wallet status; the approving wallet's balance). Idempotent, and safe when several
 * instances start at once (a lost creation race is read back). A username or phone already used
 * by a real user is left alone and that test wallet skipped, with a warning.
 */
export async function ensureTestWallets(begin: () => UnitOfWork, setup: TestWalletSetup, log: Logger): Promise<TestWallet[]> {
  const ready: TestWallet[] = [];
  for (const def of TEST_WALLETS) {
    const wallet = await ensureOne(begin, setup, def, log);
    if (wallet) ready.push(wallet);
  }
  return ready;
}

interface Row {
  userId: string;
  username: string;
  phone: string;
  walletId: string;
  status: WalletStatus;
  balance: string;
}

async function find(db: Queryable, def: TestWalletDefinition): Promise<Row[]> {
  return db.query<Row>(
    `select u.id as "userId", u.username, u.phone, w.id as "walletId", w.status, w.balance::text as balance
       from users u join wallets w on w.user_id = u.id
      where lower(u.username) = $1 or u.phone = $2`,
    [def.username, normalisePhone(def.phone)],
  );
}

async function ensureOne(
  begin: () => UnitOfWork,
  { accounts, consent, keySigningSecret }: TestWalletSetup,
  def: TestWalletDefinition,
  log: Logger,
): Promise<TestWallet | undefined> {
  const phone = normalisePhone(def.phone);
  const pin = testWalletPin(keySigningSecret, def.username);
  let rows = await find(begin(), def);
  if (rows.length === 0) {
    try {
      await accounts.createUser(begin(), { username: def.username, phone: def.phone, balance: def.balance, pin });
    } catch (err) {
      // Another instance created it first: read it back below.
      if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
    }
    rows = await find(begin(), def);
  }
  const row = rows.find((r) => r.username === def.username && r.phone === phone);
  if (!row) {
    log.warn({ username: def.username }, 'test wallet skipped: its username or phone belongs to another user');
    return undefined;
  }
  // Set again at every start (also on wallets made before PINs existed), which lifts any lock.
  await consent.setPin(begin(), row.walletId, pin);
  if (row.status !== def.status) await accounts.setWalletStatus(begin(), row.walletId, def.status);
  if (def.outcome === 'approve' && Number(row.balance) < def.balance / 2) {
    await accounts.topUp(begin(), row.walletId, Number((def.balance - Number(row.balance)).toFixed(2)));
  }
  return { ...def, userId: row.userId, walletId: row.walletId, pin };
}

/** The listing of `npx wallet-gateway test-wallets` and of the docs: what each wallet does. */
export function describeTestWallets(wallets: readonly TestWallet[], delayMs: number) {
  return {
    delayMs,
    testWallets: wallets.map((w) => ({
      username: w.username,
      phone: w.phone,
      walletId: w.walletId,
      status: w.status,
      outcome: w.outcome,
      behaviour: w.behaviour,
    })),
  };
}

