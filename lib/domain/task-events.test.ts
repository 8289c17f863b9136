// Task events in memory: the pure MUST/MAY function against a brute-force oracle over every subset of a
// task's callbacks, and the events a store-like fold publishes (eventsOfWrite after each write, with
// redeliveries after lost publishes) against MUST ⊆ published ⊆ MAY.
import fc from 'fast-check';
import type { Callback } from './callback.ts';
import { checkPublished, expectedTaskEvents } from './expected-events.ts';
import {
  eventsOfWrite,
  taskEventId,
  TASK_EVENT_TYPES,
  type TaskEvent,
  type TaskEventType,
  writeMayPublish,
} from './task-events.ts';
import type { StoredWrite } from './task-store.ts';
import type { TaskSummary } from './task-summary.ts';
import {
  applyToFile,
  applyToHeader,
  emptyTally,
  fileNameOf,
  tallyCallback,
  type FileRecord,
  type TaskHeader,
} from './task.ts';
import { reduceTask } from './reduce-task.ts';
import { toSummary, type TaskParts } from './task-parts.ts';
import { anyLifecycle, callbacksOf, mustParse, withDuplicatesShuffled } from '../../test/support/lifecycles.ts';

// ---------------------------------------------------------------------------------------------------
// Oracle: the events true on a state, read off reduceTask's view of it, for every subset.

function trueOn(callbacks: readonly Callback[]): Set<string> {
  const task = reduceTask(callbacks)!;
  const ids = new Set<string>();
  const add = (type: TaskEventType, fileName: string | null = null) => ids.add(taskEventId(task, type, fileName));
  if (callbacks.some((c) => c.type === 1 && c.code === 200)) add('task.started');
  if (callbacks.some((c) => c.type === 1 && c.code !== 200)) add('task.start_failed');
  if (callbacks.some((c) => c.type === 3)) add('task.ended');
  if (callbacks.some((c) => (c.type === 1 || c.type === 3) && c.code !== 200)) add('task.failed');
  if (task.status === 'completed') add('task.completed');
  for (const f of task.files) {
    if (f.upload === 'uploaded') add('file.uploaded', f.fileName);
    if (f.upload === 'failed') add('file.upload_failed', f.fileName);
    const failedOnce = callbacks.some((c) => c.upload?.fileName === f.fileName && !c.upload.ok);
    if (f.upload === 'uploaded' && failedOnce) add('file.upload_recovered', f.fileName);
  }
  return ids;
}

function bruteForce(callbacks: readonly Callback[]): { must: Set<string>; may: Set<string> } {
  const distinct = [...new Map(callbacks.map((c) => [c.key, c])).values()];
  const may = new Set<string>();
  for (let mask = 1; mask < 1 << distinct.length; mask++) {
    for (const id of trueOn(distinct.filter((_, i) => mask & (1 << i)))) may.add(id);
  }
  return { must: trueOn(distinct), may };
}

const ids = (refs: readonly { id: string }[]) => new Set(refs.map((r) => r.id));

test('MUST and MAY equal the brute force over every subset of the callbacks', () => {
  fc.assert(
    fc.property(
      anyLifecycle().filter((l) => new Set(callbacksOf(l).map((c) => c.key)).size <= 10),
      (l) => {
        const callbacks = callbacksOf(l);
        const expected = expectedTaskEvents(callbacks);
        const oracle = bruteForce(callbacks);
        expect(ids(expected.must)).toEqual(oracle.must);
        expect(ids(expected.may)).toEqual(oracle.may);
      },
    ),
    { numRuns: 150 },
  );
});

// ---------------------------------------------------------------------------------------------------
// A store in memory: the same joins the DynamoDB store writes, one callback at a time.

class MemoryTask {
  header: TaskHeader | null = null;
  tally = emptyTally();
  files = new Map<string, FileRecord>();
  applied = new Set<string>();

  parts(): TaskParts {
    return { header: this.header!, files: [...this.files.values()], tally: this.tally, eventCount: this.applied.size };
  }

  summary(): TaskSummary {
    return toSummary(this.parts());
  }

  /** What the store reports to the worker for one delivery. */
  deliver(cb: Callback): StoredWrite | null {
    const name = fileNameOf(cb);
    if (this.applied.has(cb.key)) {
      const after = name ? this.files.get(name)! : null;
      return {
        task: this.summary(),
        statusBefore: null,
        file: after ? { before: null, after } : null,
        parts: this.parts(),
      };
    }
    const statusBefore = this.header ? this.summary().status : null;
    this.applied.add(cb.key);
    let file: StoredWrite['file'] = null;
    if (name) {
      const before = this.files.get(name) ?? null;
      const after = applyToFile(before, cb);
      after.attempts = (before?.attempts ?? 0) + (cb.upload ? 1 : 0);
      this.files.set(name, after);
      file = { before, after };
    }
    this.header = applyToHeader(this.header, cb);
    this.tally = tallyCallback(this.tally, cb);
    return { task: this.summary(), statusBefore, file, parts: this.parts() };
  }
}

/**
 * Delivers callbacks in the given order; a delivery whose publish is "lost" (a crash or SNS refusing it
 * after the write) is delivered again later, as SQS does with a failed record.
 */
function publishAll(deliveries: readonly Callback[], lost: (i: number) => boolean): TaskEvent[] {
  const tasks = new Map<string, MemoryTask>();
  const published: TaskEvent[] = [];
  const queue = deliveries.map((cb, i) => ({ cb, lose: lost(i) }));
  while (queue.length) {
    const { cb, lose } = queue.shift()!;
    const task = tasks.get(cb.id) ?? new MemoryTask();
    tasks.set(cb.id, task);
    const applied = !task.applied.has(cb.key);
    const stored = task.deliver(cb);
    const events = eventsOfWrite(cb, stored);
    // What the worker skips reading the task for publishes nothing indeed.
    if (!writeMayPublish(cb, applied, stored?.file ?? null)) expect(events).toEqual([]);
    if (lose) queue.push({ cb, lose: false });
    else published.push(...events);
  }
  return published;
}

test('published distinct events lie between MUST and MAY, whatever the order, duplicates and lost publishes', () => {
  fc.assert(
    fc.property(
      anyLifecycle().chain((l) =>
        fc.tuple(
          fc.constant(l),
          withDuplicatesShuffled(l.bodies, { maxExtra: 4 }),
          fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        ),
      ),
      ([l, bodies, lose]) => {
        const deliveries = bodies.map((b) => mustParse(l.service, b));
        const expected = expectedTaskEvents(callbacksOf(l));
        const published = publishAll(deliveries, (i) => lose[i % lose.length]!);
        const check = checkPublished(expected, published);
        expect({ missing: check.missing, unexpected: check.unexpected }).toEqual({ missing: [], unexpected: [] });
        if (ids(expected.must).size === ids(expected.may).size) {
          expect(new Set(published.map((e) => e.id))).toEqual(ids(expected.must));
        }
      },
    ),
    { numRuns: 300 },
  );
});

// ---------------------------------------------------------------------------------------------------
// Examples, one per event type, with what each body carries.

const T0 = 1_763_800_000_000;
const rec = (type: number, extra: Record<string, unknown>) =>
  mustParse('recording', {
    type,
    appKey: 'app-1',
    recordId: 'rec-1',
    roomId: 'room-1',
    sessionId: 'sess-1',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    ...extra,
  });
const start = rec(1, { timestamp: T0, config: {}, output: { fileName: 'f.mp4' } });
const end = rec(3, { timestamp: T0 + 60_000, output: { fileName: 'f.mp4', fileSize: 10 } });
const failedUpload = rec(4, {
  timestamp: T0 + 61_000,
  code: 503,
  errorMessage: 'storage unavailable',
  output: { fileName: 'f.mp4', fileUrl: '' },
});
const upload = rec(4, { timestamp: T0 + 71_000, output: { fileName: 'f.mp4', fileUrl: 'https://s/f.mp4' } });

test('in platform order, each transition is published once, with the task and the file', () => {
  const published = publishAll([start, end, failedUpload, upload], () => false);
  expect(published.map((e) => e.type)).toEqual([
    'task.started',
    'task.ended',
    'file.upload_failed',
    'file.uploaded',
    'file.upload_recovered',
    'task.completed',
  ]);
  const failed = published.find((e) => e.type === 'file.upload_failed')!;
  expect(failed).toEqual({
    version: 1,
    id: taskEventId({ appKey: 'app-1', service: 'recording', id: 'rec-1' }, 'file.upload_failed', 'f.mp4'),
    type: 'file.upload_failed',
    occurredAt: T0 + 61_000,
    sequence: 0,
    task: {
      service: 'recording',
      id: 'rec-1',
      appKey: 'app-1',
      roomId: 'room-1',
      sessionId: 'sess-1',
      userId: null,
      status: 'upload_failed',
      files: { total: 1, pending: 0, uploaded: 0, failed: 1, lost: 0 },
    },
    file: {
      fileName: 'f.mp4',
      size: 10,
      url: null,
      upload: 'failed',
      code: 503,
      message: 'storage unavailable',
      attempts: 1,
      purgeAt: T0 + 61_000 + 24 * 3600_000,
    },
  });
  const completed = published.find((e) => e.type === 'task.completed')!;
  expect(completed.task).toMatchObject({ status: 'completed', files: { total: 1, uploaded: 1 } });
  expect(completed.file).toBeUndefined();
});

test('a failure that arrives after the success it precedes publishes no failure, only the recovery', () => {
  const published = publishAll([start, upload, end, failedUpload], () => false);
  expect(published.map((e) => e.type)).toEqual([
    'task.started',
    'file.uploaded',
    'task.ended',
    'task.completed',
    'file.upload_recovered',
  ]);
});

test('a duplicate publishes only ids already published', () => {
  const once = publishAll([start, end, upload], () => false);
  const twice = publishAll([start, end, upload, upload, end, start], () => false);
  expect(new Set(twice.map((e) => e.id))).toEqual(new Set(once.map((e) => e.id)));
});

test('a failed start and a failed end: start_failed, failed and ended; the end republishes the start failure', () => {
  const badStart = rec(1, { timestamp: T0, code: 1004, errorMessage: 'room not found', config: {}, output: {} });
  const badEnd = rec(3, { timestamp: T0 + 5, code: 500, errorMessage: 'internal error', output: { fileName: 'g' } });
  const published = publishAll([badStart, badEnd], () => false);
  expect(published.map((e) => [e.type, e.occurredAt, e.error?.code])).toEqual([
    ['task.start_failed', T0, 1004],
    ['task.failed', T0, 1004],
    ['task.ended', T0 + 5, undefined],
    ['task.failed', T0, 1004],
  ]);
  expect(new Set(published.filter((e) => e.type === 'task.failed').map((e) => e.id)).size).toBe(1);
});

// ---------------------------------------------------------------------------------------------------
// A republished event carries the time of the callback that made it true, not the duplicate's.

/** The distinct (time, error) each id was published with. */
function timesById(published: readonly TaskEvent[]): Map<string, Set<string>> {
  const byId = new Map<string, Set<string>>();
  for (const e of published) {
    const seen = byId.get(e.id) ?? new Set<string>();
    seen.add(JSON.stringify([e.occurredAt, e.error ?? null]));
    byId.set(e.id, seen);
  }
  return byId;
}

const republishedAtAnotherTime = (published: readonly TaskEvent[]) =>
  [...timesById(published)].filter(([, times]) => times.size > 1).map(([id, times]) => ({ id, times: [...times] }));

test('a start delivered again republishes task.completed with the time of its completion, not its own', () => {
  const slice = rec(2, { timestamp: T0 + 30_000, output: { fileName: 'a.mp4', fileSize: 5 } });
  const sliceUpload = rec(4, { timestamp: T0 + 40_000, output: { fileName: 'a.mp4', fileUrl: 'https://s/a.mp4' } });
  const published = publishAll([start, slice, sliceUpload, end, upload, start], () => false);
  const completions = published.filter((e) => e.type === 'task.completed');
  expect(completions).toHaveLength(2);
  expect(completions[1]).toEqual(completions[0]);
  expect(completions[0]!.occurredAt).toBe(upload.timestamp);
  expect(published.filter((e) => e.type === 'task.started').map((e) => e.occurredAt)).toEqual([T0, T0]);
});

test('a failed upload delivered again after a later failure republishes file.upload_failed at the first one', () => {
  const laterFailure = rec(4, { ...failedUpload.body, timestamp: T0 + 66_000 });
  const published = publishAll([start, end, failedUpload, laterFailure, failedUpload], () => false);
  const failures = published.filter((e) => e.type === 'file.upload_failed');
  expect(failures.map((e) => e.occurredAt)).toEqual([T0 + 61_000, T0 + 61_000]);
});

test('a screenshot image uploaded after the end does not move the time the task completed', () => {
  const shot = (type: number, timestamp: number, extra: Record<string, unknown> = {}) =>
    mustParse('screenshot', {
      type,
      timestamp,
      appKey: 'app-1',
      imageId: 'img-1',
      roomId: 'room-1',
      sessionId: 'sess-1',
      extra: '',
      code: 200,
      errorMessage: 'success',
      ...extra,
    });
  const image = (name: string, timestamp: number) =>
    shot(4, timestamp, { output: { fileName: name, fileUrl: `https://s/${name}`, fileState: '10000' } });
  const shotStart = shot(1, T0, { config: {} });
  const shotEnd = shot(3, T0 + 20_000, { config: {} });
  const late = image('2.jpg', T0 + 30_000);
  const published = publishAll([shotStart, image('1.jpg', T0 + 10_000), shotEnd, late, late], () => false);
  const completions = published.filter((e) => e.type === 'task.completed');
  expect(completions.map((e) => e.occurredAt)).toEqual([T0 + 20_000, T0 + 20_000]);
});

test('in platform order, with duplicates and lost publishes anywhere: every publication of an id has one time', () => {
  // Callbacks of one millisecond have no platform order; an end sent in the same millisecond as an upload comes
  // after it here (taken first, it completes the task until that upload, delivered next at the same time, undoes
  // it: a later completion at another time, as docs/events.md says of a callback that comes late).
  const isEnd = (c: Callback) => (c.type === 3 ? 1 : 0);
  const byRank = (a: Callback, b: Callback) =>
    a.timestamp - b.timestamp || isEnd(a) - isEnd(b) || (a.key < b.key ? -1 : 1);
  fc.assert(
    fc.property(
      anyLifecycle().chain((l) =>
        fc.tuple(
          fc.constant(l),
          fc.array(fc.nat(), { maxLength: 6 }),
          fc.array(fc.boolean(), { minLength: 64, maxLength: 64 }),
        ),
      ),
      ([l, again, lose]) => {
        const inOrder = callbacksOf(l).sort(byRank);
        // Each duplicate comes at some later point: after its first delivery.
        const deliveries = [...inOrder];
        for (const n of again) {
          const first = deliveries.indexOf(inOrder[n % inOrder.length]!);
          deliveries.splice(first + 1 + (n % (deliveries.length - first)), 0, deliveries[first]!);
        }
        expect(republishedAtAnotherTime(publishAll(deliveries, (i) => lose[i % lose.length]!))).toEqual([]);
      },
    ),
    { numRuns: 300 },
  );
});

test('any order: once every callback is in, delivering them all again republishes each id at one time', () => {
  fc.assert(
    fc.property(
      anyLifecycle().chain((l) => fc.tuple(fc.constant(l), withDuplicatesShuffled(l.bodies, { maxExtra: 4 }))),
      ([l, bodies]) => {
        const deliveries = bodies.map((b) => mustParse(l.service, b));
        const published = publishAll([...deliveries, ...deliveries], () => false);
        expect(republishedAtAnotherTime(published.slice(publishAll(deliveries, () => false).length))).toEqual([]);
      },
    ),
    { numRuns: 300 },
  );
});

test('ids: one per type, task and file; appKey and service are part of it', () => {
  const all = TASK_EVENT_TYPES.map((t) => taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, t, null));
  expect(new Set(all).size).toBe(TASK_EVENT_TYPES.length);
  expect(taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, 'file.uploaded', 'f1')).not.toBe(
    taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, 'file.uploaded', 'f2'),
  );
  expect(taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, 'task.started', null)).not.toBe(
    taskEventId({ appKey: 'b', service: 'recording', id: 'x' }, 'task.started', null),
  );
  expect(taskEventId({ appKey: 'a', service: 'screenshot', id: 'x' }, 'task.started', null)).not.toBe(
    taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, 'task.started', null),
  );
  expect(taskEventId({ appKey: 'a', service: 'recording', id: 'x' }, 'task.started', null)).toMatch(/^[0-9a-f]{32}$/);
});

test(
  'checkPublished: duplicates allowed, a missing MUST and an id outside MAY are reported, other tasks ' + 'ignored',
  () => {
    const expected = expectedTaskEvents([start, end, upload]);
    const published = publishAll([start, end, upload, upload], () => false);
    expect(checkPublished(expected, published)).toMatchObject({ ok: true, missing: [], unexpected: [] });
    const withoutStarted = published.filter((e) => e.type !== 'task.started');
    expect(checkPublished(expected, withoutStarted).missing.map((r) => r.type)).toEqual(['task.started']);
    const stray = { ...published[0]!, id: 'f'.repeat(32), type: 'file.upload_failed' as const };
    expect(checkPublished(expected, [...published, stray]).unexpected).toEqual([
      { id: stray.id, type: 'file.upload_failed', taskId: 'rec-1' },
    ]);
    const otherTask = { ...stray, task: { ...stray.task, id: 'rec-2' } };
    expect(checkPublished(expected, [...published, otherTask]).ok).toBe(true);
  },
);
