import { badInput } from './errors.js';

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * An ISO 8601 time (`2026-11-22`, `2026-11-22T18:00:00Z`, `…+03:00`, up to microseconds), checked
 * field by field so that PostgreSQL never meets a date it refuses; a date alone is its midnight
 * UTC. The text itself goes to the database (which keeps microseconds, unlike a JS Date).
 */
export function parseIsoTime(value: string, name: string): string {
  const m = ISO_TIME.exec(value);
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = [1, 2, 3, 4, 5, 6].map((i) => Number(m?.[i] ?? 0));
  const offset = m?.[7]?.toUpperCase() ?? 'Z';
  const valid =
    m !== null &&
    year >= 1970 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= new Date(Date.UTC(year, month, 0)).getUTCDate() &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    (offset === 'Z' || (Number(offset.slice(1, 3)) <= 23 && Number(offset.slice(-2)) <= 59));
  if (!valid) throw badInput(`${name} must be an ISO 8601 time such as 2026-11-22T18:00:00Z`);
  return m![4] === undefined ? `${value}T00:00:00Z` : value;
}
