// The store's way of building a task, in memory: each callback joined into the header and its file as it
// comes, tallied, and counted once. Tests hold it against the oracle (lib/domain/reduce-task.ts) for every
// order of delivery.
import type { Callback } from '../../lib/domain/callback.ts';
import {
  applyToFile,
  applyToHeader,
  emptyTally,
  type FileRecord,
  fileNameOf,
  type Task,
  type TaskHeader,
  tallyCallback,
} from '../../lib/domain/task.ts';
import { toTask } from '../../lib/domain/task-parts.ts';

/** Incremental fold, in the given order, with exact duplicates skipped: what the store does, in memory. */
export function foldTask(callbacks: readonly Callback[]): Task | null {
  let header: TaskHeader | null = null;
  let tally = emptyTally();
  const files = new Map<string, FileRecord>();
  const seen = new Set<string>();
  for (const cb of callbacks) {
    if (seen.has(cb.key)) continue;
    seen.add(cb.key);
    header = applyToHeader(header, cb);
    tally = tallyCallback(tally, cb);
    const fileName = fileNameOf(cb);
    if (fileName) {
      const after = applyToFile(files.get(fileName) ?? null, cb);
      // A file counts the distinct upload callbacks it has seen: the fold knows them, as the store does.
      if (cb.upload) after.attempts += 1;
      files.set(fileName, after);
    }
  }
  return header ? toTask({ header, files: [...files.values()], tally, eventCount: seen.size }) : null;
}
