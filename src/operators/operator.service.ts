import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Queryable } from '../db/sql.js';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { AppError, badInput, notFound } from '../errors.js';
import { sha256Hex } from '../auth/hash.js';
import { CredentialCache } from '../auth/credential-cache.js';
import type { AdminOperator } from '../auth/principal.js';
import { paginate, type Page } from '../db/pagination.js';
import { requireUuid } from '../uuid.js';
import { Operator } from './operator.entity.js';

/** Every operator token starts with this; the rest is 32 random bytes, base64url. */
export const OPERATOR_TOKEN_PREFIX = 'op_';
const TOKEN_SHAPE = /^op_[A-Za-z0-9_-]{43}$/;

/** The bootstrap ADMIN_TOKEN acts as this operator. */
export const ROOT_OPERATOR: AdminOperator = Object.freeze({ id: null, name: 'root' });
/** The `wallet-gateway` CLI acts as this operator. */
export const CLI_OPERATOR: AdminOperator = Object.freeze({ id: null, name: 'cli' });
/** Names the audit log already gives to root and the CLI; no operator may take them. */
const RESERVED_NAMES = new Set([ROOT_OPERATOR.name, CLI_OPERATOR.name]);

/** A freshly issued operator: the token is shown here once and never stored. */
export interface IssuedOperator {
  operatorId: string;
  name: string;
  token: string;
  createdAt: Date;
}

/** An operator token's row as last read (null: no operator has this token). */
type OperatorRow = { id: string; name: string; revoked: boolean } | null;

/** Why an operator token was refused; logged, never told to the caller. */
export type OperatorRejection = 'malformed' | 'unknown_token' | 'revoked';

/**
 * Operator identities: issue, revoke, list and verify operator tokens (admin credentials with
 * a name). A verified token's row is cached for `keyCacheTtlMs` (≤ 4 s, like secret keys), so a
 * revocation is refused by every instance within 5 seconds.
 */
export class OperatorService {
  private readonly rows: CredentialCache<{ row: OperatorRow }>;

  constructor(
    config: Config,
    private readonly forkEm: () => EntityManager,
    private readonly log: Logger,
  ) {
    this.rows = new CredentialCache({
      ttlMs: config.keyCacheTtlMs,
      load: async (_token, hash) => ({ row: await this.fetch(hash) }),
      keep: ({ row }) => row !== null,
    });
  }

  /** Creates an operator and its token (`op_` + 32 random bytes); only the token's SHA-256 is kept. */
  async create(db: Queryable, name: string): Promise<IssuedOperator> {
    const trimmed = typeof name === 'string' ? name.trim() : '';
    if (trimmed.length < 1 || trimmed.length > 100) throw badInput('name must be 1-100 characters');
    if (RESERVED_NAMES.has(trimmed.toLowerCase())) throw badInput(`name "${trimmed}" is reserved`);
    const token = `${OPERATOR_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const id = randomUUID();
    const taken = () => new AppError('CONFLICT', 'An active operator already has this name');
    const [existing] = await db.query('select 1 from operators where lower(name) = lower($1) and revoked_at is null', [trimmed]);
    if (existing) throw taken();
    try {
      const [row] = await db.query<{ created_at: Date | string }>('insert into operators (id, name, token_hash) values ($1, $2, $3) returning created_at', [
        id,
        trimmed,
        sha256Hex(token),
      ]);
      return { operatorId: id, name: trimmed, token, createdAt: new Date(row!.created_at) };
    } catch (err) {
      if ((err as { code?: string }).code === '23505') throw taken();
      throw err;
    }
  }

  /** Revokes an operator (idempotent: the first revocation time stays); refused everywhere within 5 s. */
  async revoke(db: Queryable, id: string): Promise<{ operatorId: string; revokedAt: Date }> {
    requireUuid(id, 'id');
    const [row] = await db.query<{ revoked_at: Date | string }>(
      `update operators set revoked_at = coalesce(revoked_at, date_trunc('milliseconds', now())) where id = $1 returning revoked_at`,
      [id],
    );
    if (!row) throw notFound('Operator not found');
    this.forget(id);
    return { operatorId: id, revokedAt: new Date(row.revoked_at) };
  }

  /** Newest first, a cursor page; tokens are never part of it. */
  list(em: EntityManager, first?: number, after?: string): Promise<Page<Operator>> {
    return paginate(em, Operator, {}, first, after);
  }

  /** The operator behind a token, or UNAUTHENTICATED `Invalid admin token`. */
  async verify(token: string, log: Logger = this.log): Promise<AdminOperator> {
    const result = await this.check(token);
    if ('reason' in result) {
      log.info({ reason: result.reason }, 'operator token rejected');
      throw new AppError('UNAUTHENTICATED', 'Invalid admin token');
    }
    return result;
  }

  /** Drops an operator's cached rows (after its revocation on this instance). */
  forget(operatorId: string): void {
    this.rows.forget(({ row }) => row?.id === operatorId);
  }

  private async check(token: string): Promise<AdminOperator | { reason: OperatorRejection }> {
    if (!TOKEN_SHAPE.test(token)) return { reason: 'malformed' };
    const { row } = await this.rows.verdict(token);
    if (!row) return { reason: 'unknown_token' };
    if (row.revoked) return { reason: 'revoked' };
    return { id: row.id, name: row.name };
  }

  /** The operator whose token has this SHA-256 (found by the hash itself: an exact match by construction). */
  private async fetch(hash: string): Promise<OperatorRow> {
    const row = await this.forkEm().findOne(Operator, { tokenHash: hash }, { disableIdentityMap: true });
    return row ? { id: row.id, name: row.name, revoked: row.revokedAt !== null } : null;
  }
}
