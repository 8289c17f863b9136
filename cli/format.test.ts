import { InvalidArgumentError } from 'commander';
import { durationOption } from './inspect.ts';
import {
  colorsEnabled,
  humanSize,
  isoTime,
  parseDuration,
  parseTimePoint,
  relativeTime,
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

  test.each(['yesterday', '12', '2025-13-45', 'soon'])(
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
