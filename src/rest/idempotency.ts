import { createHash } from 'node:crypto';
import { AppError } from '../errors.js';

export { IdempotencyStore, IdempotentCall, claimIdempotencyKey, completeIdempotencyRecord, type Claim, type PendingClaim } from '../idempotency/records.js';

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
