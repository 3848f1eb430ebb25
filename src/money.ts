import { badInput } from './errors.js';

/**
 * Checks a decimal that arrived as a JSON number and returns it as an exact decimal string with
 * two places ("12.50"), the form the database stores: finite, at most two decimal places, within
 * [min, max]. Every money-like input (amounts, fee terms, the payout minimum) is read here.
 */
export function parseDecimal(value: number, field: string, min: number, max: number): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw badInput(`${field} must be a finite number`);
  }
  if (value < min) throw badInput(`${field} must be at least ${min}`);
  if (value > max) throw badInput(`${field} must be at most ${max}`);
  const fixed = value.toFixed(2);
  if (Number(fixed) !== value) throw badInput(`${field} must have at most 2 decimal places`);
  return fixed;
}

/**
 * Checks an amount that arrived as a JSON number and returns it as an exact decimal string
 * with two places ("12.50"), the form the database stores. Rejects non-finite values, more than
 * two decimal places, and values outside [0.01, max].
 */
export function parseAmount(value: number, max: number, field = 'amount'): string {
  return parseDecimal(value, field, 0.01, max);
}

/** A NUMERIC value from the database as a JSON number (exact for 2-decimal amounts in range). */
export function toAmountNumber(decimal: string | number): number {
  return Number(decimal);
}

/** A NUMERIC(18,2) decimal string as integer cents (exact). */
function cents(decimal: string): bigint {
  const [whole = '0', frac = ''] = decimal.trim().replace(/^-/, '').split('.');
  const value = BigInt(whole) * 100n + BigInt((frac + '00').slice(0, 2));
  return decimal.trim().startsWith('-') ? -value : value;
}

/** `a - b` of two decimal strings, exactly, as a JSON number (a wallet's available balance: balance - held). */
export function differenceOf(a: string, b: string): number {
  const d = cents(a) - cents(b);
  const sign = d < 0n ? '-' : '';
  const abs = d < 0n ? -d : d;
  return Number(`${sign}${abs / 100n}.${String(abs % 100n).padStart(2, '0')}`);
}
