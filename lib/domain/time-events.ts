// The task events of the facts of time (docs/events.md): a file's purge warning and loss, a task's stall, resume
// and settle. Each id is a function of the stored fact (a file's name: its purgeAt never moves; a stall's start;
// a settle's sequence), so that every publication of one fact, by any sweeper and after any crash, has one id.
// Pure: no AWS import.
import {
  STORAGE_CHANGE_DELAY_MS,
  purgeAtOf,
  purgeWarningMessage,
  stallTimeOf,
  type TimeSettings,
} from './deadlines.ts';
import { eventTask, taskEventId, type TaskEvent, type TimeEventType } from './task-events.ts';
import type { TaskSummary } from './task-summary.ts';
import { toFileView, type FileRecord, type TaskHeader } from './task.ts';

/** The task as the events of its facts of time see it: its summary, its header, its version. */
export interface TimedTask {
  summary: TaskSummary;
  header: TaskHeader;
  /** The header's version the events are read off (their `sequence`). */
  version: number;
}

function timeEvent(
  t: TimedTask,
  type: TimeEventType,
  occurredAt: number,
  fileName: string | null,
  instance?: string,
): TaskEvent {
  return {
    version: 1,
    id: taskEventId(t.summary, type, fileName, instance),
    type,
    occurredAt,
    sequence: t.version,
    task: eventTask(t.summary),
  };
}

/** A stall's time: from the callback it was measured from (stored with it), else the task's stall time now. */
function stallMsOf(t: TimedTask, stall: StallTime, s: TimeSettings): number {
  return stall.stalledFrom === null ? stallTimeOf(t.header, s) : stall.stalledSince - stall.stalledFrom;
}

/** A stored stall: when it began, and the latest callback it was measured from (null: stored without it). */
export interface StallTime {
  stalledSince: number;
  stalledFrom: number | null;
}

/** `task.stalled`: the task's latest callback was `stalledSince` − its stall time ago. */
export function stalledEvent(t: TimedTask, stall: StallTime, s: TimeSettings): TaskEvent {
  const { stalledSince } = stall;
  const stallMs = stallMsOf(t, stall, s);
  return {
    ...timeEvent(t, 'task.stalled', stalledSince, null, String(stalledSince)),
    stall: { stalledSince, stallMs, lastCallbackAt: stalledSince - stallMs },
  };
}

/** `task.resumed`: a callback (the task's latest, `updatedAt`) came after the stall that began at `stalledSince`. */
export function resumedEvent(t: TimedTask, stall: StallTime, s: TimeSettings): TaskEvent {
  const at = t.summary.updatedAt;
  return {
    ...timeEvent(t, 'task.resumed', at, null, String(stall.stalledSince)),
    stall: { stalledSince: stall.stalledSince, stallMs: stallMsOf(t, stall, s), lastCallbackAt: at },
  };
}

/** `task.settled`, under the header's sequence as it settled (`seq`; without one, its last change). */
export function settledEvent(t: TimedTask, settledAt: number, sequence: string): TaskEvent {
  return { ...timeEvent(t, 'task.settled', settledAt, null, sequence), settledAt };
}

/** `file.purge_warning` of a failed file. */
export function purgeWarningEvent(t: TimedTask, file: FileRecord, s: TimeSettings): TaskEvent | null {
  const purgeAt = purgeAtOf(file);
  if (purgeAt === null) return null;
  return {
    ...timeEvent(t, 'file.purge_warning', purgeAt - s.purgeWarningBeforeMs, file.fileName),
    file: toFileView(file),
    warning: { purgeAt, storageChangeDelayMs: STORAGE_CHANGE_DELAY_MS, message: purgeWarningMessage(purgeAt) },
  };
}

/** `file.lost` of a failed file marked lost. */
export function lostEvent(t: TimedTask, file: FileRecord): TaskEvent | null {
  const purgeAt = purgeAtOf(file);
  if (purgeAt === null) return null;
  return { ...timeEvent(t, 'file.lost', purgeAt, file.fileName), file: toFileView(file) };
}
