import { randomBytes } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An opaque, unguessable id: `prefix` + `length` random base62 characters (24 ≈ 142 bits). */
export function opaqueId(prefix: string, length = 24): string {
  const bytes = randomBytes(length);
  let id = prefix;
  for (const b of bytes) id += BASE62[b % 62];
  return id;
}
