// The moment a task completed, folded file by file (./completion-time.ts), against the rule as first written
// (test/support/whole-task-recount.ts): every moment from the end on tried in order, each against every file.
// Equal on random files, in one pass keeping every span and in passes keeping a few.
import fc from 'fast-check';
import { CompletionSweep } from './completion-time.ts';
import { completedAt } from './task-events.ts';
import type { FileRecord, TaskHeader } from './task.ts';
import { completedAtByEveryMoment as byEveryMoment } from '../../test/support/whole-task-recount.ts';

/** Pass after pass over the files, keeping at most `keep` spans ahead: what a recount does a page at a time. */
function byPasses(end: number, files: readonly FileRecord[], keep: number): { at: number; passes: number } {
  let from = end;
  for (let passes = 1; ; passes++) {
    const sweep = new CompletionSweep(end, { from, keep });
    for (const f of files) sweep.add(f);
    const pass = sweep.moment();
    if ('at' in pass) return { at: pass.at, passes };
    expect(pass.from).toBeGreaterThan(from);
    from = pass.from;
  }
}

const time = fc.integer({ min: 0, max: 60 });
const rank = (t: number, key: string) => `${String(t).padStart(16, '0')}|${key}`;
const file = (i: number) =>
  fc
    .record({
      size: fc.option(time),
      upload: fc.option(fc.record({ at: time, ok: fc.boolean() })),
      failure: fc.option(time),
    })
    .map(
      ({ size, upload, failure }): FileRecord => ({
        fileName: `f-${i}`,
        sizeRank: size === null ? null : rank(size, `k${i}`),
        size: null,
        upload: upload && {
          rank: rank(upload.at, `u${i}`),
          ok: upload.ok,
          code: 200,
          message: null,
          url: null,
          at: upload.at,
        },
        firstFailureAt: failure,
        attempts: 0,
      }),
    );
const files = fc.integer({ min: 0, max: 30 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => file(i))));

test('folded file by file, in passes that keep a few spans, the moment is the one every moment tried gives', () => {
  fc.assert(
    fc.property(time, files, fc.integer({ min: 1, max: 4 }), (end, fs, keep) => {
      const expected = byEveryMoment(end, fs);
      expect(byPasses(end, fs, Number.POSITIVE_INFINITY)).toEqual({ at: expected, passes: 1 });
      const paged = byPasses(end, fs, keep);
      expect(paged.at).toBe(expected);
      // Each pass after the first takes in at least `keep` spans more.
      expect(paged.passes).toBeLessThanOrEqual(1 + Math.ceil(fs.length / keep));
    }),
    { numRuns: 2000 },
  );
});

test('completedAt gives the same moment, from the end or, without one, from the identity', () => {
  const header = (endedAt: number | null) => ({ endedAt, identAt: 5 }) as TaskHeader;
  fc.assert(
    fc.property(fc.option(time), files, (endedAt, fs) => {
      const parts = { header: header(endedAt), files: fs, tally: { lastError: null, updatedAt: null }, eventCount: 0 };
      expect(completedAt(parts)).toBe(byEveryMoment(endedAt ?? 5, fs));
    }),
    { numRuns: 500 },
  );
});

test('a chain of files each named before the last one is uploaded: its last upload, in passes of a few spans', () => {
  // File i is named at 10i and uploaded at 10i + 15: every moment up to the last upload is covered.
  const chain = Array.from({ length: 12 }, (_, i) => ({
    fileName: `c-${i}`,
    sizeRank: rank(10 * i, `k${i}`),
    size: null,
    upload: { rank: rank(10 * i + 15, `u${i}`), ok: true, code: 200, message: null, url: null, at: 10 * i + 15 },
    firstFailureAt: null,
    attempts: 0,
  }));
  expect(byEveryMoment(0, chain)).toBe(125);
  // Each pass takes in the spans covering where it starts and the 3 earliest after.
  expect(byPasses(0, chain, 3)).toEqual({ at: 125, passes: 3 });
  expect(byPasses(0, [...chain].reverse(), 3)).toEqual({ at: 125, passes: 3 });
});
