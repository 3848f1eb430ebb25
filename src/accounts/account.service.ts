import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
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
import { generatePin, hashPin, requirePin } from '../consent/pin.js';

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

/** Users and their wallets. */
export class AccountService {
  constructor(private readonly config: Config) {}

  /** Resolves a username or phone number (SPEC rule) to the user's walletId. */
  async walletIdFor(em: EntityManager, identifier: string): Promise<string> {
    const parsed = parseIdentifier(identifier);
    const rows: Array<{ id: string }> =
      parsed.kind === 'phone'
        ? await em.execute('select w.id from wallets w join users u on u.id = w.user_id where u.phone = ?', [parsed.phone])
        : await em.execute('select w.id from wallets w join users u on u.id = w.user_id where lower(u.username) = ?', [
            parsed.username,
          ]);
    const row = rows[0];
    if (!row) throw notFound('Account not found');
    return row.id;
  }

  /**
   * Creates a user with an ACTIVE wallet, optionally funded (a TOPUP ledger entry), and the
   * wallet's transaction PIN (`fields.pin`, or a random 6-digit one), returned once.
   */
  async createUser(em: EntityManager, fields: CreateUserFields): Promise<CreatedUserResult> {
    const username = normaliseUsername(fields.username);
    const phone = normalisePhone(fields.phone);
    const currency = (fields.currency ?? this.config.defaultCurrency).toUpperCase();
    if (!/^[A-Z]{3}$/.test(currency)) throw badInput('currency must be an ISO 4217 code such as ETB');
    const balance = fields.balance === undefined || fields.balance === 0 ? null : parseAmount(fields.balance, 1e12, 'balance');
    const pin = fields.pin === undefined || fields.pin === null ? generatePin() : requirePin(fields.pin);
    // Hashed before the transaction: no connection waits on scrypt.
    const pinHash = await hashPin(pin, this.config.pinHashCost);
    return em.transactional(async (tem) => {
      const taken = await tem.execute<Array<{ username: string; phone: string }>>(
        'select username, phone from users where lower(username) = ? or phone = ?',
        [username, phone],
      );
      if (taken.some((u) => u.username.toLowerCase() === username)) throw new AppError('CONFLICT', 'Username is taken');
      if (taken.length > 0) throw new AppError('CONFLICT', 'Phone number is taken');
      const user = tem.create(User, { id: randomUUID(), username, phone, createdAt: new Date() });
      await tem.flush();
      const wallet = tem.create(Wallet, {
        id: newWalletId(),
        userId: user.id,
        status: WalletStatus.ACTIVE,
        balance: '0.00',
        currency,
        createdAt: new Date(),
        updatedAt: new Date(),
      });
      await tem.flush();
      await tem.execute('insert into wallet_pins (wallet_id, pin_hash) values (?, ?)', [wallet.id, pinHash]);
      if (balance) await recordTopUp(tem, wallet.id, balance);
      return { userId: user.id, walletId: wallet.id, pin };
    });
  }

  /** Finds a user by username (case-insensitive). */
  async userByUsername(em: EntityManager, username: string): Promise<User> {
    const rows = await em.execute<Array<{ id: string }>>('select id from users where lower(username) = ?', [
      username.trim().toLowerCase(),
    ]);
    const row = rows[0];
    if (!row) throw notFound('User not found');
    return em.findOneOrFail(User, { id: row.id });
  }

  /** A user and their wallet, or NOT_FOUND (a token of a user who no longer exists). */
  async walletOfUser(em: EntityManager, userId: string): Promise<{ user: User; wallet: Wallet }> {
    if (!isUuid(userId)) throw notFound('Wallet not found');
    const user = await em.findOne(User, { id: userId });
    const wallet = user && (await em.findOne(Wallet, { userId }));
    if (!user || !wallet) throw notFound('Wallet not found');
    return { user, wallet };
  }

  /** Changes a wallet's status (an operator's action). */
  async setWalletStatus(em: EntityManager, walletId: string, status: WalletStatus): Promise<Wallet> {
    if (!Object.values(WalletStatus).includes(status)) {
      throw badInput(`status must be one of ${Object.values(WalletStatus).join(', ')}`);
    }
    const wallet = await em.findOne(Wallet, { id: walletId });
    if (!wallet) throw notFound('Wallet not found');
    wallet.status = status;
    await em.flush();
    return wallet;
  }

  /** Adds money to a wallet from an external source. */
  async topUp(em: EntityManager, walletId: string, amount: number): Promise<Wallet> {
    const exact = parseAmount(amount, this.config.maxAmount);
    await em.transactional((tem) => recordTopUp(tem, walletId, exact));
    return em.findOneOrFail(Wallet, { id: walletId }, { refresh: true });
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
    em: EntityManager,
    owner: { userId?: string | undefined; phone?: string | undefined; username?: string | undefined },
  ): Promise<string[] | undefined> {
    if (owner.userId === undefined && owner.phone === undefined && owner.username === undefined) return undefined;
    const rows = await em.execute<Array<{ id: string }>>(
      `select w.id from wallets w join users u on u.id = w.user_id
        where (?::uuid is null or u.id = ?::uuid) and (?::text is null or u.phone = ?) and (?::text is null or lower(u.username) = ?)`,
      (() => {
        const userId = owner.userId === undefined ? null : requireUuid(owner.userId, 'userId');
        const phone = owner.phone === undefined ? null : normalisePhone(owner.phone);
        const username = owner.username === undefined ? null : owner.username.trim().toLowerCase();
        return [userId, userId, phone, phone, username, username];
      })(),
    );
    return rows.map((r) => r.id);
  }
}
