import { InvalidArgumentError } from 'commander';
import { decimalNumber, durationOption, positiveInt, wholeNumber } from './option-parsers.ts';
import {
  colors,
  colorsEnabled,
  fields,
  humanSize,
  jsonText,
  printable,
  safeJson,
  isoTime,
  parseDuration,
  parseTimePoint,
  relativeTime,
  setTimeZone,
  styled,
  table,
  timeWithRelative,
} from './format.ts';
import { renderList, renderTask } from './commands/tasks.ts';
import { renderEvents as renderTaskEvents } from './commands/events.ts';
import { prettyLogLine } from './dev-log.ts';
import type { Task } from '../lib/domain/task.ts';
import type { TaskSummary } from '../lib/domain/task-summary.ts';

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

  test('a duration option of 0, or beyond what a timer can wait, is refused rather than firing at once', () => {
    for (const text of ['0', '0s', '30d']) {
      expect(() => durationOption(text)).toThrow(
        new InvalidArgumentError('a duration above 0 and under 24 days is needed.'),
      );
    }
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
    const plain = table(['NAME', 'N'], rows, colors(false));
    expect(plain).not.toMatch(ANSI);
    expect(plain.split('\n')).toEqual(['NAME  N', 'a     1', 'bb    22']);
    expect(table(['NAME', 'N'], rows, colors(true))).toMatch(ANSI);
  });
});

/**
 * A value as a hostile sender would write it: an OSC 52 clipboard write, a screen clear, a window title, a C1
 * CSI, DEL, a right-to-left override and isolate, a zero-width space and an invisible tag character.
 */
const HOSTILE =
  'rec\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b]0;title\u0007' +
  '\u009b31m\u007f\u202eevil\u2066\u200b\u{e0041}\r\n!';
/** What must never reach a terminal raw (SGR colour codes of our own aside, tested apart). */
const RAW_HIDDEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200b\u{e0041}]/u;
const OUR_SGR = /\u001b\[\d+m/g;

describe('terminal escape injection: values are printed with their control and format characters escaped', () => {
  test('printable writes each hidden character as a visible escape and keeps every other character', () => {
    expect(printable(HOSTILE)).toBe(
      'rec\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J\\x1b]0;title\\x07\\x9b31m\\x7f\\u202eevil\\u2066\\u200b' +
        '\\u{e0041}\\r\\n!',
    );
    expect(printable('room-é 会议室 🎥 a\\b')).toBe('room-é 会议室 🎥 a\\b');
    expect(printable('a\nb\rc', { lines: true })).toBe('a\nb\\rc');
    expect(printable(printable(HOSTILE))).toBe(printable(HOSTILE));
  });

  test('a table escapes plain cells and the texts given to a colour, and keeps the colours themselves', () => {
    for (const enabled of [false, true]) {
      const c = colors(enabled);
      const out = table(
        ['A', 'B'],
        [
          [HOSTILE, c.red(HOSTILE)],
          [styled`${c.green('ok')} ${HOSTILE}`, 1],
        ],
        c,
      );
      expect(out.replace(OUR_SGR, '')).not.toMatch(RAW_HIDDEN);
      expect(out.split('\n')).toHaveLength(3);
      expect(out.split(printable(HOSTILE)).length - 1).toBe(3);
      if (enabled) expect(out).toMatch(/\u001b\[31mrec\\x1b/);
      expect(fields([['id', HOSTILE]], c).replace(OUR_SGR, '')).not.toMatch(RAW_HIDDEN);
    }
  });

  test('a long callbacks dev does not keep every coloured text: recent ones are recognised, old ones forgotten', () => {
    const c = colors(true);
    const early = c.red('early');
    const recent = c.red('recent');
    for (let i = 0; i < 15_000; i++) c.dim(`line ${i}`);
    expect(table(['A'], [[recent]], c)).toContain('\u001b[31mrecent');
    for (let i = 0; i < 30_000; i++) c.dim(`later line ${i}`);
    // Forgotten: shown escaped, never raw.
    expect(table(['A'], [[early]], c)).toContain('\\x1b[31mearly');
  });

  test('--json stays exact JSON that parses back to the same value, with no hidden character left raw', () => {
    const value = { id: HOSTILE, list: [HOSTILE, 1, null], nested: { 'k\u202e': 'v\u0085' } };
    for (const indent of [undefined, 2]) {
      const text = jsonText(value, indent);
      expect(JSON.parse(text)).toEqual(value);
      expect(text.replace(/\n/g, '')).not.toMatch(RAW_HIDDEN);
    }
    expect(jsonText(value, 2)).toContain('\\u202e');
    // A log line as the functions write it, shown by callbacks dev --log-format json.
    const line = JSON.stringify({ level: 'warn', id: HOSTILE });
    expect(JSON.parse(safeJson(line))).toEqual({ level: 'warn', id: HOSTILE });
    expect(safeJson(line)).not.toMatch(RAW_HIDDEN);
    expect(jsonText(value)).toContain('\\udb40\\udc41');
  });

  const summary: TaskSummary = {
    service: 'recording',
    id: HOSTILE,
    appKey: HOSTILE,
    roomId: HOSTILE,
    sessionId: HOSTILE,
    userId: null,
    status: 'completed',
    startedAt: NOW,
    endedAt: null,
    updatedAt: NOW,
    sortAt: NOW,
    eventCount: 1,
    fileCount: 1,
    pendingFiles: 0,
    failedFiles: 1,
  } as TaskSummary;

  test('tasks list, tasks get and events tail render hostile ids, rooms and messages escaped', () => {
    const task = {
      service: 'recording',
      id: HOSTILE,
      appKey: HOSTILE,
      roomId: HOSTILE,
      sessionId: HOSTILE,
      userId: HOSTILE,
      status: 'upload_failed',
      startedAt: NOW,
      endedAt: NOW,
      updatedAt: NOW,
      extra: HOSTILE,
      config: { k: HOSTILE },
      mode: 3,
      modeName: 'mix-audio-video',
      startFileName: HOSTILE,
      counts: { total: 1, pending: 0, uploaded: 0, failed: 1, lost: 0 },
      files: [
        {
          fileName: HOSTILE,
          size: 1,
          url: HOSTILE,
          upload: 'failed',
          code: 500,
          message: HOSTILE,
          attempts: 1,
          purgeAt: NOW,
        },
      ],
      lastError: { type: 4, code: 500, message: HOSTILE, at: NOW },
      eventCount: 1,
    } as unknown as Task;
    const event = {
      messageId: 'm',
      attributes: {},
      body: {
        id: HOSTILE,
        type: 'file.upload_failed',
        occurredAt: NOW,
        task: { service: 'recording', id: HOSTILE, status: HOSTILE },
        file: { fileName: HOSTILE },
      },
    };
    for (const enabled of [false, true]) {
      const c = colors(enabled);
      const outputs = [
        renderList([summary], c, NOW),
        renderTask(task, c, NOW),
        renderTask(task, c, NOW, { wide: true }),
        renderTaskEvents([event], c),
      ];
      for (const out of outputs) {
        expect(out.replace(OUR_SGR, '')).not.toMatch(RAW_HIDDEN);
        expect(out).toContain(printable(HOSTILE));
      }
    }
  });

  test('the dev log escapes the values of a callback line and of a warning', () => {
    const request = JSON.stringify({
      time: '2025-11-22T08:00:00.123Z',
      level: 'info',
      event: 'callback_request',
      route: HOSTILE,
      id: HOSTILE,
      status: 400,
      type: 1,
      verdict: HOSTILE,
      code: HOSTILE,
      reason: HOSTILE,
    });
    const warning = JSON.stringify({ time: 'x', level: 'warn', function: HOSTILE, event: HOSTILE, detail: HOSTILE });
    for (const enabled of [false, true]) {
      for (const line of [request, warning, HOSTILE]) {
        const out = prettyLogLine(line, colors(enabled))!;
        expect(out.replace(OUR_SGR, '')).not.toMatch(RAW_HIDDEN);
        expect(out).toContain(printable(HOSTILE));
      }
    }
  });
});

describe('numeric options: one strict parser each, refusing what Number() would quietly take', () => {
  test('a whole number is decimal digits within its range', () => {
    expect(['0', '7', '65535'].map(wholeNumber(0, 65535))).toEqual([0, 7, 65535]);
    expect(positiveInt('50')).toBe(50);
    for (const text of ['', ' 5', '5 ', '1e3', '0x10', '1.5', '-1', '65536', 'abc', 'Infinity']) {
      expect(() => wholeNumber(0, 65535)(text)).toThrow(
        new InvalidArgumentError('a whole number from 0 to 65535 is needed.'),
      );
    }
    expect(() => positiveInt('0')).toThrow(new InvalidArgumentError('a whole number of at least 1 is needed.'));
  });

  test('a decimal number (a probability, a factor) is digits with an optional fraction, within its range', () => {
    expect(['0', '1', '0.25', '.5', '1.'].map(decimalNumber(0, 1))).toEqual([0, 1, 0.25, 0.5, 1]);
    for (const text of ['', '1.5', '-0.1', '1e-1', 'NaN', '0x1']) {
      expect(() => decimalNumber(0, 1)(text)).toThrow(new InvalidArgumentError('a number from 0 to 1 is needed.'));
    }
  });
});
