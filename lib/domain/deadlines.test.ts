// The deadlines of the facts of time (docs/contract.md §4), rule by rule.
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import {
  bucketOf,
  defaultTimeSettings as S,
  fileDeadline,
  fileDue,
  nextDeadline,
  resumesStall,
  settleDeadline,
  stallDeadline,
  stallTimeOf,
  taskDue,
  type TaskTime,
} from './deadlines.ts';
import { applyToHeader, type FileRecord, type TaskHeader } from './task.ts';
import { parseCallback } from './callback.ts';

const MIN = 60_000;
const time = (t: Partial<TaskTime> = {}): TaskTime => ({
  changedAt: null,
  stalledSince: null,
  stalledFrom: null,
  settledAt: null,
  lost: 0,
  armed: null,
  ...t,
});

function header(service: 'recording' | 'screenshot', body: Record<string, unknown>): TaskHeader {
  const parsed = parseCallback(service, { appKey: 'a', roomId: 'r', sessionId: 's', code: 200, ...body });
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  return applyToHeader(null, parsed.callback);
}

const failed = (firstFailureAt: number): FileRecord => ({
  fileName: 'f.mp4',
  sizeRank: null,
  size: null,
  upload: { rank: `${firstFailureAt}|k`, ok: false, code: 500, message: null, url: null, at: firstFailureAt },
  firstFailureAt,
  attempts: 1,
});

test('the stall time: 3 intervals, at least 15 minutes, 6 hours when the interval is unknown', () => {
  const rec = (slicesMin: unknown) =>
    header('recording', { type: 1, recordId: 'x', timestamp: 1, config: { slicesMin } });
  const shot = (slicesSec: unknown) =>
    header('screenshot', { type: 1, imageId: 'x', timestamp: 1, config: { slicesSec } });
  expect(stallTimeOf(rec(60), S)).toBe(180 * MIN);
  expect(stallTimeOf(rec('30'), S)).toBe(90 * MIN);
  expect(stallTimeOf(shot(10), S)).toBe(15 * MIN);
  expect(stallTimeOf(shot(600), S)).toBe(30 * MIN);
  expect(stallTimeOf(shot(0), S)).toBe(6 * 60 * MIN);
  expect(stallTimeOf(header('screenshot', { type: 1, imageId: 'x', timestamp: 1 }), S)).toBe(6 * 60 * MIN);
  expect(stallTimeOf(shot(10), { ...S, stallFactor: 200 })).toBe(2000 * 1000);
});

test('only a callback later than the one a stall was measured from, or an end, resumes it', () => {
  const started = header('screenshot', { type: 1, imageId: 'x', timestamp: 1000, config: { slicesSec: 10 } });
  const stalled = time({ stalledSince: 5000 + 15 * MIN, stalledFrom: 5000 });
  expect(resumesStall(started, 5001, stalled, S)).toBe(true);
  expect(resumesStall(started, 5000, stalled, S)).toBe(false);
  expect(resumesStall(started, 4000, stalled, S)).toBe(false);
  expect(resumesStall(started, 9000, time(), S)).toBe(false);
  // A stall stored without the callback it was measured from: its stalledSince − the stall time.
  const unmarked = time({ stalledSince: 5000 + 15 * MIN });
  expect(resumesStall(started, 5000, unmarked, S)).toBe(false);
  expect(resumesStall(started, 5001, unmarked, S)).toBe(true);
  // Measured with 6 hours, then a late start gave 15 minutes: the stored callback still says which are later.
  const measuredUnknown = time({ stalledSince: 5000 + 6 * 60 * MIN, stalledFrom: 5000 });
  expect(resumesStall(started, 5000 + MIN, measuredUnknown, S)).toBe(true);
  expect(resumesStall(started, 5000, measuredUnknown, S)).toBe(false);
  // An end delivered late is older than the uploads that followed it: the task can no longer stall, so it resumes.
  const ended = { ...started, endRank: '1|k', endedAt: 4000 };
  expect(resumesStall(ended, 5000, stalled, S)).toBe(true);
  expect(resumesStall(ended, 5000, time(), S)).toBe(false);
});

test('a task stalls only before its end and without a failed start, once', () => {
  const started = header('screenshot', { type: 1, imageId: 'x', timestamp: 1000, config: { slicesSec: 10 } });
  expect(stallDeadline(started, 1000, time(), S)).toBe(1000 + 15 * MIN);
  expect(stallDeadline(started, 1000, time({ stalledSince: 5 }), S)).toBeNull();
  const ended = { ...started, endRank: '1|k', endedAt: 2000 };
  expect(stallDeadline(ended, 2000, time(), S)).toBeNull();
  expect(stallDeadline({ ...started, startOrEndFailed: true }, 1000, time(), S)).toBeNull();
  const view = { header: started, status: 'capturing' as const, updatedAt: 1000, time: time() };
  expect(taskDue(view, 1000 + 15 * MIN - 1, S).stall).toBeNull();
  expect(taskDue(view, 1000 + 15 * MIN, S).stall).toBe(1000 + 15 * MIN);
});

test('a completed task settles SETTLE_AFTER after its last change, once', () => {
  expect(settleDeadline('completed', 5, time({ changedAt: 1000 }), S)).toBe(1000 + 10 * MIN);
  expect(settleDeadline('completed', 5, time({ changedAt: 1000, settledAt: 7 }), S)).toBeNull();
  expect(settleDeadline('ended', 5, time({ changedAt: 1000 }), S)).toBeNull();
  // A header written before the change time was kept: the latest callback stands for it.
  expect(settleDeadline('completed', 5, time(), S)).toBe(5 + 10 * MIN);
});

test('a failed file is warned about 2 hours before its purgeAt, lost at it, and a success ends both', () => {
  const f = failed(1000);
  const purgeAt = 1000 + FILE_HOLD_MS;
  const none = { warnedAt: null, lostAt: null };
  expect(fileDue(f, none, purgeAt - 2 * 60 * MIN - 1, S)).toEqual({ warn: false, lose: false });
  expect(fileDue(f, none, purgeAt - 2 * 60 * MIN, S)).toEqual({ warn: true, lose: false });
  expect(fileDue(f, none, purgeAt, S)).toEqual({ warn: true, lose: true });
  expect(fileDue(f, { warnedAt: 1, lostAt: null }, purgeAt, S)).toEqual({ warn: false, lose: true });
  expect(fileDeadline(f, none, S)).toBe(purgeAt - 2 * 60 * MIN);
  expect(fileDeadline(f, { warnedAt: 1, lostAt: null }, S)).toBe(purgeAt);
  expect(fileDeadline(f, { warnedAt: 1, lostAt: purgeAt }, S)).toBeNull();
  const uploaded = { ...f, upload: { ...f.upload!, ok: true, at: 2000 } };
  expect(fileDue(uploaded, none, purgeAt, S)).toEqual({ warn: false, lose: false });
});

test('the next deadline is the earliest left, and buckets are 5 minutes', () => {
  const started = header('screenshot', { type: 1, imageId: 'x', timestamp: 1000, config: { slicesSec: 10 } });
  const view = { header: started, status: 'capturing' as const, updatedAt: 1000, time: time() };
  const f = { file: failed(1000), marks: { warnedAt: null, lostAt: null } };
  expect(nextDeadline(view, [f], S)).toBe(1000 + 15 * MIN);
  expect(nextDeadline({ ...view, time: time({ stalledSince: 1 }) }, [f], S)).toBe(1000 + FILE_HOLD_MS - 120 * MIN);
  expect(nextDeadline({ ...view, time: time({ stalledSince: 1 }) }, [], S)).toBeNull();
  expect(bucketOf(Date.UTC(2026, 0, 1, 10, 7, 30))).toBe(Date.UTC(2026, 0, 1, 10, 5));
});
