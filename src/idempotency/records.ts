import { sql, type Queryable, type SimpleStatement } from '../db/sql.js';

/*
 * Idempotency records (SPEC §10): every database statement on `idempotency_keys`. The REST door
 * parses the header, fingerprints the call and wraps the operation (src/rest/idempotency.ts); no
 * operation knows about these records.
 */

/** How long an Idempotency-Key answers as used (SPEC §10); its record may be kept longer (IDEMPOTENCY_RETENTION_HOURS). */
export const IDEMPOTENCY_TTL_HOURS = 24;

/** What a claim on an Idempotency-Key found. */
export type Claim =
  | { kind: 'new' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'mismatch' }
  | { kind: 'in_progress' };

/** An unfinished call whose instance died is taken over after this long. */
const LEASE_SECONDS = 60;

const CLAIM = sql<{ at: string }>(
  'idempotency_claim',
  `insert into idempotency_keys (developer_id, key, fingerprint, state) values ($1::uuid, $2, $3, 'IN_PROGRESS')
     on conflict do nothing returning now() as at`,
);
const COMPLETE = sql(
  'idempotency_complete',
  `update idempotency_keys set state = 'COMPLETED', response_status = $3::int, response_body = $4::jsonb
    where developer_id = $1::uuid and key = $2 and state = 'IN_PROGRESS'`,
);
const FORGET_EXPIRED = sql(
  'idempotency_forget_expired',
  'delete from idempotency_keys where developer_id = $1 and key = $2 and created_at < now() - make_interval(hours => $3)',
);
const TAKE_OVER = sql<{ at: string }>(
  'idempotency_take_over',
  `update idempotency_keys set locked_at = now()
    where developer_id = $1 and key = $2 and state = 'IN_PROGRESS' and locked_at < now() - make_interval(secs => $3)
   returning now() as at`,
);
const READ = sql<{ fingerprint: string; state: string; responseStatus: number | null; responseBody: unknown; stale: boolean; expired: boolean }>(
  'idempotency_read',
  `select fingerprint, state, response_status as "responseStatus", response_body as "responseBody",
          locked_at < now() - make_interval(secs => $1) as stale,
          created_at < now() - make_interval(hours => $2) as expired
     from idempotency_keys where developer_id = $3 and key = $4`,
);
const RELEASE = sql('idempotency_release', `delete from idempotency_keys where developer_id = $1 and key = $2 and state = 'IN_PROGRESS'`);

/** The claim of a key: inserts it IN_PROGRESS and returns the transaction's `now()`, or nothing when the key has a record. */
export function claimStatement(developerId: string, key: string, print: string): SimpleStatement {
  return { text: CLAIM.text, values: [developerId, key, print] };
}

/** Stores the answer of a claimed call. */
export function completeStatement(developerId: string, key: string, status: number, body: unknown): SimpleStatement {
  return { text: COMPLETE.text, values: [developerId, key, status, JSON.stringify(body)] };
}

/** Forgets a claimed call that must not be remembered. */
export function releaseStatement(developerId: string, key: string): SimpleStatement {
  return { text: RELEASE.text, values: [developerId, key] };
}

/**
 * Claims an Idempotency-Key. Outside a transaction the claim commits at once (an IN_PROGRESS row
 * other calls see as 409 until it is completed or released). Inside the transaction a door opens
 * around the operation (src/rest/idempotency.ts) the row is uncommitted: a concurrent call with the same key waits on
 * it at the insert and then replays what committed, and a crash or rollback leaves nothing behind.
 */
export async function claimIdempotencyKey(q: Queryable, developerId: string, key: string, print: string): Promise<Claim> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const inserted = await q.run(CLAIM, [developerId, key, print]);
    if (inserted.length === 1) return { kind: 'new' };
    const found = await readRecord(q, developerId, key, print);
    if (found === 'absent') continue; // removed in between: claim again
    if (found === 'expired') {
      await q.run(FORGET_EXPIRED, [developerId, key, IDEMPOTENCY_TTL_HOURS]);
      continue;
    }
    if (found === 'stale') {
      const taken = await q.run(TAKE_OVER, [developerId, key, LEASE_SECONDS]);
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
  q: Queryable,
  developerId: string,
  key: string,
  print: string,
): Promise<Exclude<Claim, { kind: 'new' }> | 'absent' | 'expired' | 'stale'> {
  const [row] = await q.run(READ, [LEASE_SECONDS, IDEMPOTENCY_TTL_HOURS, developerId, key]);
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
  /** @param pool statements on the pool, each its own transaction */
  constructor(private readonly pool: Queryable) {}

  claim(developerId: string, key: string, print: string): Promise<Claim> {
    return claimIdempotencyKey(this.pool, developerId, key, print);
  }

  /**
   * The answer an existing record gives this call, claiming nothing: for a call refused before it
   * could claim (invalid input), so that reusing a key still answers as SPEC §10 says (422 for
   * another body, 409 while the first call runs, the stored answer) rather than with the 400.
   */
  async standing(developerId: string, key: string, print: string): Promise<Exclude<Claim, { kind: 'new' }> | undefined> {
    const found = await readRecord(this.pool, developerId, key, print);
    return typeof found === 'string' ? undefined : found;
  }

  /** Stores the response of a call claimed on its own (`claim`). */
  async complete(developerId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.pool.run(COMPLETE, [developerId, key, status, JSON.stringify(body)]);
  }

  /** Forgets a claimed call that must not be remembered (failed validation, or failed unexpectedly). */
  async release(developerId: string, key: string): Promise<void> {
    await this.pool.run(RELEASE, [developerId, key]);
  }
}
