import type { EntityManager } from '@mikro-orm/postgresql';
import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';
import { IDEMPOTENCY_TTL_HOURS } from '../maintenance.js';

/** What a claim on an Idempotency-Key found. */
export type Claim =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_progress' };

/** An Idempotency-Key a REST call asks its operation to claim inside its own transaction. */
export interface PendingClaim {
  readonly key: string;
  readonly fingerprint: string;
}

/**
 * Thrown inside an operation whose claim found the key already used (replay, mismatch, in
 * progress): the transaction rolls back and the REST door answers from the claim.
 */
export class IdempotentCall extends Error {
  constructor(readonly claim: Exclude<Claim, { kind: 'new' }>) {
    super(`Idempotency-Key already used (${claim.kind})`);
  }
}

const KEY = /^[\x21-\x7E](?:[\x20-\x7E]{0,253}[\x21-\x7E])?$/;

/** An unfinished call whose instance died is taken over after this long. */
const LEASE_SECONDS = 60;

/** Validates the header: 1–255 printable ASCII characters, no surrounding spaces. */
export function parseIdempotencyKey(header: string): string {
  if (!KEY.test(header)) throw new AppError('BAD_USER_INPUT', 'Idempotency-Key must be 1-255 printable characters');
  return header;
}

/** Stable JSON (object keys sorted) so that equal bodies fingerprint equally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Fingerprint of a call: the route and its body. The same key on another route or body is a misuse. */
export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonical(body)}`).digest('hex');
}

/**
 * Stores the response of a claimed call. A business write calls it inside its own transaction,
 * so that the record and the write commit together (no key left IN_PROGRESS by a crash between
 * them); without a claim (a GraphQL caller) nothing is updated.
 */
export async function completeIdempotencyRecord(em: EntityManager, developerId: string, key: string, status: number, body: unknown): Promise<void> {
  await em.execute(
    `update idempotency_keys set state = 'COMPLETED', response_status = ?, response_body = ?::jsonb
      where developer_id = ? and key = ? and state = 'IN_PROGRESS'`,
    [status, JSON.stringify(body), developerId, key],
  );
}

/**
 * Claims an Idempotency-Key on `em`. Outside a transaction the claim commits at once (an
 * IN_PROGRESS row other calls see as 409 until it is completed or released). Inside the
 * business transaction of a call (`claimInside` routes) the row is uncommitted: a concurrent
 * call with the same key waits on it at the insert and then replays what committed, and a crash
 * or rollback leaves nothing behind.
 */
export async function claimIdempotencyKey(em: EntityManager, developerId: string, key: string, print: string): Promise<Claim> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const inserted = await em.execute(
      `insert into idempotency_keys (developer_id, key, fingerprint, state) values (?, ?, ?, 'IN_PROGRESS')
       on conflict do nothing returning 1 as ok`,
      [developerId, key, print],
    );
    if (inserted.length === 1) return { kind: 'new' };
    const found = await readRecord(em, developerId, key, print);
    if (found === 'absent') continue; // removed in between: claim again
    if (found === 'expired') {
      await em.execute('delete from idempotency_keys where developer_id = ? and key = ? and created_at < now() - make_interval(hours => ?)', [
        developerId,
        key,
        IDEMPOTENCY_TTL_HOURS,
      ]);
      continue;
    }
    if (found === 'stale') {
      const taken = await em.execute(
        `update idempotency_keys set locked_at = now()
          where developer_id = ? and key = ? and state = 'IN_PROGRESS' and locked_at < now() - make_interval(secs => ?)
         returning 1 as ok`,
        [developerId, key, LEASE_SECONDS],
      );
      if (taken.length === 1) return { kind: 'new' };
      return { kind: 'in_progress' };
    }
    return found;
  }
  return { kind: 'in_progress' };
}

/**
 * What the record of a key says to a call with this fingerprint: its answer (replay, mismatch,
 * in progress), or that there is none to go by (absent, expired, or an unfinished call of the
 * same body whose lease ran out).
 */
async function readRecord(
  em: EntityManager,
  developerId: string,
  key: string,
  print: string,
): Promise<Exclude<Claim, { kind: 'new' }> | 'absent' | 'expired' | 'stale'> {
  const [row] = await em.execute<
    Array<{ fingerprint: string; state: string; responseStatus: number | null; responseBody: unknown; stale: boolean; expired: boolean }>
  >(
    `select fingerprint, state, response_status as "responseStatus", response_body as "responseBody",
            locked_at < now() - make_interval(secs => ?) as stale,
            created_at < now() - make_interval(hours => ?) as expired
       from idempotency_keys where developer_id = ? and key = ?`,
    [LEASE_SECONDS, IDEMPOTENCY_TTL_HOURS, developerId, key],
  );
  if (!row) return 'absent';
  if (row.expired) return 'expired';
  if (row.fingerprint !== print) return { kind: 'mismatch' };
  if (row.state === 'COMPLETED') return { kind: 'replay', status: row.responseStatus!, body: row.responseBody };
  return row.stale ? 'stale' : { kind: 'in_progress' };
}

/**
 * Idempotency records (SPEC §10), per developer, kept 24 hours. A call claims its key before it
 * runs; concurrent calls with the same key see IN_PROGRESS (409) and later ones the stored
 * response. The primary key (developer_id, key) makes the claim atomic across instances.
 */
export class IdempotencyStore {
  constructor(private readonly forkEm: () => EntityManager) {}

  claim(developerId: string, key: string, print: string): Promise<Claim> {
    return claimIdempotencyKey(this.forkEm(), developerId, key, print);
  }

  /**
   * The answer an existing record gives this call, claiming nothing: for a call refused before it
   * could claim (invalid input), so that reusing a key still answers as SPEC §10 says (422 for
   * another body, 409 while the first call runs, the stored answer) rather than with the 400.
   */
  async standing(developerId: string, key: string, print: string): Promise<Exclude<Claim, { kind: 'new' }> | undefined> {
    const found = await readRecord(this.forkEm(), developerId, key, print);
    return typeof found === 'string' ? undefined : found;
  }

  /** Stores the response of a claimed call (unless its business write already did, see completeIdempotencyRecord). */
  async complete(developerId: string, key: string, status: number, body: unknown): Promise<void> {
    await completeIdempotencyRecord(this.forkEm(), developerId, key, status, body);
  }

  /** Forgets a claimed call that must not be remembered (failed validation, or failed unexpectedly). */
  async release(developerId: string, key: string): Promise<void> {
    await this.forkEm().execute(`delete from idempotency_keys where developer_id = ? and key = ? and state = 'IN_PROGRESS'`, [developerId, key]);
  }
}
