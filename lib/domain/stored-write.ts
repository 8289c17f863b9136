// What a write left in the store, as task events see it (lib/domain/task-events.ts): from the task's parts
// read after the write, and what the write itself knows (the file it found, its own change). Pure.
import type { Callback } from './callback.ts';
import { countsBefore, countsOfParts, deriveStatus, toSummary, type TaskParts } from './task-parts.ts';
import type { StoredWrite } from './task-store.ts';
import type { FileTransition, TaskHeader } from './task.ts';

/**
 * A write as the store made it. `headerBefore`: as read, or unchanged; null when the write created the task
 * or cannot know the task before it (the status before is then unknown).
 */
export interface WriteEffect {
  outcome: 'applied' | 'duplicate';
  file: StoredWrite['file'];
  transition: FileTransition | null;
  headerBefore: TaskHeader | null | 'unchanged';
}

export function storedWriteOf(cb: Callback, effect: WriteEffect, parts: TaskParts | null): StoredWrite | null {
  const task = parts && parts.eventCount > 0 ? toSummary(parts) : null;
  if (!parts || !task) return null;
  // The file as read after this write (and any later one: the events' file and task agree), its attempts
  // counted from every key recorded for it; before this write, as the write found it.
  let file = effect.file;
  if (file) {
    const fileName = file.after.fileName;
    const read = parts.files.find((f) => f.fileName === fileName);
    const attempts = read?.attempts ?? 0;
    const own = effect.outcome === 'applied' && cb.upload ? 1 : 0;
    file = {
      before: file.before && { ...file.before, attempts: attempts - own },
      after: read ?? { ...file.after, attempts },
    };
  }
  if (effect.outcome === 'duplicate' || effect.headerBefore === null) return { task, statusBefore: null, file, parts };
  // The status before: this write's own change undone, every other item as read.
  const counts = countsOfParts(parts);
  const header = effect.headerBefore === 'unchanged' ? parts.header : effect.headerBefore;
  const before = effect.transition ? countsBefore(counts, effect.transition) : counts;
  return { task, statusBefore: deriveStatus(header, before), file, parts };
}
