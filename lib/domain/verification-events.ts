// The task event of a file reported uploaded that its storage does not hold (docs/events.md): `file.missing`,
// published by the verifier once its check is stored. Its id is the file's (once per file, as `file.lost`), and
// its time the first check that found the file missing, kept with the check, so that every publication of one
// finding carries the same. Pure: no AWS import.
import { eventTask, taskEventId, type TaskEvent } from './task-events.ts';
import type { TaskSummary } from './task-summary.ts';
import type { FileView } from './task.ts';
import type { FileVerification } from './verification.ts';

/** `file.missing`: `missingSince` is when a check first found the file missing (receiver's clock). */
export function fileMissingEvent(
  summary: TaskSummary,
  version: number,
  file: FileView,
  verification: FileVerification,
  missingSince: number,
): TaskEvent {
  return {
    version: 1,
    id: taskEventId(summary.appKey, summary.service, summary.id, 'file.missing', file.fileName),
    type: 'file.missing',
    occurredAt: missingSince,
    sequence: version,
    task: eventTask(summary),
    file,
    verification,
  };
}
