// A stalled task that a later callback reaches is resumed (docs/contract.md §4, facts of time): the header the
// count update returned still says `st`, and its latest callback (`updatedAt`) is later than the one the stall was
// measured from; `task.resumed` goes out with the batch's events, and only then is `st` removed, on condition that
// it is the stall published. A crash in between publishes it again (same id). A callback older than the stall's
// (a shuffled or late delivery) leaves the task stalled: removing the stall would only have the sweeper find the
// very same stall again, and publish it twice.
import type { BatchContext } from '../../../domain/batch.ts';
import { defaultTimeSettings, resumesStall } from '../../../domain/deadlines.ts';
import type { TaskEvent } from '../../../domain/task-events.ts';
import { type TaskParts, toSummary } from '../../../domain/task-parts.ts';
import { resumedEvent } from '../../../domain/time-events.ts';
import { errorSentence } from '../../../text.ts';
import type { BatchSteps } from './steps.ts';

/** A resume to publish, then write. */
export interface Resume {
  appKey: string;
  id: string;
  stalledSince: number;
  event: TaskEvent;
}

/**
 * The resume of a task whose batch applied a callback while its header says it is stalled, and whose latest
 * callback is later than the stall's (null: none).
 */
export function resumeOf(parts: TaskParts | null, changed: boolean, ctx: BatchContext): Resume | null {
  const time = parts?.time;
  const settings = ctx.time ?? defaultTimeSettings;
  if (!parts || !time || !changed || time.stalledSince === null || parts.eventCount === 0) return null;
  if (!resumesStall(parts.header, parts.tally.updatedAt, time, settings)) return null;
  const summary = toSummary(parts);
  const timed = { summary, header: parts.header, version: parts.version ?? 0 };
  const stalledSince = time.stalledSince;
  const event = resumedEvent(timed, { stalledSince, stalledFrom: time.stalledFrom }, settings);
  return { appKey: summary.appKey, id: summary.id, stalledSince, event };
}

/** Removes the stalls published: a failure leaves `st`, and the task's next batch publishes the resume again. */
export async function writeResumes(resumes: readonly Resume[], steps: BatchSteps, ctx: BatchContext): Promise<void> {
  for (const r of resumes) {
    try {
      await steps.clearStall?.(r.appKey, r.id, r.stalledSince);
      ctx.log.info('task_resumed', { appKey: r.appKey, id: r.id, stalledSince: r.stalledSince });
    } catch (err) {
      ctx.log.error('task_resume_failed', { appKey: r.appKey, id: r.id, error: errorSentence(err) });
    }
  }
}
