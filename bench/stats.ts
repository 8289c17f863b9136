// Summaries of repeated measurements. The bench reports medians with their min and max, and ratios
// computed round by round (both sides measured in the same round share that round's noise).

export interface Summary {
  median: number;
  min: number;
  max: number;
  /** Number of measurements summarised. */
  n: number;
}

function sortedCopy(values: readonly number[]): number[] {
  if (values.length === 0) throw new Error('cannot summarise an empty list of measurements');
  for (const v of values) {
    if (!Number.isFinite(v)) throw new Error(`measurement is not a finite number: ${v}`);
  }
  return [...values].sort((a, b) => a - b);
}

/** The median (mean of the two middle values for an even count). */
export function median(values: readonly number[]): number {
  const s = sortedCopy(values);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100): the smallest value with at least p% of the values at or below it. */
export function percentile(values: readonly number[], p: number): number {
  if (!(p >= 0 && p <= 100)) throw new Error(`percentile must be within 0..100, got ${p}`);
  const s = sortedCopy(values);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1]!;
}

export function summarize(values: readonly number[]): Summary {
  const s = sortedCopy(values);
  return { median: median(s), min: s[0]!, max: s[s.length - 1]!, n: s.length };
}

/** Element-wise ratios of two equally long series (round i of A over round i of B). */
export function ratios(numerators: readonly number[], denominators: readonly number[]): number[] {
  if (numerators.length !== denominators.length) {
    throw new Error(`ratio of series of different lengths (${numerators.length} and ${denominators.length})`);
  }
  return numerators.map((a, i) => {
    const b = denominators[i]!;
    if (b === 0) throw new Error('ratio over a zero baseline');
    return a / b;
  });
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) throw new Error('mean of an empty list');
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/** Rounds to a number of significant digits, for reports (never for computing). */
export function significant(value: number, digits = 3): number {
  if (value === 0 || !Number.isFinite(value)) return value;
  return Number(value.toPrecision(digits));
}
