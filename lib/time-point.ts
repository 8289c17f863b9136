// Points in time as people type them, on the command line (`--since 2h`) and in the read API's query
// parameters (`since=2h`): a duration back from now, an ISO date or time, or epoch milliseconds.
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

/**
 * A point in time for `since`/`until`: a duration back from now (`2h`, `7d`), an ISO date or time
 * (`2025-11-22`, `2025-11-22T08:00:00Z`), or epoch milliseconds (`1763798400000`).
 */
export function parseTimePoint(text: string, now: number): number {
  const trimmed = text.trim();
  const duration = parseDuration(trimmed);
  if (duration !== null) return now - duration;
  if (/^\d{10,}$/.test(trimmed)) return Number(trimmed);
  if (/^\d{4}-\d{2}-\d{2}/.test(trimmed)) {
    const ms = Date.parse(trimmed);
    if (Number.isFinite(ms)) return ms;
  }
  throw new Error(
    `"${text}" is not a time: use a duration back from now (30m, 2h, 7d), an ISO date (2025-11-22 or 2025-11-22T08:00:00Z) or epoch milliseconds`,
  );
}
