import { createHash, createHmac, randomBytes, randomInt, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { badInput } from '../errors.js';

/**
 * Transaction PINs: validation (format and the easy PINs refused), generation, and the keyed hash
 * kept in `wallet_pins`.
 *
 * A PIN has at most 10^6 values, so no hash that the database alone can recompute protects a dumped
 * PIN: at any affordable cost every value is tried offline in hours. What protects it is a secret
 * the dump does not hold (payment networks keep PINs under HSM keys): the stored form is
 * `hmac$<pepperId>$<salt>$<mac>`, `mac` = HMAC-SHA-256 keyed with the pepper (`PIN_PEPPER`, held
 * outside the database: docs/operations.md) over a random 16-byte salt and the PIN (salt and mac
 * base64url). Without the pepper a dump says nothing about a PIN; with it a verification costs
 * microseconds, so approvals are not capped by hashing. `pepperId` names the pepper (a digest of
 * it, not the pepper), so a rotation (`PIN_PREVIOUS_PEPPERS`) keeps older hashes verifiable.
 *
 * The earlier form, `scrypt$N$r$p$salt$hash`, still verifies; a PIN stored in it, or under a
 * previous pepper, is rewritten in the current form at its next successful verification
 * (`PinHasher.verify` says so with `upgrade`, src/consent/consent.service.ts writes it).
 */

const HMAC_PREFIX = 'hmac';
const SCRYPT_PREFIX = 'scrypt';
const SALT_LENGTH = 16;
const MAC_LENGTH = 32;
/** Smallest pepper accepted (bytes). */
export const MIN_PEPPER_BYTES = 32;

/** 4 to 6 ASCII digits. */
const PIN_RE = /^[0-9]{4,6}$/;

/** The message for a PIN that is not 4 to 6 digits (never the value itself). */
export const PIN_FORMAT_MESSAGE = 'pin must be 4 to 6 digits';

/** The message for an easy PIN (never the value itself). */
export const EASY_PIN_MESSAGE = 'is too easy to guess (a repeated digit, a run of consecutive digits or a very common PIN); choose another';

/**
 * The twenty most common four-digit PINs of the published studies (SPEC §16; Bonneau, Preibusch
 * and Anderson 2012, and the DataGenetics set).
 */
const COMMON_PINS: ReadonlySet<string> = new Set([
  '1234', '1111', '0000', '1212', '7777', '1004', '2000', '4444', '2222', '6969',
  '9999', '3333', '5555', '6666', '1122', '1313', '8888', '4321', '2001', '1010',
]);

/**
 * True for a PIN that SPEC §16 refuses wherever a PIN is set: one digit repeated (`0000`,
 * `111111`), a run of consecutive digits up or down (`1234`, `012345`, `9876`), or one of the
 * twenty most common four-digit PINs. Only for well-formed PINs (4 to 6 digits).
 */
export function isEasyPin(pin: string): boolean {
  if (COMMON_PINS.has(pin)) return true;
  const steps = new Set<number>();
  for (let i = 1; i < pin.length; i++) steps.add(pin.charCodeAt(i) - pin.charCodeAt(i - 1));
  return steps.size === 1 && [0, 1, -1].includes([...steps][0]!);
}

/** The PIN if it is 4 to 6 ASCII digits, else BAD_USER_INPUT naming `field` (never echoing the value). */
export function requirePin(value: unknown, field = 'pin'): string {
  if (typeof value !== 'string' || !PIN_RE.test(value)) {
    throw badInput(field === 'pin' ? PIN_FORMAT_MESSAGE : `${field} must be 4 to 6 digits`);
  }
  return value;
}

/**
 * A PIN about to be set (every path that sets one: the user's change, an operator's create and
 * reset, the CLI): well-formed and not easy (SPEC §16), else BAD_USER_INPUT naming `field`.
 */
export function requireNewPin(value: unknown, field = 'pin'): string {
  const pin = requirePin(value, field);
  if (isEasyPin(pin)) throw badInput(`${field} ${EASY_PIN_MESSAGE}`);
  return pin;
}

/** A fresh random 6-digit PIN (uniform over the 000000-999999 that are not easy). */
export function generatePin(): string {
  for (;;) {
    const pin = String(randomInt(0, 1_000_000)).padStart(6, '0');
    if (!isEasyPin(pin)) return pin;
  }
}

/**
 * A pepper from its setting: hex when it is only hex digits (an even number of them), else base64
 * (standard or URL alphabet); at least MIN_PEPPER_BYTES bytes. Null when it is neither.
 */
export function decodePepper(text: string): Buffer | null {
  const value = text.trim();
  let bytes: Buffer;
  if (/^(?:[0-9a-fA-F]{2})+$/.test(value)) bytes = Buffer.from(value, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) bytes = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  else return null;
  return bytes.length >= MIN_PEPPER_BYTES ? bytes : null;
}

/** The settings' pepper list (`PIN_PREVIOUS_PEPPERS`: comma or whitespace separated). */
export const pepperList = (text: string | undefined): string[] => (text ?? '').split(/[\s,]+/).filter(Boolean);

/** What `PinHasher.verify` found: whether the PIN matches, and whether its stored form is older than the current one. */
export interface PinCheck {
  readonly ok: boolean;
  /** Stored in the scrypt form or under a previous pepper: rewrite it (after a success). */
  readonly upgrade: boolean;
}

interface Pepper {
  readonly id: string;
  readonly key: Buffer;
}

const pepperOf = (key: Buffer): Pepper => ({ id: createHash('sha256').update('wallet-gateway pin pepper id\0').update(key).digest('base64url').slice(0, 11), key });

/**
 * Hashes and verifies PINs under the current pepper, and verifies under the previous ones and in
 * the scrypt form. Built once per process from the resolved peppers (src/startup-keys.ts).
 */
export class PinHasher {
  private readonly current: Pepper;
  private readonly byId: ReadonlyMap<string, Pepper>;

  constructor(current: Buffer, previous: readonly Buffer[] = []) {
    this.current = pepperOf(current);
    const all = [this.current, ...previous.map(pepperOf)];
    this.byId = new Map(all.reverse().map((p) => [p.id, p]));
  }

  /** From the configuration: PIN_PEPPER as the process start resolved it, and PIN_PREVIOUS_PEPPERS. */
  static fromConfig(config: { pinPepper?: string | undefined; pinPreviousPeppers?: string | undefined }): PinHasher {
    const current = config.pinPepper ? decodePepper(config.pinPepper) : null;
    if (!current) throw new Error('PIN_PEPPER is not resolved: the process start resolves it (src/startup-keys.ts)');
    return new PinHasher(current, pepperList(config.pinPreviousPeppers).map((p) => decodePepper(p)!).filter(Boolean));
  }

  /** `hmac$pepperId$salt$mac` of a PIN under the current pepper. */
  hash(pin: string): string {
    const salt = randomBytes(SALT_LENGTH);
    return [HMAC_PREFIX, this.current.id, salt.toString('base64url'), mac(this.current.key, salt, pin).toString('base64url')].join('$');
  }

  /** Whether `pin` matches `stored` (constant-time), and whether `stored` should be rewritten; false for a malformed hash or an unknown pepper. */
  async verify(pin: string, stored: string): Promise<PinCheck> {
    const parts = stored.split('$');
    if (parts[0] === SCRYPT_PREFIX) return { ok: await verifyScrypt(pin, parts), upgrade: true };
    if (parts.length !== 4 || parts[0] !== HMAC_PREFIX) return { ok: false, upgrade: false };
    const pepper = this.byId.get(parts[1]!);
    if (!pepper) return { ok: false, upgrade: false };
    const expected = Buffer.from(parts[3]!, 'base64url');
    if (expected.length !== MAC_LENGTH) return { ok: false, upgrade: false };
    const ok = timingSafeEqual(mac(pepper.key, Buffer.from(parts[2]!, 'base64url'), pin), expected);
    return { ok, upgrade: pepper.id !== this.current.id };
  }
}

function mac(key: Buffer, salt: Buffer, pin: string): Buffer {
  return createHmac('sha256', key).update(salt).update(pin, 'ascii').digest();
}

// The earlier form (scrypt): verified so stored PINs keep working until their next success moves them.

/** The scrypt block size and parallelism of the earlier form (RFC 7914's r = 8, p = 1). */
const SCRYPT_R = 8;
const SCRYPT_P = 1;

function scryptAsync(pin: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxmem above 128·N·r (Node's default, 32 MiB, is exactly N = 2^15's need).
    scrypt(pin, salt, MAC_LENGTH, { ...options, maxmem: 256 * (options.N ?? 1) * (options.r ?? SCRYPT_R) + 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/**
 * `scrypt$N$r$p$salt$hash`, the form PINs were stored in before the keyed hash. Nothing stores it
 * any more; tests and bench/approvals.mjs write it to measure and exercise the move to the keyed form.
 */
export async function scryptPinHash(pin: string, log2N: number): Promise<string> {
  const N = 2 ** log2N;
  const salt = randomBytes(SALT_LENGTH);
  const key = await scryptAsync(pin, salt, { N, r: SCRYPT_R, p: SCRYPT_P });
  return [SCRYPT_PREFIX, N, SCRYPT_R, SCRYPT_P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

async function verifyScrypt(pin: string, parts: string[]): Promise<boolean> {
  if (parts.length !== 6) return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0) || N > 2 ** 20) return false;
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length !== MAC_LENGTH) return false;
  const key = await scryptAsync(pin, salt, { N, r, p });
  return timingSafeEqual(key, expected);
}
