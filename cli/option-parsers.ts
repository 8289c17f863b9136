// The parsers of the options of every command: each value is parsed once, as the option is read, and a refusal
// is one line from commander naming the option, the value and what it takes (exit code 1). Numbers are written
// in decimal digits only: `Number` would also take '', ' 5', '1e3' and '0x10'.
import { InvalidArgumentError } from 'commander';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../lib/aws/dynamo/table/table.ts';
import { AllowListError, parseAllowList } from '../lib/signature/source-ip.ts';
import { type FaultRates, FaultSpecError, parseFaults } from '../devkit/local/fault-spec.ts';
import { errorSentence } from '../lib/text.ts';
import { parseDuration, parseTimePoint } from './format.ts';
import { CliError } from './inspect.ts';
import { cliIo } from './io.ts';

/** A whole number option from `min` to `max`. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (text: string) => number {
  const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
  return (text) => {
    const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`a whole number ${range} is needed.`);
    return n;
  };
}

/** A count or limit: a whole number above 0. */
export const positiveInt = wholeNumber(1);

const DAY_MS = 86_400_000;

/**
 * How many days the table keeps quarantined callbacks: its TTL deletes them RAW_EVENT_TTL_DAYS after they were
 * received (the worker's setting, read here from the same variable, as the local stack passes it on; else the
 * deployed default).
 */
export function retentionDays(env: Readonly<Record<string, string | undefined>> = cliIo().env): number {
  const text = env.RAW_EVENT_TTL_DAYS?.trim() ?? '';
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  return Number.isSafeInteger(n) && n >= 1 ? n : DEFAULT_RAW_EVENT_TTL_DAYS;
}

const keptFor = (days: number) =>
  `quarantined callbacks are kept ${days} days (RAW_EVENT_TTL_DAYS), the table holds none older`;

/**
 * `--days` of the commands that read the quarantine, which is kept in one partition per day: each day back is
 * one more query, so a look further back than the table keeps anything is refused rather than walked.
 */
export function quarantineDays(text: string): number {
  const days = positiveInt(text);
  const kept = retentionDays();
  if (days > kept) throw new InvalidArgumentError(`at most ${kept}: ${keptFor(kept)}.`);
  return days;
}

/** `--since` of the same commands: not before the oldest callback the table may still hold. */
export function checkQuarantineSince(since: number | undefined, now = Date.now()): void {
  const kept = retentionDays();
  if (since !== undefined && since < now - kept * DAY_MS)
    throw new CliError(`--since is more than ${kept} days back: ${keptFor(kept)}; give a later time`);
}

/** A TCP port; 0 lets the system pick a free one. */
export const portNumber = wholeNumber(0, 65535);

/** A decimal number option from `min` to `max` (a probability, a factor); `0.5` and `.5` alike. */
export function decimalNumber(min: number, max = Number.MAX_VALUE): (text: string) => number {
  const range = max === Number.MAX_VALUE ? `of at least ${min}` : `from ${min} to ${max}`;
  return (text) => {
    const n = /^(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : Number.NaN;
    if (!(n >= min && n <= max)) throw new InvalidArgumentError(`a number ${range} is needed.`);
    return n;
  };
}

/** A probability. */
export const rate = decimalNumber(0, 1);

/** The longest time a timer can wait (setTimeout's limit, about 24.8 days). */
const MAX_TIMER_MS = 2_147_483_647;

/** `ms` as a whole number and the largest unit that keeps it whole: `500ms`, `30s`, `10m`, `36h`. */
function wholeDuration(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms !== 0 && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A bound of a duration option in words: `0`, `12h`, `24 days` (a timer's limit). */
const boundInWords = (ms: number) => (ms === 0 ? '0' : ms === MAX_TIMER_MS ? '24 days' : wholeDuration(ms));

/**
 * The one parser of every duration option (`--timeout 60s`, `--sweep-every 5s`, `--retry-delay 2m`), in ms: the
 * forms of parseDuration (`500ms`, `5s`, `2m`, `1h`, `1.5h`, `7d`), a bare number being seconds; from `minMs` to
 * `maxMs`.
 */
export function durationBetween(minMs: number, maxMs = MAX_TIMER_MS): (text: string) => number {
  const range =
    minMs === 1 ? `above 0 and under ${boundInWords(maxMs)}` : `from ${boundInWords(minMs)} to ${boundInWords(maxMs)}`;
  return (text) => {
    const ms = parseDuration(text, { bareSeconds: true });
    if (ms === null)
      throw new InvalidArgumentError(`not a duration: ${JSON.stringify(text)} (use e.g. 60s, 2m, 500ms).`);
    if (ms < minMs || ms > maxMs) throw new InvalidArgumentError(`a duration ${range} is needed.`);
    return ms;
  };
}

/** A duration option above 0 that a timer can wait (`--timeout 60s`), in ms: see durationBetween. */
export const durationOption = durationBetween(1);

/** `ms` as a stage parameter takes a duration (`30s`, `10m`: a whole number and a unit, as the template checks). */
export function stageDuration(ms: number): string {
  return wholeDuration(ms);
}

/** An instant given as epoch milliseconds or an ISO date (`--start`). */
export function instant(text: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isFinite(n)) throw new InvalidArgumentError('must be epoch milliseconds or an ISO date.');
  return n;
}

/**
 * Source ranges for option `option`, repeatable, each value itself maybe a comma list; read as the ingest
 * reads ALLOWED_SOURCE_CIDRS, so a malformed range, or a value naming none, is refused.
 */
export function cidrList(option: string): (text: string, previous?: string[]) => string[] {
  return (text, previous = []) => {
    try {
      return [...previous, ...(parseAllowList(text, option)?.ranges ?? [])];
    } catch (err) {
      if (!(err instanceof AllowListError)) throw err;
      throw new InvalidArgumentError(errorSentence(err, { bare: true }).replace(`${option}: `, ''));
    }
  };
}

/** `--faults dynamo=0.05,crash=0.02,sns=0.1`, as devkit/local/faults.ts reads it. */
export function faultRates(text: string): FaultRates {
  try {
    return parseFaults(text);
  } catch (err) {
    if (err instanceof FaultSpecError) throw new InvalidArgumentError(`${err.message}.`);
    throw err;
  }
}

/**
 * --since/--until as given (parsed only once --tz is known, whatever the order of the options) into epoch
 * ms. A time that does not parse, or a range given backwards, is a mistake, never an empty result.
 */
export function timeRange(
  opts: { since?: string; until?: string },
  now = Date.now(),
): { since: number | undefined; until: number | undefined } {
  const parse = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    try {
      return parseTimePoint(text, now);
    } catch (err) {
      throw new CliError(`${name}: ${errorSentence(err, { bare: true })}`);
    }
  };
  const since = parse('--since', opts.since);
  const until = parse('--until', opts.until);
  if (since !== undefined && until !== undefined && since > until) {
    throw new CliError('--since is later than --until: the range is reversed');
  }
  return { since, until };
}

/** An http(s) URL: a stage's API base URL. */
export function httpUrl(text: string): string {
  try {
    const url = new URL(text);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url.href;
  } catch {
    // Refused below.
  }
  throw new InvalidArgumentError('an http(s) URL is needed: the HttpApiUrl output of the stage.');
}
