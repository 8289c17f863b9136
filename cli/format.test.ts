import { InvalidArgumentError } from 'commander';
import { durationOption } from './inspect.ts';
import {
  colorsEnabled,
  humanSize,
  isoTime,
  parseDuration,
  parseTimePoint,
  relativeTime,
  setTimeZone,
  table,
  timeWithRelative,
} from './format.ts';
import { createColors } from 'picocolors';

const HOUR = 3_600_000;
const NOW = Date.UTC(2025, 10, 22, 12, 0, 0);
const ANSI = /\u001b\[/;

describe('humanSize', () => {
  test.each([
    [0, '0 B'],
    [512, '512 B'],
    [1023, '1023 B'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [734003200, '700 MiB'],
    [367001600, '350 MiB'],
    [1.2 * 1024 ** 3, '1.2 GiB'],
    [1024 ** 2 - 1, '1 MiB'],
    [5 * 1024 ** 4, '5 TiB'],
  ])('%d bytes is %s', (bytes, text) => {
    expect(humanSize(bytes)).toBe(text);
  });

  test('unknown sizes print as a dash', () => {
    expect(humanSize(null)).toBe('-');
    expect(humanSize(undefined)).toBe('-');
  });
});

describe('times', () => {
  test('ISO in UTC, milliseconds only when there are some', () => {
    expect(isoTime(Date.UTC(2025, 10, 22, 8, 0, 0))).toBe('2025-11-22T08:00:00Z');
    expect(isoTime(Date.UTC(2025, 10, 22, 8, 0, 0, 500))).toBe('2025-11-22T08:00:00.500Z');
    expect(isoTime(null)).toBe('-');
  });

  test.each([
    [NOW + 23 * HOUR, 'in 23 h'],
    [NOW - 3 * HOUR, '3 h ago'],
    [NOW + 5 * 60_000, 'in 5 min'],
    [NOW - 30_000, '30 s ago'],
    [NOW - 3 * 24 * HOUR, '3 d ago'],
    [NOW + 47 * HOUR, 'in 47 h'],
    [NOW, 'now'],
  ])('%d relative to now is %s', (ms, text) => {
    expect(relativeTime(ms, NOW)).toBe(text);
  });

  test('an ISO time with its distance from now', () => {
    expect(timeWithRelative(NOW + 23 * HOUR, NOW)).toBe('2025-11-23T11:00:00Z (in 23 h)');
  });
});

describe('durations and time points', () => {
  test.each([
    ['30s', 30_000],
    ['30m', 30 * 60_000],
    ['45min', 45 * 60_000],
    ['2h', 2 * HOUR],
    ['1.5h', 1.5 * HOUR],
    ['7d', 7 * 24 * HOUR],
    ['1w', 7 * 24 * HOUR],
    ['2H', 2 * HOUR],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  test.each(['', '2', 'h', '2 hours', '-2h', '2y'])('%j is not a duration', (text) => {
    expect(parseDuration(text)).toBeNull();
  });

  test('milliseconds, and bare seconds where an option asks for them', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('30', { bareSeconds: true })).toBe(30_000);
    expect(parseDuration('1.5', { bareSeconds: true })).toBe(1500);
    expect(parseDuration('soon', { bareSeconds: true })).toBeNull();
  });

  test('a duration option: the forms above, a bare number in seconds, else a sentence saying what works', () => {
    expect(['60s', '2m', '500ms', '1.5h', '30'].map(durationOption)).toEqual([60_000, 120_000, 500, 5_400_000, 30_000]);
    expect(() => durationOption('soon')).toThrow(
      new InvalidArgumentError('not a duration: "soon" (use e.g. 60s, 2m, 500ms).'),
    );
  });

  test('a duration is that long before now', () => {
    expect(parseTimePoint('2h', NOW)).toBe(NOW - 2 * HOUR);
  });

  test('ISO dates and times, and epoch milliseconds, are taken as they are', () => {
    expect(parseTimePoint('2025-11-22', NOW)).toBe(Date.UTC(2025, 10, 22));
    expect(parseTimePoint('2025-11-22T08:00:00Z', NOW)).toBe(Date.UTC(2025, 10, 22, 8));
    expect(parseTimePoint('1763798400000', NOW)).toBe(1763798400000);
  });

  test('a time without a zone is read in the zone times are printed in; an explicit zone wins', () => {
    expect(parseTimePoint('2025-11-22T08:00', NOW, 'UTC')).toBe(Date.UTC(2025, 10, 22, 8));
    expect(parseTimePoint('2025-11-22T08:00', NOW, 'Asia/Shanghai')).toBe(Date.UTC(2025, 10, 22, 0));
    expect(parseTimePoint('2025-11-22', NOW, 'Asia/Shanghai')).toBe(Date.UTC(2025, 10, 21, 16));
    expect(parseTimePoint('2025-11-22T08:00:00Z', NOW, 'Asia/Shanghai')).toBe(Date.UTC(2025, 10, 22, 8));
    expect(parseTimePoint('2025-11-22T08:00:00+08:00', NOW, 'UTC')).toBe(Date.UTC(2025, 10, 22, 0));
    // Around a daylight-saving change: the offset of the instant itself.
    expect(parseTimePoint('2025-03-30T01:30', NOW, 'Europe/Berlin')).toBe(Date.UTC(2025, 2, 30, 0, 30));
    expect(parseTimePoint('2025-03-30T03:30', NOW, 'Europe/Berlin')).toBe(Date.UTC(2025, 2, 30, 1, 30));
  });

  test('printed in the zone, with its offset; what is printed reads back as the same instant', () => {
    const t = Date.UTC(2025, 10, 22, 8, 0, 0, 500);
    expect(isoTime(t, 'Asia/Shanghai')).toBe('2025-11-22T16:00:00.500+08:00');
    expect(isoTime(t, 'America/New_York')).toBe('2025-11-22T03:00:00.500-05:00');
    expect(isoTime(Date.UTC(2025, 6, 1, 12), 'America/New_York')).toBe('2025-07-01T08:00:00-04:00');
    expect(isoTime(Date.UTC(2025, 6, 1, 12), 'Asia/Kolkata')).toBe('2025-07-01T17:30:00+05:30');
    for (const zone of ['UTC', 'Asia/Shanghai', 'America/New_York', 'Asia/Kolkata']) {
      expect(parseTimePoint(isoTime(t, zone), NOW, zone)).toBe(t);
      // Without its offset, read in the same zone, the printed wall time is the same instant too.
      expect(parseTimePoint(isoTime(t, zone).replace(/(Z|[+-]\d{2}:\d{2})$/, ''), NOW, zone)).toBe(t);
    }
  });

  test('an unknown zone is one sentence', () => {
    expect(() => setTimeZone('Mars/Olympus')).toThrow(
      '"Mars/Olympus" is not a time zone: use an IANA name such as UTC, Asia/Shanghai or Europe/Berlin',
    );
  });

  test.each(['yesterday', '12', '2025-13-45', '2025-02-30', 'soon'])(
    '%j is refused with a sentence saying what is accepted',
    (text) => {
      expect(() => parseTimePoint(text, NOW)).toThrow(/is not a time: use a duration/);
    },
  );
});

describe('colours', () => {
  test('only on a terminal, without --no-color and without NO_COLOR', () => {
    expect(colorsEnabled({ color: true }, { isTTY: true }, {})).toBe(true);
    expect(colorsEnabled({ color: true }, { isTTY: false }, {})).toBe(false);
    expect(colorsEnabled({}, {}, {})).toBe(false);
    expect(colorsEnabled({ color: false }, { isTTY: true }, {})).toBe(false);
    expect(colorsEnabled({ color: true }, { isTTY: true }, { NO_COLOR: '1' })).toBe(false);
  });

  test('a plain table has no escape codes, a coloured one has', () => {
    const rows = [
      ['a', '1'],
      ['bb', '22'],
    ];
    const plain = table(['NAME', 'N'], rows, createColors(false));
    expect(plain).not.toMatch(ANSI);
    expect(plain.split('\n')).toEqual(['NAME  N', 'a     1', 'bb    22']);
    expect(table(['NAME', 'N'], rows, createColors(true))).toMatch(ANSI);
  });
});
