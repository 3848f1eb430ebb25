import { createHash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a string, hex. */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

/** Constant-time equality of two strings (hashing first, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
