// The daily cut-off as instants (src/settlement/cutoff.ts): one per local day, also on the days the
// clocks change; the default zone has no daylight-saving time, Europe/Berlin has both changes.
import { cutoffOn, cutoffsDue, latestCutoff } from '../../src/settlement/cutoff.js';

const BERLIN = (time: string) => ({ time, zone: 'Europe/Berlin' });
const ADDIS = (time = '00:00') => ({ time, zone: 'Africa/Addis_Ababa' });
const iso = (d: Date) => d.toISOString();

describe('one cut-off per local day', () => {
  test('Africa/Addis_Ababa (UTC+3 all year): midnight is 21:00 UTC the day before', () => {
    expect(iso(cutoffOn({ year: 2026, month: 11, day: 28 }, ADDIS()))).toBe('2026-11-27T21:00:00.000Z');
    expect(iso(cutoffOn({ year: 2026, month: 6, day: 1 }, ADDIS('17:30')))).toBe('2026-06-01T14:30:00.000Z');
  });

  test('Europe/Berlin, the day the clocks go forward (29 March 2026, 02:00 CET → 03:00 CEST)', () => {
    const day = { year: 2026, month: 3, day: 29 };
    expect(iso(cutoffOn(day, BERLIN('00:00')))).toBe('2026-03-28T23:00:00.000Z'); // still CET
    expect(iso(cutoffOn(day, BERLIN('01:59')))).toBe('2026-03-29T00:59:00.000Z');
    // 02:30 does not exist that night: the cut-off is where it would have been, 03:30 CEST.
    expect(iso(cutoffOn(day, BERLIN('02:30')))).toBe('2026-03-29T01:30:00.000Z');
    expect(iso(cutoffOn(day, BERLIN('03:00')))).toBe('2026-03-29T01:00:00.000Z');
    expect(iso(cutoffOn(day, BERLIN('12:00')))).toBe('2026-03-29T10:00:00.000Z'); // CEST
  });

  test('Europe/Berlin, the day the clocks go back (25 October 2026, 03:00 CEST → 02:00 CET)', () => {
    const day = { year: 2026, month: 10, day: 25 };
    expect(iso(cutoffOn(day, BERLIN('00:00')))).toBe('2026-10-24T22:00:00.000Z'); // CEST
    // 02:30 happens twice that night: the cut-off is the first time, 02:30 CEST.
    expect(iso(cutoffOn(day, BERLIN('02:30')))).toBe('2026-10-25T00:30:00.000Z');
    expect(iso(cutoffOn(day, BERLIN('03:00')))).toBe('2026-10-25T02:00:00.000Z'); // CET
  });

  test('consecutive cut-offs across both changes are 23, 24 or 25 hours apart, never skipped or doubled', () => {
    for (const time of ['00:00', '02:30', '03:00', '23:59']) {
      let previous = cutoffOn({ year: 2026, month: 3, day: 25 }, BERLIN(time));
      const gaps = new Set<number>();
      for (let d = new Date(Date.UTC(2026, 2, 26)); d < new Date(Date.UTC(2026, 10, 1)); d.setUTCDate(d.getUTCDate() + 1)) {
        const cutoff = cutoffOn({ year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }, BERLIN(time));
        gaps.add((cutoff.getTime() - previous.getTime()) / 3_600_000);
        previous = cutoff;
      }
      expect([time, [...gaps].every((h) => h === 23 || h === 24 || h === 25)]).toEqual([time, true]);
      expect([time, gaps.has(23) && gaps.has(25)]).toEqual([time, true]);
    }
  });
});

describe('which cut-offs are due', () => {
  test('the latest cut-off at or before now, in the zone (not UTC)', () => {
    // 20:59 UTC on 27 Nov is 23:59 in Addis Ababa: the latest midnight there is 26 Nov 21:00 UTC.
    expect(iso(latestCutoff(new Date('2026-11-27T20:59:00Z'), ADDIS()))).toBe('2026-11-26T21:00:00.000Z');
    expect(iso(latestCutoff(new Date('2026-11-27T21:00:00Z'), ADDIS()))).toBe('2026-11-27T21:00:00.000Z');
    // In Berlin at 01:00 UTC on 29 March (03:00 CEST), the 02:30 cut-off of that day (01:30 UTC) has not passed.
    expect(iso(latestCutoff(new Date('2026-03-29T01:00:00Z'), BERLIN('02:30')))).toBe('2026-03-28T01:30:00.000Z');
    expect(iso(latestCutoff(new Date('2026-03-29T01:30:00Z'), BERLIN('02:30')))).toBe('2026-03-29T01:30:00.000Z');
  });

  test('a schedule that never ran runs the latest cut-off only', () => {
    expect(cutoffsDue(null, new Date('2026-11-28T08:00:00Z'), ADDIS()).map(iso)).toEqual(['2026-11-27T21:00:00.000Z']);
  });

  test('a restart makes up every cut-off missed since the last one recorded, oldest first, and none twice', () => {
    const last = new Date('2026-10-23T22:00:00Z'); // Berlin midnight of 24 Oct (CEST)
    const due = cutoffsDue(last, new Date('2026-10-27T09:00:00Z'), BERLIN('00:00')).map(iso);
    expect(due).toEqual(['2026-10-24T22:00:00.000Z', '2026-10-25T23:00:00.000Z', '2026-10-26T23:00:00.000Z']);
    expect(cutoffsDue(new Date(due.at(-1)!), new Date('2026-10-27T09:00:00Z'), BERLIN('00:00'))).toEqual([]);
  });

  test('at most `max` cut-offs, the latest ones', () => {
    const due = cutoffsDue(new Date('2020-01-01T00:00:00Z'), new Date('2026-11-28T08:00:00Z'), ADDIS(), 3).map(iso);
    expect(due).toEqual(['2026-11-25T21:00:00.000Z', '2026-11-26T21:00:00.000Z', '2026-11-27T21:00:00.000Z']);
  });
});
