// A stalled task that a callback reaches again is resumed (docs/contract.md §4, facts of time): the header the
// count update returned still says `st`; `task.resumed` goes out with the batch's events, and only then is `st`
// removed, on condition that it is the stall published. A crash in between publishes it again (same id).
// A callback that leaves the stall's moment where it was (one older than the task's latest, delivered late) does
// not resume it: the task is as stalled as before, and resumed it would stall again under the same ids.
import { defaultTimeSettings, stallDeadline } from '../domain/deadlines.ts';
import type { TaskParts } from '../domain/task-parts.ts';
import { toSummary } from '../domain/task-parts.ts';
import type { TaskEvent } from '../domain/task-events.ts';
import { resumedEvent } from '../domain/time-events.ts';
import type { WorkerDeps } from './deps.ts';
import { errorSentence } from '../text.ts';

/** A resume to publish, then write. */
export interface Resume {
  appKey: string;
  id: string;
  stalledSince: number;
  event: TaskEvent;
}

/** The resume of a task whose batch applied a callback while its header says it is stalled (null: none). */
export function resumeOf(parts: TaskParts | null, changed: boolean, deps: WorkerDeps): Resume | null {
  const stalledSince = parts?.time?.stalledSince ?? null;
  if (!parts || !changed || stalledSince === null || parts.eventCount === 0) return null;
  const summary = toSummary(parts);
  const time = deps.time ?? defaultTimeSettings;
  const unstalled = { ...parts.time!, stalledSince: null };
  if (stallDeadline(parts.header, summary.updatedAt, unstalled, time) === stalledSince) return null;
  const timed = { summary, header: parts.header, version: parts.version ?? 0 };
  const event = resumedEvent(timed, stalledSince, time);
  return { appKey: summary.appKey, id: summary.id, stalledSince, event };
}

/** Removes the stalls published: a failure leaves `st`, and the task's next batch publishes the resume again. */
export async function writeResumes(resumes: readonly Resume[], deps: WorkerDeps): Promise<void> {
  for (const r of resumes) {
    try {
      await deps.store.clearStall?.(r.appKey, r.id, r.stalledSince);
      deps.log.info('task_resumed', { appKey: r.appKey, id: r.id, stalledSince: r.stalledSince });
    } catch (err) {
      deps.log.error('task_resume_failed', { appKey: r.appKey, id: r.id, error: errorSentence(err) });
    }
  }
}
