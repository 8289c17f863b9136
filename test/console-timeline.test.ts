// The console's timeline model (console/src/timeline-model.ts), without a browser: which mark each
// callback makes, and the binning that keeps a task of 100,000 images to a few hundred drawn columns.
import { binMarks, domainOf, type Mark, markOf, ticksOf } from '../console/src/timeline-model.ts';
import { screenshotUpload, recordingUpload } from '../lib/platform/bodies.ts';
import { SCREENSHOT_UPLOAD_FAILURES } from '../lib/platform/failures.ts';

const shot = { appKey: 'a', sessionId: 's', roomId: 'r', imageId: 'img-1', extra: '' };
const rec = { appKey: 'a', recordId: 'rec-1', roomId: 'r', sessionId: 's', userId: '', mode: 3, extra: '' };

test("an upload's outcome: a screenshot's fileState decides over its code, a recording's code decides", () => {
  const ok = screenshotUpload(shot, 1000, 'a.jpg', null);
  const failed = screenshotUpload(shot, 2000, 'b.jpg', SCREENSHOT_UPLOAD_FAILURES[0]!);
  expect(markOf({ type: 4, timestamp: 1000, body: ok })).toEqual({ at: 1000, kind: 'upload_ok', file: 'a.jpg' });
  expect(markOf({ type: 4, timestamp: 2000, body: { ...failed, code: 200 } })?.kind).toBe('upload_failed');
  const recFailed = recordingUpload(rec, 3000, { code: 500, message: 'upload to storage failed' }, 'c.mp4');
  expect(markOf({ type: 4, timestamp: 3000, body: recFailed })?.kind).toBe('upload_failed');
  expect(markOf({ type: 4, timestamp: 3000, body: { ...recFailed, code: '200' } })?.kind).toBe('upload_ok');
  expect(markOf({ type: 1, timestamp: 1, body: { code: 403 } })?.kind).toBe('start_failed');
  expect(markOf({ type: 2, timestamp: 1, body: 'not json' })).toEqual({ at: 1, kind: 'slice', file: null });
  expect(markOf({ type: 9, timestamp: 1, body: {} })).toBeNull();
});

test('100,000 images a second apart with a gap bin into at most one bin per column, and every mark is counted', () => {
  const marks: Mark[] = [];
  const start = Date.UTC(2026, 0, 1);
  for (let i = 0; i < 100_000; i++) {
    // A 3-hour gap after the first half.
    const at = start + i * 1000 + (i >= 50_000 ? 3 * 3600_000 : 0);
    marks.push({ at, kind: i % 1000 === 0 ? 'upload_failed' : 'upload_ok', file: `f${i}.jpg` });
  }
  const domain = domainOf([start, marks[marks.length - 1]!.at], null);
  const bins = binMarks(marks, domain, 900, 3);
  expect(bins.length).toBeLessThanOrEqual(300);
  expect(bins.reduce((n, b) => n + b.total, 0)).toBe(100_000);
  expect(bins.reduce((n, b) => n + (b.counts.upload_failed ?? 0), 0)).toBe(100);
  // The gap shows: a run of empty columns between the two halves (3 h of some 31 h: about 87 px).
  const xs = bins.map((b) => b.x);
  const widest = Math.max(...xs.slice(1).map((x, i) => x - xs[i]!));
  expect(widest).toBeGreaterThan(60);
  // Bins are in order and say which times they hold.
  for (const b of bins) expect(b.first).toBeLessThanOrEqual(b.last);
  expect(xs).toEqual([...xs].sort((a, b) => a - b));
});

test('marks outside the domain are clamped to its edges, and a lone mark keeps its file name', () => {
  const bins = binMarks(
    [
      { at: -50, kind: 'start', file: null },
      { at: 500, kind: 'slice', file: 'x.mp4' },
      { at: 5000, kind: 'end', file: null },
    ],
    { from: 0, to: 1000 },
    100,
    2,
  );
  expect(bins.map((b) => [b.x, b.total, b.file])).toEqual([
    [0, 1, null],
    [50, 1, 'x.mp4'],
    [98, 1, null],
  ]);
});

test('the domain takes in now only when asked, and a single instant is widened to a second', () => {
  expect(domainOf([], null)).toEqual({ from: 0, to: 1000 });
  expect(domainOf([5000], null)).toEqual({ from: 4500, to: 5500 });
  const d = domainOf([0, 100_000], 200_000);
  expect(d.from).toBeLessThan(0);
  expect(d.to).toBeGreaterThan(200_000);
  expect(ticksOf({ from: 0, to: 3600_000 }, 4)).toEqual([0, 900_000, 1_800_000, 2_700_000, 3_600_000]);
});
