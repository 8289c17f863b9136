// Points in time as people type them, on the command line (`--since 2h`) and in the read API's query
// parameters (`since=2h`): a duration back from now, an ISO date or time, or epoch milliseconds. A date or
// time without a zone is read in a given IANA time zone (UTC unless said otherwise), never in the machine's.
const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 7 * 86_400_000,
};

/**
 * Durations as people type them: `500ms`, `30s`, `30m`, `45min`, `2h`, `7d`, `1w` (also `1.5h`), in
 * milliseconds; with `bareSeconds`, a bare number is seconds. Null when it is not a duration.
 */
export function parseDuration(text: string, opts: { bareSeconds?: boolean } = {}): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d|w)?$/i.exec(text.trim());
  if (!m || (m[2] === undefined && !opts.bareSeconds)) return null;
  return Math.round(Number(m[1]) * DURATION_UNITS[(m[2] ?? 's').toLowerCase()]!);
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** Throws a one-sentence error when `zone` is not an IANA time zone Node knows. */
function zoneFormat(zone: string): Intl.DateTimeFormat {
  let format = zoneFormats.get(zone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
      });
    } catch {
      throw new Error(`"${zone}" is not a time zone: use an IANA name such as UTC, Asia/Shanghai or Europe/Berlin`);
    }
    zoneFormats.set(zone, format);
  }
  return format;
}

/** Throws a one-sentence error when `zone` is not an IANA time zone. */
export function checkTimeZone(zone: string): void {
  zoneFormat(zone);
}

/** Milliseconds the zone's wall clock is ahead of UTC at instant `ms`. */
export function zoneOffsetMs(ms: number, zone: string): number {
  if (zone === 'UTC') return 0;
  const parts: Record<string, number> = {};
  for (const p of zoneFormat(zone).formatToParts(new Date(ms)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return wall - (ms - (((ms % 1000) + 1000) % 1000));
}

/**
 * The times a task can be stored and listed under: from the epoch to the end of year 9999. Index
 * partitions are named by `YYYY-MM-DD` and DynamoDB numbers are bounded, so every time a caller gives, as
 * a parameter or inside a cursor, is checked against this range before it reaches a key.
 */
const TIME_RANGE = { min: 0, max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) } as const;

/** Whether `ms` is a whole number of epoch milliseconds within TIME_RANGE. */
export function isInTimeRange(ms: number): boolean {
  return Number.isInteger(ms) && ms >= TIME_RANGE.min && ms <= TIME_RANGE.max;
}

/** A time that parses but lies outside TIME_RANGE. */
export class TimeOutOfRangeError extends Error {
  override name = 'TimeOutOfRangeError';
}

const ZONELESS = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;

/**
 * A point in time for `since`/`until`: a duration back from now (`2h`, `7d`), an ISO date or time
 * (`2025-11-22`, `2025-11-22T08:00`, `2025-11-22T08:00:00Z`, `...+08:00`), or epoch milliseconds. A date or
 * time without a zone is read in `zone`.
 */
export function parseTimePoint(text: string, now: number, zone = 'UTC'): number {
  const ms = parseAnyTimePoint(text, now, zone);
  if (!isInTimeRange(ms))
    throw new TimeOutOfRangeError(`"${text}" is outside the times tasks are kept under (1970-01-01 to 9999-12-31)`);
  return ms;
}

function parseAnyTimePoint(text: string, now: number, zone: string): number {
  const trimmed = text.trim();
  const duration = parseDuration(trimmed);
  if (duration !== null) return now - duration;
  if (/^\d{10,}$/.test(trimmed)) return Number(trimmed);
  const local = ZONELESS.exec(trimmed);
  if (local) {
    const [, y, mo, d, h = '0', mi = '0', sec = '0', frac = '0'] = local;
    const wall = Date.UTC(+y!, +mo! - 1, +d!, +h, +mi, +sec, Number(frac.padEnd(3, '0')));
    // Two passes settle the offset of the instant itself, also next to a daylight-saving change.
    const guess = wall - zoneOffsetMs(wall, zone);
    const ms = wall - zoneOffsetMs(guess, zone);
    if (Number.isFinite(ms) && new Date(wall).getUTCDate() === +d!) return ms;
  } else if (/^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:\d{2})$/i.test(trimmed)) {
    const ms = Date.parse(trimmed);
    if (Number.isFinite(ms)) return ms;
  }
  throw new Error(
    `"${text}" is not a time: use a duration back from now (30m, 2h, 7d), an ISO date or time ` +
      '(2025-11-22, 2025-11-22T08:00, 2025-11-22T08:00:00Z) or epoch milliseconds',
  );
}
