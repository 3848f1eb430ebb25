import { badInput } from '../errors.js';

/** The merchant's own fields of a payment request, checked. */
export interface MerchantFields {
  reference: string | null;
  metadata: Record<string, string> | null;
}

const MAX_METADATA_KEYS = 20;
const MAX_KEY_LENGTH = 40;
const MAX_VALUE_LENGTH = 500;
/**
 * Not printable: C0 and C1 controls, DEL, the Basic Multilingual Plane's invisible format
 * characters (soft hyphen, bidirectional and zero-width controls, BOM, ...), lone surrogates, its
 * private-use area and U+FFFE/U+FFFF. Written as a class of \x/\u escapes, the same as the
 * OpenAPI document's `Reference` and metadata-key patterns, so that the rule means the same in
 * every regex dialect those are read in (ECMAScript, Python's re, ...); a \p{C} class would not
 * (test/openapi/patterns.test.ts).
 */
const NOT_PRINTABLE =
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  /[\x00-\x1F\x7F-\x9F\xAD\u0600-\u0605\u061C\u06DD\u070F\u0890\u0891\u08E2\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uD800-\uDFFF\uE000-\uF8FF\uFEFF\uFFF9-\uFFFB\uFFFE\uFFFF]/u;

const length = (s: string): number => [...s].length;

/** Tab, line feed and carriage return: the only controls free text (a description) may hold. */
const LINE_BREAKS_AND_TABS = /[\t\n\r]/g;

/**
 * Whether text the payer reads (`merchantName`, `description`) holds a character that is not
 * printable by the rule of `reference` (NOT_PRINTABLE: controls, bidirectional and zero-width
 * controls, other invisible format characters, ...), tab, line feed and carriage return aside. A
 * right-to-left override would make "Shop …\u202Egnp.exe" read "exe.png" on the app, the PIN pad,
 * /pay and in the signed consent receipt. The OpenAPI document's patterns of both fields say the
 * same (test/openapi/patterns.test.ts).
 */
function hasHiddenCharacters(text: string): boolean {
  return NOT_PRINTABLE.test(text.replace(LINE_BREAKS_AND_TABS, ''));
}

/**
 * A text field of a create (`walletId`, `description`, `merchantName`): trimmed, 1..max characters
 * (Unicode code points, as PostgreSQL counts them), nothing hidden (above); else BAD_USER_INPUT
 * naming the field. The OpenAPI document's patterns of these fields say exactly this.
 */
export function requireText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string') throw badInput(`${field} must be a string`);
  const text = value.trim();
  if (text.length === 0) throw badInput(`${field} must not be empty`);
  if ([...text].length > max) throw badInput(`${field} must be at most ${max} characters`);
  if (hasHiddenCharacters(text)) throw badInput(`${field} must not contain control, invisible or bidirectional characters`);
  return text;
}

/**
 * Checks the optional `reference` (1-64 printable characters, kept as sent; not unique) and
 * `metadata` (at most 20 keys of 1-40 printable characters, string values of at most 500
 * characters without NUL) of request-payment (SPEC §13).
 */
export function parseMerchantFields(input: { reference?: unknown; metadata?: unknown }): MerchantFields {
  let reference: string | null = null;
  if (input.reference !== undefined && input.reference !== null) {
    if (typeof input.reference !== 'string') throw badInput('reference must be a string');
    const n = length(input.reference);
    if (n < 1 || n > 64) throw badInput('reference must be 1-64 characters');
    if (NOT_PRINTABLE.test(input.reference)) throw badInput('reference must contain printable characters only');
    reference = input.reference;
  }
  let metadata: Record<string, string> | null = null;
  if (input.metadata !== undefined && input.metadata !== null) {
    const m = input.metadata;
    if (typeof m !== 'object' || Array.isArray(m)) throw badInput('metadata must be an object');
    const entries = Object.entries(m as Record<string, unknown>);
    if (entries.length > MAX_METADATA_KEYS) throw badInput(`metadata must have at most ${MAX_METADATA_KEYS} keys`);
    metadata = {};
    for (const [key, value] of entries) {
      if (length(key) < 1 || length(key) > MAX_KEY_LENGTH || NOT_PRINTABLE.test(key)) {
        throw badInput(`metadata keys must be 1-${MAX_KEY_LENGTH} printable characters`);
      }
      if (typeof value !== 'string') throw badInput('metadata values must be strings');
      if (length(value) > MAX_VALUE_LENGTH) throw badInput(`metadata values must be at most ${MAX_VALUE_LENGTH} characters`);
      if (value.includes('\u0000')) throw badInput('metadata values must not contain NUL');
      metadata[key] = value;
    }
  }
  return { reference, metadata };
}
