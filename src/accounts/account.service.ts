import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/sql.js';
import type { Tx, UnitOfWork } from '../db/unit-of-work.js';
import type { Detached } from '../db/rows.js';
import { opaqueId } from '../random-id.js';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { parseAmount } from '../money.js';
import { recordTopUp } from '../ledger/ledger.js';
import { normalisePhone, normaliseUsername, parseIdentifier } from './identifier.js';
import { User } from './user.entity.js';
import { Wallet, WalletStatus } from './wallet.entity.js';
import { paginate, type Page } from '../db/pagination.js';
import { isUuid, requireUuid } from '../uuid.js';
import type { ConsentService } from '../consent/consent.service.js';

/** A new opaque wallet id: `wlt_` + 24 random base62 characters (~142 bits). */
export function newWalletId(): string {
  return opaqueId('wlt_');
}

export interface CreateUserFields {
  username: string;
  phone: string;
  balance?: number | undefined;
  currency?: string | undefined;
  /** The wallet's transaction PIN, 4-6 digits; a random 6-digit one when absent. */
  pin?: string | null | undefined;
}

/** A new user: ids, and the wallet's transaction PIN, returned this once (only its hash is kept). */
export interface CreatedUserResult {
  userId: string;
  walletId: string;
  pin: string;
}

const WALLET_COLUMNS = `w.id, w.user_id, w.status, w.balance::text as balance, w.held::text as held, w.currency, w.created_at, w.updated_at`;

/** A wallet row selected with WALLET_COLUMNS. */
export function walletFromRow(row: Record<string, unknown>): Detached<Wallet> {
  const wallet: Wallet = {
    id: row.id as string,
    userId: row.user_id as string,
    status: row.status as WalletStatus,
    balance: String(row.balance),
    held: String(row.held),
    currency: row.currency as string,
    createdAt: new Date(row.created_at as string),
    updatedAt: new Date(row.updated_at as string),
  };
  return wallet as Detached<Wallet>;
}

/** A wallet by id, inside the caller's transaction (or on the pool). */
async function readWallet(db: Queryable, walletId: string): Promise<Detached<Wallet>> {
  const [row] = await db.query(`select ${WALLET_COLUMNS} from wallets w where w.id = $1`, [walletId]);
  if (!row) throw notFound('Wallet not found');
  return walletFromRow(row);
}

/** Users and their wallets. */
export class AccountService {
  constructor(
    private readonly config: Config,
    /** The PIN rules and hash (src/consent): one place for every path that sets a PIN. */
    private readonly consent: Pick<ConsentService, 'newPin'>,
  ) {}

  /** Resolves a username or phone number (SPEC rule) to the user's walletId. */
  async walletIdFor(db: Queryable, identifier: string): Promise<string> {
    const parsed = parseIdentifier(identifier);
    const rows =
      parsed.kind === 'phone'
        ? await db.query<{ id: string }>('select w.id from wallets w join users u on u.id = w.user_id where u.phone = $1', [parsed.phone])
        : await db.query<{ id: string }>('select w.id from wallets w join users u on u.id = w.user_id where lower(u.username) = $1', [parsed.username]);
    const row = rows[0];
    if (!row) throw notFound('Account not found');
    return row.id;
  }

  /**
   * Creates a user with an ACTIVE wallet, optionally funded (a TOPUP ledger entry), and the
   * wallet's transaction PIN (`fields.pin`, or a random 6-digit one), returned once.
   */
  async createUser(work: UnitOfWork, fields: CreateUserFields): Promise<CreatedUserResult> {
    const username = normaliseUsername(fields.username);
    const phone = normalisePhone(fields.phone);
    const currency = (fields.currency ?? this.config.defaultCurrency).toUpperCase();
    if (!/^[A-Z]{3}$/.test(currency)) throw badInput('currency must be an ISO 4217 code such as ETB');
    const balance = fields.balance === undefined || fields.balance === 0 ? null : parseAmount(fields.balance, 1e12, 'balance');
    const { pin, pinHash } = this.consent.newPin(fields.pin);
    return work.transaction(async (tx) => {
      const taken = await tx.query<{ username: string; phone: string }>('select username, phone from users where lower(username) = $1 or phone = $2', [
        username,
        phone,
      ]);
      if (taken.some((u) => u.username.toLowerCase() === username)) throw new AppError('CONFLICT', 'Username is taken');
      if (taken.length > 0) throw new AppError('CONFLICT', 'Phone number is taken');
      const userId = randomUUID();
      const walletId = newWalletId();
      await tx.query('insert into users (id, username, phone, created_at) values ($1, $2, $3, now())', [userId, username, phone]);
      await tx.query(
        `insert into wallets (id, user_id, status, balance, held, currency, created_at, updated_at)
         values ($1, $2, 'ACTIVE', 0, 0, $3, now(), now())`,
        [walletId, userId, currency],
      );
      await tx.query('insert into wallet_pins (wallet_id, pin_hash) values ($1, $2)', [walletId, pinHash]);
      if (balance) await recordTopUp(tx, walletId, balance);
      return { userId, walletId, pin };
    });
  }

  /** Finds a user by username (case-insensitive). */
  async userByUsername(db: Queryable, username: string): Promise<User> {
    const [row] = await db.query<{ id: string; username: string; phone: string; created_at: Date }>(
      'select id, username, phone, created_at from users where lower(username) = $1',
      [username.trim().toLowerCase()],
    );
    if (!row) throw notFound('User not found');
    return { id: row.id, username: row.username, phone: row.phone, createdAt: new Date(row.created_at) };
  }

  /** A user and their wallet, or NOT_FOUND (a token of a user who no longer exists). */
  async walletOfUser(db: Queryable, userId: string): Promise<{ username: string; wallet: Detached<Wallet> }> {
    if (!isUuid(userId)) throw notFound('Wallet not found');
    const [row] = await db.query<Record<string, unknown> & { username: string }>(
      `select ${WALLET_COLUMNS}, u.username from users u join wallets w on w.user_id = u.id where u.id = $1`,
      [userId],
    );
    if (!row) throw notFound('Wallet not found');
    return { username: row.username, wallet: walletFromRow(row) };
  }

  /** Changes a wallet's status (an operator's action). */
  async setWalletStatus(work: UnitOfWork, walletId: string, status: WalletStatus): Promise<Detached<Wallet>> {
    if (!Object.values(WalletStatus).includes(status)) {
      throw badInput(`status must be one of ${Object.values(WalletStatus).join(', ')}`);
    }
    const [row] = await work.query(`update wallets w set status = $1, updated_at = now() where w.id = $2 returning ${WALLET_COLUMNS}`, [status, walletId]);
    if (!row) throw notFound('Wallet not found');
    return walletFromRow(row);
  }

  /** Adds money to a wallet from an external source. */
  async topUp(work: UnitOfWork, walletId: string, amount: number): Promise<Detached<Wallet>> {
    const exact = parseAmount(amount, this.config.maxAmount);
    return work.transaction(async (tx: Tx) => {
      await recordTopUp(tx, walletId, exact);
      return readWallet(tx, walletId);
    });
  }

  /** Wallets, newest first, optionally of one status (internal tools). */
  listWallets(em: EntityManager, filter: { status?: WalletStatus | undefined }, first?: number, after?: string): Promise<Page<Wallet>> {
    return paginate(em, Wallet, filter.status ? { status: filter.status } : {}, first, after);
  }

  /** Users, newest first, by username or phone (internal tools). */
  listUsers(em: EntityManager, filter: { username?: string | undefined; phone?: string | undefined }, first?: number, after?: string): Promise<Page<User>> {
    return paginate(
      em,
      User,
      {
        ...(filter.username !== undefined ? { username: normaliseUsername(filter.username) } : {}),
        ...(filter.phone !== undefined ? { phone: normalisePhone(filter.phone) } : {}),
      },
      first,
      after,
    );
  }

  /**
   * The wallets whose owner matches every given criterion (user id, phone, username), for
   * filters by owner; undefined when no criterion is given.
   */
  async walletIdsOfOwner(
    db: Queryable,
    owner: { userId?: string | undefined; phone?: string | undefined; username?: string | undefined },
  ): Promise<string[] | undefined> {
    if (owner.userId === undefined && owner.phone === undefined && owner.username === undefined) return undefined;
    const userId = owner.userId === undefined ? null : requireUuid(owner.userId, 'userId');
    const phone = owner.phone === undefined ? null : normalisePhone(owner.phone);
    const username = owner.username === undefined ? null : owner.username.trim().toLowerCase();
    const rows = await db.query<{ id: string }>(
      `select w.id from wallets w join users u on u.id = w.user_id
        where ($1::uuid is null or u.id = $1::uuid) and ($2::text is null or u.phone = $2) and ($3::text is null or lower(u.username) = $3)`,
      [userId, phone, username],
    );
    return rows.map((r) => r.id);
  }
}
