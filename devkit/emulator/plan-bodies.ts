// The bodies the platform sends for a task's plan (./plans.ts), once the run's base time is known: file names
// embed absolute timestamps.
import {
  type Body,
  type RecordingTask,
  recordingFileClosed,
  recordingStart,
  recordingUpload,
  type ScreenshotTask,
  screenshotStartOrEnd,
  screenshotUpload,
} from '../../lib/platform/bodies.ts';
import { recordingFileName, screenshotFileName } from '../../lib/platform/file-names.ts';
import { type PlannedEvent, SCREENSHOT_UPLOAD_FAILURE, type TaskPlan } from './plans.ts';

function recordingFile(plan: TaskPlan, t0: number, file: number): string {
  const r = plan.recording!;
  const { sessionId, roomId } = plan.session;
  const timestamp = t0 + plan.fileStarts[file]!;
  return recordingFileName({
    sessionId,
    roomId,
    userId: plan.userId,
    streamTag: r.streamTag,
    mode: r.mode,
    timestamp,
    format: r.ext,
  });
}

function screenshotFile(plan: TaskPlan, t0: number, file: number): string {
  const { sessionId, roomId } = plan.session;
  const { streamId } = plan.screenshot!;
  return screenshotFileName({
    sessionId,
    roomId,
    userId: plan.userId,
    streamId,
    timestamp: t0 + plan.fileStarts[file]!,
  });
}

function recordingBody(plan: TaskPlan, ev: PlannedEvent, t0: number, appKey: string, taskId: string): Body {
  const r = plan.recording!;
  const { sessionId, roomId } = plan.session;
  const task: RecordingTask = {
    appKey,
    recordId: taskId,
    roomId,
    sessionId,
    userId: plan.userId,
    mode: r.mode,
    extra: plan.extra,
  };
  const at = t0 + ev.rel;
  if (ev.type === 1) {
    const output = { fileName: recordingFile(plan, t0, 0), audioSample: r.audioSample, videoResoulation: r.resolution };
    return recordingStart(task, at, ev, { ...r.config }, output);
  }
  const fileName = recordingFile(plan, t0, ev.file!);
  if (ev.type === 4) return recordingUpload(task, at, ev, fileName);
  return recordingFileClosed(task, ev.type, at, ev, { fileName, fileSize: ev.size! });
}

function screenshotBody(plan: TaskPlan, ev: PlannedEvent, t0: number, appKey: string, taskId: string): Body {
  const s = plan.screenshot!;
  const { sessionId, roomId } = plan.session;
  const task: ScreenshotTask = { appKey, sessionId, roomId, imageId: taskId, extra: plan.extra };
  const at = t0 + ev.rel;
  if (ev.type === 1) return screenshotStartOrEnd(task, 1, at, ev, { ...s.config });
  if (ev.type === 3) return screenshotStartOrEnd(task, 3, at, ev, { ...s.endConfig });
  const failure = ev.ok ? null : (ev.fileState ?? SCREENSHOT_UPLOAD_FAILURE);
  return screenshotUpload(task, at, screenshotFile(plan, t0, ev.file!), failure);
}

/** The body the platform sends for one planned event of a task that started at `t0`. */
export function bodyOf(plan: TaskPlan, ev: PlannedEvent, t0: number, appKey: string, taskId: string): Body {
  return plan.service === 'recording'
    ? recordingBody(plan, ev, t0, appKey, taskId)
    : screenshotBody(plan, ev, t0, appKey, taskId);
}

/** Every body of a task that started at `t0`, in the order of its planned events. */
export function bodiesOf(plan: TaskPlan, t0: number, appKey: string, taskId: string): Body[] {
  return plan.events.map((ev) => bodyOf(plan, ev, t0, appKey, taskId));
}
