import { createHash } from 'node:crypto';
import type { Context as KoaContext } from 'koa';
import { AppError } from '../errors.js';
import type { UnitOfWork } from '../db/unit-of-work.js';
import { IdempotencyStore, claimIdempotencyKey, claimStatement, completeStatement, releaseStatement, type Claim } from '../idempotency/records.js';

export { IdempotencyStore };

/*
 * Idempotency-Key at the REST door (SPEC §10). The door wraps the route's operation, as
 * `audit.middleware.ts` wraps admin mutations; the operation itself knows nothing of keys
 * (`keyed`): the door opens a transaction on the operation's unit of work, claims the key in it,
 * runs the operation (whose transactions run inside this one), stores the answer it sends and
 * commits: the key's record and the write are one commit; a crash before it leaves neither. An
 * operation whose effect lies outside the database (the webhook test send) commits the claim
 * before that effect (`UnitOfWork.outside`): a concurrent call sees the key IN_PROGRESS (409) and
 * the answer is stored after it, as a claim made first would.
 */

const KEY = /^[\x21-\x7E](?:[\x20-\x7E]{0,253}[\x21-\x7E])?$/;

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

/** What a REST operation answers. */
export interface RestResponse {
  status: number;
  body: unknown;
}

/** The call a key belongs to: whose key, the key, the call's fingerprint. */
export interface KeyedCall {
  store: IdempotencyStore;
  developerId: string;
  key: string;
  print: string;
}

export function send(ctx: KoaContext, response: RestResponse): void {
  ctx.status = response.status;
  ctx.body = response.body;
}

/** The answer to a call whose Idempotency-Key was already used: the stored response, 422 or 409. */
function answerClaim(ctx: KoaContext, claim: Exclude<Claim, { kind: 'new' }>): void {
  switch (claim.kind) {
    case 'mismatch':
      throw new AppError('UNPROCESSABLE', 'Idempotency-Key was already used with a different request');
    case 'in_progress':
      // Retry-After marks the one 409 that a retry with the same key resolves (clients retry on it).
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed', { 'Retry-After': '1' });
    case 'replay':
      ctx.set('Idempotent-Replayed', 'true');
      send(ctx, { status: claim.status, body: claim.body });
      return;
    default: {
      const never: never = claim;
      throw new Error(`unknown claim ${String(never)}`);
    }
  }
}

/** Whether an answer is stored for its Idempotency-Key: not a refused body (400), which may be retried, nor a failure of ours (5xx). */
const remembered = (status: number): boolean => status !== 400 && status < 500;

/**
 * Claims the key on its own and answers from its record if it was used already; else answers
 * with `respond()` and stores that answer, or releases the key when it is not to be remembered.
 * A `respond` that throws (an answer the error boundary gives, e.g. 429 or 5xx) releases the key.
 */
export async function claimFirst(ctx: KoaContext, call: KeyedCall, respond: () => Promise<RestResponse>): Promise<void> {
  const { store, developerId, key, print } = call;
  const claim = await store.claim(developerId, key, print);
  if (claim.kind !== 'new') {
    answerClaim(ctx, claim);
    return;
  }
  let response: RestResponse;
  try {
    response = await respond();
  } catch (err) {
    await store.release(developerId, key).catch(() => undefined);
    throw err;
  }
  if (remembered(response.status)) await store.complete(developerId, key, response.status, response.body);
  else await store.release(developerId, key);
  send(ctx, response);
}

/** Rolls the door's transaction back with the operation's answer (anything but a success writes nothing). */
class NotCommitted extends Error {
  constructor(readonly response: RestResponse) {
    super('the operation did not succeed');
  }
}

/**
 * Runs the operation inside one database transaction that the door opens on the operation's unit
 * of work: the key's claim is its first statement, the operation's writes follow (inside it), the
 * answer the door sends is stored as its last, then it commits. A concurrent call with the same
 * key waits at the claim for this commit and replays what committed. An operation that does not
 * succeed rolls everything back; its answer is then remembered on its own (`claimFirst`) where
 * SPEC §10 remembers it (a 404, a 409), and a refused body (400) answers as the key's record says
 * when the key was used already (e.g. 422 for another body).
 */
export async function keyed(ctx: KoaContext, work: UnitOfWork, call: KeyedCall, respond: () => Promise<RestResponse>): Promise<void> {
  const { store, developerId, key, print } = call;
  type Outcome = { claim: Exclude<Claim, { kind: 'new' }> } | { response: RestResponse };
  let outcome: Outcome;
  try {
    // The claim rides on BEGIN's round trip and the record on COMMIT's (TransactionEnds, src/db/unit-of-work.ts).
    outcome = await work.transaction<Outcome>(
      async (tx, claimed) => {
        const claim = claimed.length === 1 ? ({ kind: 'new' } as const) : await claimIdempotencyKey(tx, developerId, key, print);
        if (claim.kind !== 'new') return { claim };
        const response = await respond();
        if (response.status !== 200) throw new NotCommitted(response);
        return { response };
      },
      {
        begin: claimStatement(developerId, key, print),
        commit: (done) => ('response' in done ? completeStatement(developerId, key, done.response.status, done.response.body) : undefined),
        // The operation committed the claim early (an effect outside the database) and then failed: nothing to roll back.
        abandon: releaseStatement(developerId, key),
      },
    );
  } catch (err) {
    if (!(err instanceof NotCommitted)) throw err;
    const refused = err.response;
    const standing = refused.status === 400 ? await store.standing(developerId, key, print) : undefined;
    if (standing) answerClaim(ctx, standing);
    else if (!remembered(refused.status)) send(ctx, refused);
    else await claimFirst(ctx, call, async () => refused);
    return;
  }
  if ('claim' in outcome) answerClaim(ctx, outcome.claim);
  else send(ctx, outcome.response);
}
