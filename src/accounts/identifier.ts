import { badInput } from '../errors.js';

/** What an account identifier names: a phone number (normalised) or a username (lower-cased). */
export type AccountIdentifier = { kind: 'phone'; phone: string } | { kind: 'username'; username: string };

const PHONE_START = /^0?[89]/;
const USERNAME = /^[a-z0-9_.]{3,32}$/;

/**
 * Phone numbers are stored as their national number with one leading `0` removed, so
 * `0912345678` and `912345678` are the same phone.
 */
export function normalisePhone(raw: string): string {
  const phone = raw.trim();
  if (!/^[0-9]+$/.test(phone)) throw badInput('phone must contain digits only');
  const national = phone.startsWith('0') ? phone.slice(1) : phone;
  if (national.length < 6 || national.length > 15 || national.startsWith('0')) {
    throw badInput('phone must have 6 to 15 digits after the leading 0');
  }
  // Look-ups read only identifiers starting with 8, 9, 08 or 09 as phone numbers; any other
  // phone could never be found again.
  if (!/^[89]/.test(national)) throw badInput('phone must start with 8 or 9 (after an optional leading 0)');
  return national;
}

/** Validates a new username (3–32 of `a-z 0-9 _ .`, not shaped like a phone) and lower-cases it. */
export function normaliseUsername(raw: string): string {
  const username = raw.trim().toLowerCase();
  if (!USERNAME.test(username)) {
    throw badInput('username must be 3-32 characters of a-z, 0-9, "_" and "."');
  }
  if (PHONE_START.test(username)) {
    throw badInput('username must not start with 8, 9, 08 or 09 (those are read as phone numbers)');
  }
  return username;
}

/**
 * The look-up rule of GET /account/{identifier}: anything starting with `09`, `9`, `08` or `8`
 * is a phone number, anything else a username (compared without regard to case).
 */
export function parseIdentifier(raw: string): AccountIdentifier {
  const value = raw.trim();
  if (value.length === 0) throw badInput('identifier must not be empty');
  if ([...value].length > 64) throw badInput('identifier must be at most 64 characters');
  // PostgreSQL text cannot hold NUL (the query would fail with a 500); no identifier has controls.
  if ([...value].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f')) throw badInput('identifier must not contain control characters');
  if (PHONE_START.test(value)) {
    if (!/^[0-9]+$/.test(value)) throw badInput('a phone number must contain digits only');
    return { kind: 'phone', phone: value.startsWith('0') ? value.slice(1) : value };
  }
  return { kind: 'username', username: value.toLowerCase() };
}
