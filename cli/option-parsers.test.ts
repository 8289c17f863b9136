import { readdirSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, type Option } from 'commander';
import { errorSentence } from '../lib/text.ts';
import { register as registerQuarantine } from './commands/quarantine.ts';
import { register as registerStatus } from './commands/status.ts';
import {
  checkQuarantineSince,
  cidrList,
  faultRates,
  httpUrl,
  instant,
  portNumber,
  quarantineDays,
  rate,
  retentionDays,
} from './option-parsers.ts';

test('a port, a rate and an instant', () => {
  expect(['0', '3000', '65535'].map(portNumber)).toEqual([0, 3000, 65535]);
  expect(() => portNumber('65536')).toThrow(new InvalidArgumentError('a whole number from 0 to 65535 is needed.'));
  expect(rate('.25')).toBe(0.25);
  expect(() => rate('1.5')).toThrow(InvalidArgumentError);
  expect(instant('1795252977701')).toBe(1795252977701);
  expect(instant('2026-11-22T10:00:00Z')).toBe(Date.UTC(2026, 10, 22, 10));
  expect(() => instant('yesterday')).toThrow(new InvalidArgumentError('must be epoch milliseconds or an ISO date.'));
});

test('source ranges: repeatable, comma lists, normalised; a bad one named without the option twice', () => {
  const parse = cidrList('--allow-cidr');
  expect(parse('10.0.0.0/8, 192.0.2.1', parse('2001:db8::/32'))).toEqual([
    '2001:db8::/32',
    '10.0.0.0/8',
    '192.0.2.1/32',
  ]);
  expect(() => parse('10.0.0.0/33')).toThrow(/^"10\.0\.0\.0\/33" has a prefix length outside 0 to 32/);
  expect(() => parse(' , ')).toThrow(/^--allow-cidr is set but names no range/);
});

test('faults and URLs', () => {
  expect(faultRates('crash=0.5')).toEqual({ crash: 0.5 });
  expect(() => faultRates('crash=2')).toThrow(
    new InvalidArgumentError('crash needs a rate from 0 to 1, as in crash=0.05 (not "crash=2").'),
  );
  expect(httpUrl('https://abc.execute-api.eu-west-1.amazonaws.com')).toBe(
    'https://abc.execute-api.eu-west-1.amazonaws.com/',
  );
  expect(() => httpUrl('ftp://x')).toThrow(InvalidArgumentError);
});

describe('how far back the quarantine is read', () => {
  const saved = process.env.RAW_EVENT_TTL_DAYS;
  afterEach(() => {
    if (saved === undefined) delete process.env.RAW_EVENT_TTL_DAYS;
    else process.env.RAW_EVENT_TTL_DAYS = saved;
  });

  test('--days: up to the retention (RAW_EVENT_TTL_DAYS, else 7), beyond it refused with the reason', () => {
    delete process.env.RAW_EVENT_TTL_DAYS;
    expect(retentionDays()).toBe(7);
    expect(quarantineDays('7')).toBe(7);
    expect(() => quarantineDays('8')).toThrow(
      new InvalidArgumentError(
        'at most 7: quarantined callbacks are kept 7 days (RAW_EVENT_TTL_DAYS), the table holds none older.',
      ),
    );
    expect(() => quarantineDays('0')).toThrow(InvalidArgumentError);
    process.env.RAW_EVENT_TTL_DAYS = '400';
    expect(quarantineDays('365')).toBe(365);
    process.env.RAW_EVENT_TTL_DAYS = 'ninety';
    expect(retentionDays()).toBe(7);
  });

  test('--since: not before the oldest day the table keeps', () => {
    delete process.env.RAW_EVENT_TTL_DAYS;
    const now = Date.UTC(2026, 10, 26);
    expect(() => checkQuarantineSince(now - 6 * 86_400_000, now)).not.toThrow();
    expect(() => checkQuarantineSince(undefined, now)).not.toThrow();
    expect(() => checkQuarantineSince(Date.UTC(2000, 0, 1), now)).toThrow(
      /^--since is more than 7 days back: quarantined callbacks are kept 7 days/,
    );
  });

  /** `callbacks <args>` parsed in this process; what it wrote to stderr, and the error it ended with. */
  async function parse(args: string[]): Promise<{ stderr: string; error: unknown }> {
    let stderr = '';
    const program = new Command().exitOverride().configureOutput({
      writeErr: (text) => {
        stderr += text;
      },
      writeOut: () => {},
    });
    registerQuarantine(program);
    registerStatus(program);
    // No stack runs in this folder: a command that got as far as reading one would say so.
    const error = await program.parseAsync(['node', 'callbacks', ...args]).then(
      () => null,
      (err: unknown) => err,
    );
    return { stderr, error };
  }

  test('a huge --days or an old --since is refused before any day is queried', async () => {
    delete process.env.RAW_EVENT_TTL_DAYS;
    for (const args of [
      ['quarantine', 'list', '--days', '100000'],
      ['quarantine', 'apply', '--days', '100000', '--dry-run'],
      ['status', '--days', '100000'],
    ]) {
      const { stderr, error } = await parse(args);
      expect(error).toBeInstanceOf(CommanderError);
      expect((error as CommanderError).code).toBe('commander.invalidArgument');
      expect(stderr).toContain('at most 7: quarantined callbacks are kept 7 days');
    }
    const since = await parse(['quarantine', 'list', '--since', '2000-01-01']);
    expect(errorSentence(since.error, { bare: true })).toMatch(/^--since is more than 7 days back/);
  });
});

describe('duration options', () => {
  /** Every option of every command, as `<command path> <long flag>`, with its parser. */
  async function everyOption(): Promise<{ name: string; flags: string; parse: (text: string) => unknown }[]> {
    const program = new Command();
    const dir = new URL('./commands/', import.meta.url);
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
      ((await import(new URL(file, dir).href)) as { register(p: Command): void }).register(program);
    }
    const found: { name: string; flags: string; parse: (text: string) => unknown }[] = [];
    const walk = (cmd: Command, path: string[]) => {
      for (const option of cmd.options as Option[]) {
        found.push({
          name: [...path, option.long].join(' '),
          flags: option.flags,
          parse: (text) => (option.parseArg ? option.parseArg(text, undefined) : text),
        });
      }
      for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
    };
    walk(program, []);
    return found;
  }

  test('dev --sweep-every 5s was refused ("a whole number"), --settle-after 5s taken: one parser for all', async () => {
    const options = await everyOption();
    // No option counts a time in units of its own: each takes a duration.
    expect(options.filter((o) => /<(seconds|s|ms|milliseconds|minutes)>/.test(o.flags)).map((o) => o.name)).toEqual([]);
    const durations = options.filter((o) => o.flags.endsWith('<duration>'));
    expect(durations.map((o) => o.name)).toEqual(
      expect.arrayContaining([
        'dev --retry-delay',
        'dev --sweep-every',
        'dev --settle-after',
        'emulate --reorder-window',
        'emulate --request-timeout',
        'send --timeout',
        'pull --timeout',
        'verify --timeout',
        'tasks list --purge-before',
        'send --duration',
        'send --outage-for',
        'emulate --duration',
        'dlq redrive --timeout',
      ]),
    );
    const parsed = (o: (typeof durations)[number], text: string) => {
      try {
        return o.parse(text);
      } catch (err) {
        return errorSentence(err, { bare: true });
      }
    };
    for (const o of durations) {
      expect({ option: o.name, ms: ['500ms', '5s', '2m', '1h', '7'].map((text) => parsed(o, text)) }).toEqual({
        option: o.name,
        ms: [500, 5000, 120_000, 3_600_000, 7000],
      });
    }
    expect(parsed(durations.find((o) => o.name === 'dev --sweep-every')!, '0')).toBe(0);
    expect(parsed(durations.find((o) => o.name === 'dev --sweep-every')!, '25h')).toBe(
      'a duration from 0 to 24h is needed.',
    );
  });
});
