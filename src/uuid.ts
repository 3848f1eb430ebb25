import { badInput } from './errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a canonical UUID string. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);

/** The id itself, or BAD_USER_INPUT `<name> must be a UUID` (the same words on every door). */
export function requireUuid(value: string, name = 'id'): string {
  if (!isUuid(value)) throw badInput(`${name} must be a UUID`);
  return value;
}
