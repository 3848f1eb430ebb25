import type { EntityManager } from '@mikro-orm/postgresql';
import type { FilterQuery } from '@mikro-orm/core';
import type { AdminOperator } from '../auth/principal.js';
import { paginate, type Page } from '../db/pagination.js';
import { isUuid } from '../uuid.js';
import { AuditEntry } from './audit-entry.entity.js';
import { sql, type Queryable } from '../db/sql.js';

const INSERT = sql(
  'audit_insert',
  'insert into audit_log (actor, operator_id, operation, arguments, outcome, request_id) values ($1, $2, $3, $4::jsonb, $5, $6)',
);

/** What one audited admin operation wrote. */
export interface AuditRecord {
  operator: AdminOperator;
  operation: string;
  /** The operation's arguments; secrets are masked by `record`. */
  args: Record<string, unknown>;
  /** 'ok' or the error code the caller was told. */
  outcome: string;
  requestId: string | null;
}

/** Filters of the `auditLog` query; all optional, combined with AND. */
export interface AuditFilter {
  /** An actor name ('root', 'cli', an operator's name) or an operator id. */
  operator?: string | null;
  operation?: string | null;
  /** Inclusive lower bound of `at`. */
  from?: Date | null;
  /** Exclusive upper bound of `at`. */
  to?: Date | null;
}

/** What replaces a secret in an audit row. */
export const REDACTED = '[redacted]';

/** Argument names that carry credentials or key material, transaction PINs included (`keyId`, `developerId` are ids and stay). */
const SECRET_NAME = /token|secret|passw|passphrase|credential|private|signature|authorization|cookie|^key$|api_?key|key_?material|^(current|new)?_?pin$/i;
/** Values that are credentials of ours whatever their name: secret keys, operator tokens, JWTs. */
const SECRET_VALUE = /^(sk_(test|live)_|op_)\S{16,}$|^eyJ[\w-]+\.[\w-]+\.[\w-]+$/;

/** What jsonb cannot hold (NUL, lone surrogates) becomes U+FFFD, so an odd argument never fails the audited change. */
// eslint-disable-next-line no-control-regex -- NUL is exactly what jsonb refuses
const NOT_JSONB = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A copy of an operation's arguments fit for the audit log: credentials masked, nesting bounded. */
export function redactArguments(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return SECRET_VALUE.test(value) ? REDACTED : value.replace(NOT_JSONB, '\uFFFD');
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return value.toISOString();
  if (depth >= 8) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactArguments(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_NAME.test(k) ? REDACTED : redactArguments(v, depth + 1);
  return out;
}

/** The audit log: one row per admin mutation / data-changing CLI command, and its reader. */
export class AuditService {
  /**
   * Appends a row through `db`: inside the caller's transaction it commits or rolls back with the
   * change it describes; on the pool it stands alone (a failure's row).
   */
  async record(db: Queryable, r: AuditRecord): Promise<void> {
    await db.run(INSERT,
      [r.operator.name, r.operator.id, r.operation, JSON.stringify(redactArguments(r.args)), r.outcome, r.requestId],
    );
  }

  /** Newest first, a cursor page, filtered. */
  list(em: EntityManager, filter: AuditFilter, first?: number, after?: string): Promise<Page<AuditEntry>> {
    const where: FilterQuery<AuditEntry> = {};
    if (filter.operator) Object.assign(where, isUuid(filter.operator) ? { operatorId: filter.operator } : { actor: filter.operator });
    if (filter.operation) where.operation = filter.operation;
    if (filter.from || filter.to) {
      where.createdAt = { ...(filter.from ? { $gte: filter.from } : {}), ...(filter.to ? { $lt: filter.to } : {}) };
    }
    return paginate(em, AuditEntry, where, first, after);
  }
}
