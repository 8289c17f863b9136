// The timeline of one task, drawn in SVG: a row per kind of mark (start and end, slices, upload attempts
// or images, purge deadlines) on the platform's time axis, with "now". Marks are binned per column
// (timeline-model.ts): a sparse row draws a symbol per column, a dense one a bar per column whose height
// grows with the count. Shapes and the side of the centre line differ by outcome (successes above,
// failures below), so colour is never the only signal; each drawn column has a <title> saying what it holds.
import { h, s } from './dom.ts';
import { count, utc } from './format.ts';
import { binMarks, type Bin, type Domain, lanesOf, type Mark, type MarkKind, ticksOf } from './timeline-model.ts';

export interface TimelineInput {
  service: string;
  marks: readonly Mark[];
  purges: readonly { at: number; file: string }[];
  domain: Domain;
  now: number;
  /** Plot width in pixels (without the row labels). */
  width: number;
}

const LABEL_W = 120;
const LANE_H = 44;
const AXIS_H = 34;
const BIN_PX = 3;

const KIND_TEXT: Record<MarkKind | 'purge', [one: string, many: string]> = {
  start: ['start', 'starts'],
  start_failed: ['failed start', 'failed starts'],
  slice: ['slice', 'slices'],
  upload_ok: ['upload succeeded', 'uploads succeeded'],
  upload_failed: ['upload failed', 'uploads failed'],
  end: ['end', 'ends'],
  end_failed: ['failed end', 'failed ends'],
  purge: ['purge deadline', 'purge deadlines'],
};

export function kindText(kind: MarkKind | 'purge', n: number): string {
  const [one, many] = KIND_TEXT[kind];
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** Failures sit below a row's centre line, everything else above it. */
const isFailure = (kind: string) => kind.endsWith('_failed') || kind === 'purge';

function binTitle(bin: Bin): string {
  const what = Object.entries(bin.counts)
    .map(([kind, n]) => kindText(kind as MarkKind, n ?? 0))
    .join(', ');
  const when = bin.first === bin.last ? utc(bin.first) : `${utc(bin.first)} to ${utc(bin.last)}`;
  return `${what}: ${when}${bin.file ? ` (${bin.file})` : ''}`;
}

function symbol(kind: MarkKind | 'purge', x: number, mid: number): SVGElement {
  const up = mid - 9;
  const down = mid + 9;
  switch (kind) {
    case 'start':
      return s('path', { d: `M${x - 5},${mid - 8} L${x + 7},${mid} L${x - 5},${mid + 8} Z` });
    case 'end':
      return s('rect', { x: x - 6, y: mid - 6, width: 12, height: 12 });
    case 'start_failed':
    case 'end_failed':
      return s('path', { d: `M${x - 6},${mid - 6} L${x + 6},${mid + 6} M${x + 6},${mid - 6} L${x - 6},${mid + 6}` });
    case 'slice':
      return s('path', { d: `M${x},${mid - 10} L${x},${mid + 10}` });
    case 'upload_ok':
      return s('circle', { cx: x, cy: up, r: 4 });
    case 'upload_failed':
      return s('path', {
        d: `M${x - 4},${down - 4} L${x + 4},${down + 4} M${x + 4},${down - 4} L${x - 4},${down + 4}`,
      });
    case 'purge':
      return s('path', { d: `M${x},${mid - 7} L${x + 6},${mid} L${x},${mid + 7} L${x - 6},${mid} Z` });
  }
}

export function drawTimeline(input: TimelineInput): SVGSVGElement {
  const lanes = lanesOf(input.service);
  const width = Math.max(200, Math.floor(input.width));
  const height = lanes.length * LANE_H + AXIS_H;
  const { domain } = input;
  const xOf = (t: number) => LABEL_W + ((t - domain.from) / (domain.to - domain.from)) * width;
  const total = input.marks.length + input.purges.length;
  const svg = s('svg', {
    width: LABEL_W + width + 10,
    height,
    viewBox: `0 0 ${LABEL_W + width + 10} ${height}`,
    role: 'img',
    'aria-labelledby': 'timeline-title timeline-desc',
    class: 'timeline',
  });
  svg.append(
    s('title', { id: 'timeline-title' }, 'Timeline of the task'),
    s(
      'desc',
      { id: 'timeline-desc' },
      `${count(total)} marks from ${utc(domain.from)} to ${utc(domain.to)}; the events list below gives them as text.`,
    ),
  );

  const purgeMarks = input.purges.map((p) => ({ at: p.at, kind: 'purge' as const, file: p.file }));
  lanes.forEach((lane, i) => {
    const top = i * LANE_H;
    const mid = top + LANE_H / 2;
    const g = s('g', { class: `lane lane-${lane.id}`, 'data-lane': lane.id });
    g.append(
      s('rect', { class: 'lane-bg', x: LABEL_W, y: top + 2, width, height: LANE_H - 4 }),
      s('line', { class: 'lane-mid', x1: LABEL_W, x2: LABEL_W + width, y1: mid, y2: mid }),
      s('text', { class: 'lane-label', x: 6, y: mid + 4 }, lane.label),
    );
    const source =
      lane.id === 'purge' ? purgeMarks : input.marks.filter((m) => (lane.kinds as readonly string[]).includes(m.kind));
    const bins = binMarks(source, domain, width, BIN_PX);
    // Dense when symbols would touch: then a bar per column, its height by count (square root, so that a
    // lone retry stays visible next to a column of hundreds).
    const dense = bins.length > width / (BIN_PX * 4) || bins.some((b) => b.total > 3);
    const max = Math.max(1, ...bins.map((b) => Math.max(...Object.values(b.counts).map((n) => n ?? 0))));
    for (const bin of bins) {
      const x = LABEL_W + bin.x + BIN_PX / 2;
      for (const [kind, n] of Object.entries(bin.counts) as [MarkKind | 'purge', number][]) {
        const mark = s('g', { class: `mark k-${kind}`, 'data-kind': kind, 'data-count': n });
        if (dense) {
          const half = LANE_H / 2 - 4;
          const len = Math.max(2, Math.round(half * Math.sqrt(n / max)));
          const y = isFailure(kind) && lane.id === 'uploads' ? mid + 1 : mid - len;
          mark.append(s('rect', { x: x - BIN_PX / 2, y, width: BIN_PX, height: len }));
        } else {
          mark.append(symbol(kind, x, mid));
        }
        mark.append(s('title', {}, binTitle({ ...bin, counts: { [kind]: n }, total: n })));
        g.append(mark);
      }
    }
    svg.append(g);
  });

  // The axis: round ticks, with a date when the span crosses one.
  const axisY = lanes.length * LANE_H;
  const axis = s('g', { class: 'axis' });
  axis.append(s('line', { x1: LABEL_W, x2: LABEL_W + width, y1: axisY + 2, y2: axisY + 2 }));
  const span = domain.to - domain.from;
  for (const t of ticksOf(domain, Math.max(2, Math.floor(width / 110)))) {
    const x = xOf(t);
    const iso = new Date(t).toISOString();
    const label = span > 36e5 * 20 ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 19);
    axis.append(
      s('line', { x1: x, x2: x, y1: axisY + 2, y2: axisY + 7 }),
      // Labels at the edges lean inwards, so that none is cut off.
      s(
        'text',
        {
          x,
          y: axisY + 20,
          'text-anchor': x > LABEL_W + width - 40 ? 'end' : x < LABEL_W + 40 ? 'start' : 'middle',
        },
        label,
      ),
    );
  }
  svg.append(axis);

  if (input.now >= domain.from && input.now <= domain.to) {
    const x = xOf(input.now);
    svg.append(
      s(
        'g',
        { class: 'now', 'data-kind': 'now' },
        s('line', { x1: x, x2: x, y1: 0, y2: axisY + 2 }),
        // Left of the line near the right edge, so that the label stays inside the picture.
        x > LABEL_W + width - 30
          ? s('text', { x: x - 3, y: 11, 'text-anchor': 'end' }, 'now')
          : s('text', { x: x + 3, y: 11 }, 'now'),
        s('title', {}, `now: ${utc(input.now)}`),
      ),
    );
  }
  return svg;
}

/** The legend: each symbol with its words. */
export function legend(service: string): HTMLElement {
  const kinds: (MarkKind | 'purge')[] = ['start', 'end', 'start_failed'];
  if (service !== 'screenshot') kinds.push('slice');
  kinds.push('upload_ok', 'upload_failed', 'purge');
  const words: Record<string, string> = {
    start: 'start',
    end: 'end',
    start_failed: 'failed start or end',
    slice: 'slice (a file closed)',
    upload_ok: service === 'screenshot' ? 'image uploaded (above the line)' : 'upload succeeded (above the line)',
    upload_failed: service === 'screenshot' ? 'image upload failed (below)' : 'upload failed (below the line)',
    purge: 'purge deadline: first failed upload + 24 h',
  };
  const items = kinds.map((kind) => {
    const icon = s('svg', { width: 18, height: 18, viewBox: '-9 -9 18 18', 'aria-hidden': 'true' });
    const g = s('g', { class: `mark k-${kind}` });
    g.append(symbol(kind, 0, kind === 'upload_ok' ? 9 : kind === 'upload_failed' ? -9 : 0));
    icon.append(g);
    return h('li', {}, icon, ` ${words[kind]}`);
  });
  items.push(h('li', {}, h('span', { class: 'now-key', 'aria-hidden': 'true' }, '┆'), ' now'));
  items.push(h('li', {}, `Dense rows draw one bar per ${BIN_PX} px column, its height by the count it holds.`));
  return h('ul', { class: 'legend', 'aria-label': 'Legend of the timeline' }, ...items);
}
