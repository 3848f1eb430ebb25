import { badInput } from './errors.js';

/** RFC 3339 (OpenAPI's `format: date` and `format: date-time`): a full date, or a date, a time and an offset. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:\d{2}))?$/;

/** The largest UTC offset's hours PostgreSQL accepts (±15:59). */
const MAX_OFFSET_HOURS = 15;

/**
 * A time filter as the contract states it: an RFC 3339 date (`2026-11-22`, its midnight UTC) or
 * date-time (`2026-11-22T18:00:00Z`, `…+03:00`, any fraction of a second), checked field by field
 * (no 31 February, no 24:00, no offset beyond ±15:59) so that PostgreSQL never meets a time it refuses. The text itself
 * goes to the database (which keeps microseconds, unlike a JavaScript Date).
 */
export function parseIsoTime(value: string, name: string): string {
  const m = RFC3339.exec(value);
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = [1, 2, 3, 4, 5, 6].map((i) => Number(m?.[i] ?? 0));
  const offset = m?.[7]?.toUpperCase() ?? 'Z';
  const valid =
    m !== null &&
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= new Date(Date.UTC(year, month, 0)).getUTCDate() &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    // PostgreSQL refuses UTC offsets of 16 hours or more ("time zone displacement out of range").
    (offset === 'Z' || (Number(offset.slice(1, 3)) <= MAX_OFFSET_HOURS && Number(offset.slice(4, 6)) <= 59));
  if (!valid) throw badInput(`${name} must be an RFC 3339 date or date-time such as 2026-11-22 or 2026-11-22T18:00:00Z`);
  return m![4] === undefined ? `${value}T00:00:00Z` : value;
}
