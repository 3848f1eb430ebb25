import { DateTime } from 'luxon';

/*
 * The daily cut-off (PAYOUT_CUTOFF, HH:MM, in SETTLEMENT_TIMEZONE) as instants. Every local
 * calendar day has exactly one, also on a day the clocks change: when the time occurs twice (the
 * clocks go back) the cut-off is its first occurrence; when it does not occur (they jump over it)
 * the cut-off is the instant the clocks jump, where the time would have been (02:30 on a day the
 * clocks go from 02:00 to 03:00 is 03:30 summer time, an hour after 01:30 winter time). The
 * offsets come from the IANA time zone data that Node's Intl carries, through Luxon, which turns a
 * local date and time into the instants it names (`getPossibleOffsets`); doing that by hand with
 * Intl alone means searching offsets around every transition, which is where such code goes wrong.
 */

/** A cut-off setting: the local time of day and its zone. */
export interface CutoffSetting {
  /** HH:MM, 24-hour. */
  time: string;
  /** An IANA time zone name. */
  zone: string;
}

/** The cut-off of one local calendar date (see the file's comment for the days the clocks change). */
export function cutoffOn(date: { year: number; month: number; day: number }, setting: CutoffSetting): Date {
  const [hour, minute] = setting.time.split(':').map(Number) as [number, number];
  const local = DateTime.fromObject({ ...date, hour, minute }, { zone: setting.zone });
  if (!local.isValid) throw new Error(`no cut-off on ${date.year}-${date.month}-${date.day} in ${setting.zone}: ${local.invalidExplanation ?? ''}`);
  // Both instants of a time that occurs twice; the one instant otherwise (a skipped time: Luxon's
  // own, moved forward by the jump).
  const instants = local.getPossibleOffsets().map((d) => d.toMillis());
  return new Date(instants.length > 0 ? Math.min(...instants) : local.toMillis());
}

/** The local calendar date of an instant in a zone. */
function localDate(at: Date, zone: string): DateTime {
  return DateTime.fromJSDate(at, { zone }).startOf('day');
}

const ymd = (d: DateTime): { year: number; month: number; day: number } => ({ year: d.year, month: d.month, day: d.day });

/** The latest cut-off at or before `now`. */
export function latestCutoff(now: Date, setting: CutoffSetting): Date {
  const today = localDate(now, setting.zone);
  const todays = cutoffOn(ymd(today), setting);
  return todays.getTime() <= now.getTime() ? todays : cutoffOn(ymd(today.minus({ days: 1 })), setting);
}

/**
 * The cut-offs after `after` (exclusive; null: none before) up to `now` (inclusive), oldest first:
 * what a payout schedule that last ran at `after` has to make up. Without `after`, only the latest
 * one. At most `max`, the latest ones (a gateway that was down longer makes the rest up in the
 * payouts of those: nothing is lost, each payout holds everything before its cut-off).
 */
export function cutoffsDue(after: Date | null, now: Date, setting: CutoffSetting, max = 400): Date[] {
  const latest = latestCutoff(now, setting);
  if (after !== null && latest.getTime() <= after.getTime()) return [];
  if (after === null) return [latest];
  const due: Date[] = [latest];
  let day = localDate(latest, setting.zone);
  while (due.length < max) {
    day = day.minus({ days: 1 });
    const cutoff = cutoffOn(ymd(day), setting);
    if (cutoff.getTime() <= after.getTime()) break;
    due.push(cutoff);
  }
  return due.reverse();
}
