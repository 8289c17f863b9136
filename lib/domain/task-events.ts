// Task events: what the stored state of a task says happened, as messages for other systems (docs/events.md).
//
// An event is a predicate on the stored state of one task:
// - task.started, task.start_failed, task.ended, task.failed hold once the task has absorbed a callback
//   of a given kind (a start with code 200, ...). They never become false again, so the distinct events
//   are exactly a function of the set of callbacks, whatever their order.
// - file.uploaded, file.upload_failed, file.upload_recovered are predicates on one file's record (its
//   winning upload, its failures), task.completed on the task's status. A later callback can make these
//   false again (a success with a later timestamp supersedes a failure), so which of them a task
//   publishes depends on the order its callbacks came in. For those the pure function gives two sets:
//   MUST, the events true on the final state (published in every order), and MAY, the events true on
//   the state of some subset of the callbacks (some order reaches it first). MUST ⊆ published ⊆ MAY.
//
// Each event has a deterministic id: the same predicate of the same task (and file) has the same id, so
// consumers deduplicate on it; and a time read off the stored task, so that every publication of it has the
// same one (`occurrence`). Pure: no AWS import.
import type { Service } from '../platform/services.ts';
import type { Callback } from './callback.ts';
import { clipText } from './header-text.ts';
import { CompletionSweep } from './completion-time.ts';
import { canonicalJson } from './canonical.ts';
import { createHash } from 'node:crypto';
import type { StoredWrite } from './task-store.ts';
import { taskFileCounts, type TaskFileCounts } from './task-file-counts.ts';
import type { TaskSummary } from './task-summary.ts';
import type { TaskParts } from './task-parts.ts';
import { fileState, toFileView, type FileRecord, type FileView, type TaskStatus } from './task.ts';
import type { FileVerification } from './verification.ts';

const TASK_EVENT_VERSION = 1;

export const TASK_EVENT_TYPES = [
  'task.started',
  'task.start_failed',
  'task.ended',
  'task.failed',
  'task.completed',
  'file.uploaded',
  'file.upload_failed',
  'file.upload_recovered',
] as const;
/** Events of the facts of time (docs/events.md): published by the sweeper, `task.resumed` by the worker. */
export const TIME_EVENT_TYPES = [
  'file.purge_warning',
  'file.lost',
  'task.stalled',
  'task.resumed',
  'task.settled',
] as const;
export type TimeEventType = (typeof TIME_EVENT_TYPES)[number];
/** Events of the check of a file in its storage (docs/verification.md): published by the verifier. */
const VERIFICATION_EVENT_TYPES = ['file.missing'] as const;
type VerificationEventType = (typeof VERIFICATION_EVENT_TYPES)[number];
export type TaskEventType = (typeof TASK_EVENT_TYPES)[number] | TimeEventType | VerificationEventType;
/** Every type an event can have. */
export const ALL_TASK_EVENT_TYPES: readonly TaskEventType[] = [
  ...TASK_EVENT_TYPES,
  ...TIME_EVENT_TYPES,
  ...VERIFICATION_EVENT_TYPES,
];

/** An event as the pure function and `callbacks verify` know it: its identity, without a body. */
export interface TaskEventRef {
  id: string;
  type: TaskEventType;
  service: Service;
  taskId: string;
  fileName: string | null;
}

/** The task as an event carries it. */
export interface TaskEventTask {
  service: Service;
  id: string;
  appKey: string;
  roomId: string | null;
  sessionId: string | null;
  userId: string | null;
  status: TaskStatus;
  files: TaskFileCounts;
}

/** The task part of an event, from the store's summary of the task. */
export function eventTask(s: TaskSummary): TaskEventTask {
  return {
    service: s.service,
    id: s.id,
    appKey: s.appKey,
    roomId: s.roomId,
    sessionId: s.sessionId,
    userId: s.userId,
    status: s.status,
    files: taskFileCounts(s),
  };
}

/** The published message body, version 1. */
export interface TaskEvent {
  version: typeof TASK_EVENT_VERSION;
  id: string;
  type: TaskEventType;
  /** Platform time (the callbacks' `timestamp`, epoch ms) of what the event reports. */
  occurredAt: number;
  /**
   * The version of the task's header the event was read off: it only grows within a task, so a subscriber
   * keeps the task of the event with the greatest one. A republished event has its first id and time, and
   * the version it was read off then.
   */
  sequence: number;
  task: TaskEventTask;
  /** The file, for file.* events. */
  file?: FileView;
  /** The code and message that made the task fail, for task.start_failed and task.failed. */
  error?: { code: number; message: string | null };
  /** file.purge_warning: when the platform deletes the file, and what a storage change takes. */
  warning?: { purgeAt: number; storageChangeDelayMs: number; message: string };
  /** task.stalled and task.resumed. */
  stall?: { stalledSince: number; stallMs: number; lastCallbackAt: number };
  /** task.settled. */
  settledAt?: number;
  /** file.missing: what the check of the file in its storage found. */
  verification?: FileVerification;
}

/** The id of an event: 128 bits of SHA-256 over what identifies it, as 32 hex characters. */
export function taskEventId(
  appKey: string,
  service: Service,
  taskId: string,
  type: TaskEventType,
  fileName: string | null,
  /** What tells one occurrence of a fact of time from another (a stall's start, a settle's sequence). */
  instance?: string,
): string {
  const parts: unknown[] = ['task-event', TASK_EVENT_VERSION, appKey, service, taskId, type, fileName];
  if (instance !== undefined) parts.push(instance);
  const identity = canonicalJson(parts);
  return createHash('sha256').update(identity, 'utf8').digest('hex').slice(0, 32);
}

// ---------------------------------------------------------------------------------------------------
// Predicates

/** The task events a callback is a witness of: true on every state that has absorbed it. */
export function witnessedTypes(cb: Callback): TaskEventType[] {
  const types: TaskEventType[] = [];
  if (cb.type === 1) types.push(cb.code === 200 ? 'task.started' : 'task.start_failed');
  if (cb.type === 3) types.push('task.ended');
  if ((cb.type === 1 || cb.type === 3) && cb.code !== 200) types.push('task.failed');
  return types;
}

/** The file events true on a file record. */
function fileEventTypes(f: FileRecord | null): TaskEventType[] {
  if (!f?.upload) return [];
  if (!f.upload.ok) return ['file.upload_failed'];
  return f.firstFailureAt !== null ? ['file.uploaded', 'file.upload_recovered'] : ['file.uploaded'];
}

// ---------------------------------------------------------------------------------------------------
// When an event happened

/**
 * When a completed task completed, in platform time: the earliest moment, from its end on, at which every
 * file named by then was uploaded (a file named later, already uploaded, does not move it): ./completion-time.ts.
 */
export function completedAt(parts: TaskParts): number {
  const sweep = new CompletionSweep(parts.header.endedAt ?? parts.header.identAt);
  for (const f of parts.files) sweep.add(f);
  // Every span kept: one pass.
  return (sweep.moment() as { at: number }).at;
}

/**
 * The time (and error) of an event, read off the stored task rather than off the callback in hand, so that
 * every publication of it carries the same ones: the callback that made it true, first in platform time (the
 * earliest start or end of its kind, the file's first failure, its winning success, the moment the task
 * completed). `cb`, a witness, stands in only where the task keeps no such fact (an earliest start that
 * failed, before an ok one).
 */
function occurrence(
  type: TaskEventType,
  cb: Callback,
  stored: StoredWrite,
): { at: number; error?: TaskEvent['error'] } {
  const h = stored.parts.header;
  const own = { at: cb.timestamp, error: { code: cb.code, message: clipText(cb.message) } };
  const failure = h.failure && { at: h.failure.at, error: { code: h.failure.code, message: h.failure.message } };
  const failedStart = h.failure?.type === 1 ? failure : null;
  const after = stored.file?.after;
  switch (type) {
    case 'task.started':
      return { at: h.startedAt !== null && h.failure?.rank !== h.startRank ? h.startedAt : cb.timestamp };
    case 'task.start_failed':
      return failedStart ?? own;
    case 'task.failed':
      return failure ?? own;
    case 'task.ended':
      return { at: h.endedAt ?? cb.timestamp };
    case 'task.completed':
      // Kept by the header once it completed: its files are not all at hand after a write.
      return { at: stored.parts.completedAt ?? completedAt(stored.parts) };
    case 'file.upload_failed':
      return { at: after?.firstFailureAt ?? after?.upload?.at ?? cb.timestamp };
    default:
      return { at: after?.upload?.at ?? cb.timestamp };
  }
}

// ---------------------------------------------------------------------------------------------------
// Events of one write, as the worker publishes them

/**
 * The events to publish for one delivery of `cb`, given what the store reports (`StoredWrite`: the task
 * after the write, the file before and after, a "before" being null when unknown, and then every event
 * true on the stored item is published again, with the same ids). A state event is published
 * when its predicate is true after the write and was not before; a witnessed event whenever its witness
 * is delivered (applied or duplicate). Redelivering a callback thus publishes again every event its first
 * delivery could have published and that still holds: a crash or a failed publish between the write and
 * the publish loses nothing.
 */
export function eventsOfWrite(cb: Callback, stored: StoredWrite | null): TaskEvent[] {
  const events: TaskEvent[] = [];
  if (!stored) return events;
  const task = eventTask(stored.task);
  const make = (type: TaskEventType, file?: FileView): TaskEvent => {
    const { at, error } = occurrence(type, cb, stored);
    return {
      version: TASK_EVENT_VERSION,
      id: taskEventId(cb.appKey, cb.service, cb.id, type, file?.fileName ?? null),
      type,
      occurredAt: at,
      sequence: stored.parts.version ?? 0,
      task,
      ...(file ? { file } : {}),
      ...(error ? { error } : {}),
    };
  };

  for (const type of witnessedTypes(cb)) events.push(make(type));

  if (stored.file && publishesFileEvents(cb, stored.file)) {
    const before = new Set(fileEventTypes(stored.file.before));
    const after = stored.file.after;
    for (const type of fileEventTypes(after)) {
      if (before.has(type)) continue;
      events.push(make(type, toFileView(after)));
    }
  }

  if (task.status === 'completed' && stored.statusBefore !== 'completed') events.push(make('task.completed'));
  return events;
}

/**
 * Whether a write publishes its file's events: an upload's (only an upload changes what they say), and any
 * write that cannot know its file before it (a duplicate; a file left by a delivery that stopped before its
 * events were out), which may be the last delivery to come back of a put that carried an upload's join.
 */
export function publishesFileEvents(cb: Callback, file: NonNullable<StoredWrite['file']>): boolean {
  return !!cb.upload || file.before === null;
}

/**
 * Whether `eventsOfWrite` can publish anything for a write, known before the task is read (the worker
 * then skips reading it). A start or an end witnesses events, and a duplicate publishes again whatever
 * its items hold; a slice or an upload that was applied publishes only file events its file did not
 * already have, or task.completed, which only a file becoming uploaded can bring about.
 */
export function writeMayPublish(cb: Callback, applied: boolean, file: StoredWrite['file']): boolean {
  if (!applied || witnessedTypes(cb).length > 0 || cb.type === 3 || file === null) return true;
  const before = file.before ? fileEventTypes(file.before) : [];
  if (publishesFileEvents(cb, file) && fileEventTypes(file.after).some((type) => !before.includes(type))) return true;
  return fileState(file.after) === 'uploaded' && fileState(file.before) !== 'uploaded';
}

// ---------------------------------------------------------------------------------------------------
// The pure function: which events a set of callbacks must and may publish
