// Durations as people type them on a command line: "60s", "2m", "1h", "500ms", or a bare number of seconds.
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(text);
  if (!match) throw new Error(`not a duration: ${JSON.stringify(text)} (use e.g. 60s, 2m, 500ms)`);
  return Math.round(Number(match[1]) * UNITS[(match[2] ?? 's').toLowerCase()]!);
}
