// The events a set of callbacks must and may publish (docs/events.md, Guarantees), and a check of what was
// published against them: the oracle the worker's tests, the chaos runs and `callbacks verify` hold it to.
import type { Callback } from './callback.ts';
import { reduceTask } from './reduce-task.ts';
import { compareUtf8, fileNameOf } from './task.ts';
import { TASK_EVENT_TYPES, taskEventId, witnessedTypes, type TaskEventRef, type TaskEventType } from './task-events.ts';

export interface ExpectedEvents {
  /** The tasks judged (ids): an event of any other task is not this expectation's business. */
  tasks: string[];
  /** True on the final state: published whatever the order and batching of the callbacks. */
  must: TaskEventRef[];
  /** True on the state of some subset of the callbacks: may be published (a superset of `must`). */
  may: TaskEventRef[];
}

/** The events of one task's callbacks (distinct by event key; all of one task). */
export function expectedTaskEvents(callbacks: readonly Callback[]): ExpectedEvents {
  const distinct = [...new Map(callbacks.map((cb) => [cb.key, cb])).values()];
  const final = reduceTask(distinct);
  if (!final) return { tasks: [], must: [], may: [] };
  const ref = (type: TaskEventType, fileName: string | null = null): TaskEventRef => ({
    id: taskEventId(final, type, fileName),
    type,
    service: final.service,
    taskId: final.id,
    fileName,
  });
  const must: TaskEventRef[] = [];
  const may: TaskEventRef[] = [];
  const both = (r: TaskEventRef) => {
    must.push(r);
    may.push(r);
  };

  const witnessed = new Set(distinct.flatMap(witnessedTypes));
  for (const type of TASK_EVENT_TYPES) if (witnessed.has(type)) both(ref(type));

  // Uploads by file name, once: a task of 100,000 images would take each name's through all of its callbacks.
  const uploadsOf = new Map<string, Callback[]>();
  for (const c of distinct) {
    if (!c.upload) continue;
    const list = uploadsOf.get(c.upload.fileName);
    if (list) list.push(c);
    else uploadsOf.set(c.upload.fileName, [c]);
  }
  const okUploads = (name: string) => (uploadsOf.get(name) ?? []).filter((c) => c.upload!.ok);
  // Completed on some subset: an end with code 200 and, for the file it names, one successful upload
  // (that upload alone makes the file uploaded; the subset holds no other file).
  const completedSomewhere = distinct.some(
    (e) => e.type === 3 && e.code === 200 && (e.file === null || okUploads(e.file.fileName).length > 0),
  );
  if (final.status === 'completed') must.push(ref('task.completed'));
  if (completedSomewhere || final.status === 'completed') may.push(ref('task.completed'));

  const filesByName = new Map(final.files.map((f) => [f.fileName, f]));
  const names = [...new Set(distinct.map(fileNameOf).filter((n): n is string => n !== null))].sort(compareUtf8);
  for (const name of names) {
    const view = filesByName.get(name)!;
    const successes = okUploads(name);
    const failures = (uploadsOf.get(name) ?? []).filter((c) => !c.upload!.ok);
    const finalOk = view.upload === 'uploaded';
    if (finalOk) must.push(ref('file.uploaded', name));
    if (successes.length) may.push(ref('file.uploaded', name));
    if (view.upload === 'failed') must.push(ref('file.upload_failed', name));
    if (failures.length) may.push(ref('file.upload_failed', name));
    if (finalOk && failures.length) must.push(ref('file.upload_recovered', name));
    // A success beats a failure with an earlier or equal timestamp: the two alone make a recovered file.
    if (successes.some((s) => failures.some((f) => f.timestamp <= s.timestamp)))
      may.push(ref('file.upload_recovered', name));
  }
  return { tasks: [final.id], must, may };
}

/** The events of callbacks of any number of tasks, in the order of the tasks' ids. */
export function expectedEvents(callbacks: readonly Callback[]): ExpectedEvents {
  const byTask = new Map<string, Callback[]>();
  for (const cb of callbacks) {
    const k = `${cb.service}:${cb.id}`;
    const list = byTask.get(k);
    if (list) list.push(cb);
    else byTask.set(k, [cb]);
  }
  const all: ExpectedEvents = { tasks: [], must: [], may: [] };
  const keys = [...byTask.keys()].sort(compareUtf8);
  for (const k of keys) {
    const e = expectedTaskEvents(byTask.get(k)!);
    all.tasks.push(...e.tasks);
    all.must.push(...e.must);
    all.may.push(...e.may);
  }
  return all;
}

// ---------------------------------------------------------------------------------------------------
// Checking what was published

export interface EventCheck {
  ok: boolean;
  /** Expected (MUST) events never published. */
  missing: TaskEventRef[];
  /** Distinct published ids outside MAY. */
  unexpected: { id: string; type: string; taskId: string | null }[];
  /** Distinct ids published, and messages received in all (duplicates included). */
  distinct: number;
  received: number;
}

/**
 * Compares the published events with the expectation: every MUST id published at least once, no id
 * outside MAY. Duplicates (the same id more than once) are allowed. Only tasks named by the expectation
 * are judged: events of other tasks on the same topic are left alone.
 */
export function checkPublished(
  expected: ExpectedEvents,
  published: readonly { id: string; type: string; task?: { id?: string } }[],
): EventCheck {
  const taskIds = new Set(expected.tasks);
  const mayIds = new Set(expected.may.map((r) => r.id));
  const seen = new Map<string, { id: string; type: string; taskId: string | null }>();
  let received = 0;
  for (const e of published) {
    const taskId = e.task?.id ?? null;
    if (taskId === null || !taskIds.has(taskId)) continue;
    received += 1;
    if (!seen.has(e.id)) seen.set(e.id, { id: e.id, type: e.type, taskId });
  }
  const missing = expected.must.filter((r) => !seen.has(r.id));
  const unexpected = [...seen.values()].filter((e) => !mayIds.has(e.id));
  return { ok: missing.length === 0 && unexpected.length === 0, missing, unexpected, distinct: seen.size, received };
}
