// What the timeline shows, computed without the DOM: the marks of a task's callbacks on the platform's
// time axis (the callbacks' timestamps), the purge deadlines of its files, and the binning that keeps a
// task of 100,000 images as fast as one of ten: marks are counted per column of a few pixels, and each
// column is drawn once, whatever it holds.
import { FILE_STATE_OK } from '../../lib/platform/failures.ts';

export type MarkKind = 'start' | 'start_failed' | 'slice' | 'upload_ok' | 'upload_failed' | 'end' | 'end_failed';

export interface Mark {
  at: number;
  kind: MarkKind;
  file: string | null;
}

/** A stored callback as far as the timeline reads it. */
export interface TimelineCallback {
  type: number;
  timestamp: number;
  body: unknown;
}

const field = (value: unknown, name: string): unknown =>
  value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[name] : undefined;

const isOk = (code: unknown) => Number(code) === 200;

/**
 * The mark of one callback. An upload succeeded when its code is 200, or for a screenshot when its
 * fileState is "10000", whatever the code says (docs/platform-callbacks.md §7).
 */
export function markOf(cb: TimelineCallback): Mark | null {
  const output = field(cb.body, 'output');
  const fileName = field(output, 'fileName');
  const file = typeof fileName === 'string' ? fileName : null;
  const code = field(cb.body, 'code');
  switch (cb.type) {
    case 1:
      return { at: cb.timestamp, kind: isOk(code) ? 'start' : 'start_failed', file };
    case 2:
      return { at: cb.timestamp, kind: 'slice', file };
    case 3:
      return { at: cb.timestamp, kind: isOk(code) ? 'end' : 'end_failed', file };
    case 4: {
      const state = field(output, 'fileState');
      const ok = state !== undefined && state !== null && state !== '' ? String(state) === FILE_STATE_OK : isOk(code);
      return { at: cb.timestamp, kind: ok ? 'upload_ok' : 'upload_failed', file };
    }
    default:
      return null;
  }
}

export interface Lane {
  id: 'task' | 'slices' | 'uploads' | 'purge';
  label: string;
  kinds: readonly (MarkKind | 'purge')[];
}

/** The rows of the timeline: a screenshot task has no slices, and its uploads are its images. */
export function lanesOf(service: string): Lane[] {
  const task: Lane = { id: 'task', label: 'Task', kinds: ['start', 'start_failed', 'end', 'end_failed'] };
  const purge: Lane = { id: 'purge', label: 'Purge deadlines', kinds: ['purge'] };
  if (service === 'screenshot') {
    return [task, { id: 'uploads', label: 'Images', kinds: ['upload_ok', 'upload_failed'] }, purge];
  }
  return [
    task,
    { id: 'slices', label: 'Slices', kinds: ['slice'] },
    { id: 'uploads', label: 'Uploads', kinds: ['upload_ok', 'upload_failed'] },
    purge,
  ];
}

export interface Domain {
  from: number;
  to: number;
}

/**
 * The span the axis covers: from the first mark (or the start) to the last mark, the end, the purge
 * deadlines, and now while the task is live. A span of zero is widened to a second.
 */
export function domainOf(times: readonly number[], now: number | null): Domain {
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const t of times) {
    if (!Number.isFinite(t)) continue;
    if (t < from) from = t;
    if (t > to) to = t;
  }
  if (now !== null) {
    from = Math.min(from, now);
    to = Math.max(to, now);
  }
  if (!Number.isFinite(from)) return { from: 0, to: 1000 };
  if (to - from < 1000) return { from: from - 500, to: from + 500 };
  const pad = (to - from) * 0.01;
  return { from: from - pad, to: to + pad };
}

export interface Bin {
  /** First column of the bin, in pixels from the left of the plot. */
  x: number;
  /** Time range of the marks it holds. */
  first: number;
  last: number;
  counts: Partial<Record<MarkKind | 'purge', number>>;
  total: number;
  /** The file of the bin's only mark, when it holds one. */
  file: string | null;
}

/**
 * Marks counted per column of `binPx` pixels of a plot `width` pixels wide. Marks outside the domain are
 * clamped to its edges. Bins come out left to right; empty ones are left out.
 */
export function binMarks(
  marks: Iterable<{ at: number; kind: MarkKind | 'purge'; file: string | null }>,
  domain: Domain,
  width: number,
  binPx = 2,
): Bin[] {
  const columns = Math.max(1, Math.ceil(width / binPx));
  const span = domain.to - domain.from;
  const bins = new Map<number, Bin>();
  for (const m of marks) {
    const ratio = span > 0 ? (m.at - domain.from) / span : 0;
    const col = Math.min(columns - 1, Math.max(0, Math.floor(ratio * columns)));
    let bin = bins.get(col);
    if (!bin) {
      bin = { x: col * binPx, first: m.at, last: m.at, counts: {}, total: 0, file: m.file };
      bins.set(col, bin);
    } else {
      bin.file = null;
      if (m.at < bin.first) bin.first = m.at;
      if (m.at > bin.last) bin.last = m.at;
    }
    bin.counts[m.kind] = (bin.counts[m.kind] ?? 0) + 1;
    bin.total++;
  }
  return [...bins.values()].sort((a, b) => a.x - b.x);
}

/** Round steps for the axis' ticks, from a second to a week. */
const TICK_STEPS = [
  1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5, 18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5, 1728e5, 6048e5,
];

/** About `wanted` ticks at a round step. */
export function ticksOf(domain: Domain, wanted: number): number[] {
  const span = domain.to - domain.from;
  const step = TICK_STEPS.find((s) => span / s <= wanted) ?? TICK_STEPS[TICK_STEPS.length - 1]!;
  const ticks: number[] = [];
  for (let t = Math.ceil(domain.from / step) * step; t <= domain.to; t += step) ticks.push(t);
  return ticks;
}
