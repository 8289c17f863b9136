// The store's way of building a task, in memory: each callback joined into the header and its file as it
// comes. Tests hold it against the oracle (lib/domain/reduce-task.ts) for every order of delivery.
import type { Callback } from '../../lib/domain/callback.ts';
import {
  applyToFile,
  applyToHeader,
  type FileRecord,
  type FileTransition,
  fileNameOf,
  fileState,
  type Task,
  type TaskHeader,
  toTask,
} from '../../lib/domain/task.ts';

/** Incremental fold, in the given order, with exact duplicates skipped: what the store does, in memory. */
export function foldTask(callbacks: readonly Callback[]): Task | null {
  let header: TaskHeader | null = null;
  const files = new Map<string, FileRecord>();
  const seen = new Set<string>();
  for (const cb of callbacks) {
    if (seen.has(cb.key)) continue;
    seen.add(cb.key);
    let transition: FileTransition | null = null;
    const fileName = fileNameOf(cb);
    if (fileName) {
      const before = files.get(fileName) ?? null;
      const after = applyToFile(before, cb);
      files.set(fileName, after);
      transition = { from: fileState(before), to: fileState(after) };
    }
    header = applyToHeader(header, cb, transition);
  }
  return header ? toTask(header, [...files.values()]) : null;
}
