// The oracle of the state rules (docs/contract.md §4): a task computed directly from the set of its
// distinct callbacks, rule by rule, without the incremental machinery of task.ts that the store runs.
// Every other way of building a task is tested against this one, and `callbacks emulate` writes what a
// receiver should hold after a run with it.
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import { modeName } from '../platform/modes.ts';
import type { Callback } from './callback.ts';
import { compareUtf8, type FileUpload, type FileView, fileNameOf, type Task, type TaskStatus } from './task.ts';
import { compositeKey } from '../text.ts';

/** The task its callbacks describe (duplicates count once, order does not matter); null for none. */
export function reduceTask(callbacks: readonly Callback[]): Task | null {
  const distinct = new Map<string, Callback>();
  for (const cb of callbacks) distinct.set(cb.key, cb);
  const events = [...distinct.values()];
  if (events.length === 0) return null;
  const first = events[0]!;
  const byRank = (a: Callback, b: Callback) =>
    a.timestamp - b.timestamp || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  const sorted = [...events].sort(byRank);
  const starts = sorted.filter((e) => e.type === 1);
  const ends = sorted.filter((e) => e.type === 3);
  const identity = starts[0] ?? sorted[0]!;
  const withConfig = sorted.filter((e) => e.config !== null);
  const configSource = withConfig.find((e) => e.type === 1) ?? withConfig[0] ?? null;
  const errors = sorted.filter((e) => e.code !== 200);
  const lastError = errors[errors.length - 1] ?? null;

  const fileNames = new Set<string>();
  for (const e of events) {
    const name = fileNameOf(e);
    if (name) fileNames.add(name);
  }
  // Each file's callbacks in rank order, gathered once (a filter of all of them per file is quadratic: hours
  // for a task of 100,000 images).
  const sizesOf = new Map<string, Callback[]>();
  const uploadsOf = new Map<string, Callback[]>();
  const add = (to: Map<string, Callback[]>, name: string, e: Callback) => {
    const list = to.get(name);
    if (list) list.push(e);
    else to.set(name, [e]);
  };
  for (const e of sorted) {
    if (e.file) add(sizesOf, e.file.fileName, e);
    if (e.upload) add(uploadsOf, e.upload.fileName, e);
  }
  const files: FileView[] = [...fileNames].sort(compareUtf8).map((fileName) => {
    const sizes = sizesOf.get(fileName) ?? [];
    const uploads = uploadsOf.get(fileName) ?? [];
    const latestTs = uploads.length ? Math.max(...uploads.map((u) => u.timestamp)) : null;
    const atLatest = uploads.filter((u) => u.timestamp === latestTs);
    const winner = atLatest.filter((u) => u.upload!.ok).at(-1) ?? atLatest.at(-1) ?? null;
    const failures = uploads.filter((u) => !u.upload!.ok);
    const upload: FileUpload = winner === null ? 'pending' : winner.upload!.ok ? 'uploaded' : 'failed';
    return {
      fileName,
      size: sizes.length ? sizes[sizes.length - 1]!.file!.size : null,
      url: winner?.upload?.url ?? null,
      upload,
      code: winner?.upload?.code ?? null,
      message: winner?.upload?.message ?? null,
      attempts: uploads.length,
      purgeAt: upload === 'failed' ? failures[0]!.timestamp + FILE_HOLD_MS : null,
    };
  });

  const anyFailed = files.some((f) => f.upload === 'failed');
  const anyPending = files.some((f) => f.upload === 'pending');
  let status: TaskStatus;
  if (anyFailed) status = 'upload_failed';
  else if (ends.some((e) => e.code === 200) && !anyPending) status = 'completed';
  else if ([...starts, ...ends].some((e) => e.code !== 200)) status = 'failed';
  else if (ends.length) status = 'ended';
  else status = first.service === 'recording' ? 'recording' : 'capturing';

  const task: Task = {
    service: first.service,
    id: first.id,
    appKey: identity.appKey,
    roomId: identity.roomId,
    sessionId: identity.sessionId,
    userId: identity.userId,
    status,
    startedAt: starts[0]?.timestamp ?? null,
    endedAt: ends[0]?.timestamp ?? null,
    updatedAt: sorted[sorted.length - 1]!.timestamp,
    extra: identity.extra,
    config: configSource?.config ?? null,
    counts: {
      total: files.length,
      pending: files.filter((f) => f.upload === 'pending').length,
      uploaded: files.filter((f) => f.upload === 'uploaded').length,
      failed: files.filter((f) => f.upload === 'failed').length,
      // A lost file needs the receiver's clock, as the other facts of time do.
      lost: 0,
    },
    files,
    lastError: lastError
      ? { type: lastError.type, code: lastError.code, message: lastError.message, at: lastError.timestamp }
      : null,
    eventCount: events.length,
    // Facts of time depend on the receiver's clock, not on the callbacks alone (lib/domain/deadlines.ts).
    stalledSince: null,
    settledAt: null,
  };
  if (first.service === 'recording') {
    task.mode = identity.mode;
    task.modeName = modeName(identity.mode);
    task.startFileName = starts[0]?.startFileName ?? null;
  }
  return task;
}

/**
 * Groups callbacks by task and reduces each: what a receiver should hold after a run. A task belongs to
 * one appKey: callbacks of another appKey with the same id make a task of their own.
 */
export function reduceTasks(callbacks: readonly Callback[]): Task[] {
  const byTask = new Map<string, Callback[]>();
  for (const cb of callbacks) {
    const k = compositeKey(cb.appKey, cb.service, cb.id);
    const list = byTask.get(k);
    if (list) list.push(cb);
    else byTask.set(k, [cb]);
  }
  return [...byTask.values()].map((list) => reduceTask(list)!).sort((a, b) => compareUtf8(a.id, b.id));
}
