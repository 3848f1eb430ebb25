import { randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { badInput } from '../errors.js';

/**
 * Transaction PINs: validation, generation and the slow salted hash kept in `wallet_pins`.
 *
 * The hash is scrypt (node:crypto, no dependency) with a random 16-byte salt, stored as the
 * self-describing `scrypt$N$r$p$salt$hash` (salt and hash base64url), so the cost can be raised
 * later without breaking stored PINs. scrypt is memory-hard (N·r·128 bytes per guess), which is
 * what makes a GPU/ASIC search of a dumped table expensive; argon2id would need a native package
 * for the same property. The default cost, N = 2^15, r = 8, p = 1 (32 MiB, roughly 50-100 ms on
 * one core), is the one an interactive check can afford and the memory a guess must pay each time.
 * A PIN has at most 10^6 values, so no hash alone protects a dumped PIN for long (≈ a core-day per
 * PIN at this cost): the online protection is the attempt counter and lock in the database
 * (src/consent/consent.service.ts), the hash only makes a leaked table slow to turn into PINs.
 * `PIN_HASH_COST` (log2 N) lowers it for the test suite, which creates thousands of users;
 * production refuses anything below 15 (src/config.ts).
 */

/** The scrypt block size and parallelism (RFC 7914's recommended r = 8, p = 1). */
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
const PREFIX = 'scrypt';

/** 4 to 6 ASCII digits. */
const PIN_RE = /^[0-9]{4,6}$/;

/** The message for a PIN that is not 4 to 6 digits (never the value itself). */
export const PIN_FORMAT_MESSAGE = 'pin must be 4 to 6 digits';

/** The PIN if it is 4 to 6 ASCII digits, else BAD_USER_INPUT naming `field` (never echoing the value). */
export function requirePin(value: unknown, field = 'pin'): string {
  if (typeof value !== 'string' || !PIN_RE.test(value)) {
    throw badInput(field === 'pin' ? PIN_FORMAT_MESSAGE : `${field} must be 4 to 6 digits`);
  }
  return value;
}

/** A fresh random 6-digit PIN (uniform over 000000-999999). */
export function generatePin(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}

function scryptAsync(pin: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxmem above 128·N·r (Node's default, 32 MiB, is exactly the default cost's need).
    scrypt(pin, salt, KEY_LENGTH, { ...options, maxmem: 256 * (options.N ?? 1) * (options.r ?? R) + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** `scrypt$N$r$p$salt$hash` of a PIN, computed off the event loop (libuv's thread pool). */
export async function hashPin(pin: string, log2N: number): Promise<string> {
  const N = 2 ** log2N;
  const salt = randomBytes(SALT_LENGTH);
  const key = await scryptAsync(pin, salt, { N, r: R, p: P });
  return [PREFIX, N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when `pin` matches the stored hash (constant-time comparison); false for a malformed hash. */
export async function verifyPin(pin: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== PREFIX) return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length !== KEY_LENGTH) return false;
  const key = await scryptAsync(pin, salt, { N, r, p });
  return timingSafeEqual(key, expected);
}
