// Facts of time (docs/contract.md §4): lost files, purge warnings, stalled and settled tasks. They depend on the
// receiver's clock as well as on the callbacks, so nothing a callback does makes them true: the sweeper finds
// them when their deadline has passed (docs/task-store.md, Deadlines). This module says, for a task's header,
// its files and a moment, what is due and when the next deadline is. Pure: no AWS import.
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import { fileState, type FileRecord, type TaskHeader, type TaskStatus } from './task.ts';

/** Width of a `DUE` bucket: a deadline is found in the first sweep after its bucket begins. */
export const DUE_BUCKET_MS = 5 * 60_000;

/** What a new storage configuration of the platform takes to apply (the purge warning says so). */
export const STORAGE_CHANGE_DELAY_MS = 30 * 60_000;

/** The stage's durations (docs/configuration.md). */
export interface TimeSettings {
  /** SETTLE_AFTER: a completed task unchanged this long is settled. */
  settleAfterMs: number;
  /** PURGE_WARNING_BEFORE: a failed file is warned about this long before its purgeAt. */
  purgeWarningBeforeMs: number;
  /** STALL_FACTOR: the stall time is this many expected intervals... */
  stallFactor: number;
  /** STALL_MIN: ...at least this long... */
  stallMinMs: number;
  /** STALL_UNKNOWN: ...and this long when the interval is unknown. */
  stallUnknownMs: number;
}

export const defaultTimeSettings: Readonly<TimeSettings> = {
  settleAfterMs: 10 * 60_000,
  purgeWarningBeforeMs: 2 * 3_600_000,
  stallFactor: 3,
  stallMinMs: 15 * 60_000,
  stallUnknownMs: 6 * 3_600_000,
};

/** What a task's header keeps about time (attributes `ca`, `st`, `sf`, `sa`, `nLost`, `db`). */
export interface TaskTime {
  /** Receiver's time of the task's last change (a count update that applied a callback). */
  changedAt: number | null;
  stalledSince: number | null;
  /** The latest callback (`updatedAt`) the stall was measured from; null for a stall stored without it. */
  stalledFrom: number | null;
  settledAt: number | null;
  /** Lost files: a part of the failed ones. */
  lost: number;
  /** The bucket of the task's armed `DUE` entry. */
  armed: number | null;
}

/** What a file item keeps about time (attributes `pw`, `lo`). */
export interface FileMarks {
  /** When it was warned about (its purgeAt − PURGE_WARNING_BEFORE). */
  warnedAt: number | null;
  /** Its purgeAt, once it is lost. */
  lostAt: number | null;
}

/** The start of the bucket `ms` falls in. */
export function bucketOf(ms: number, width = DUE_BUCKET_MS): number {
  return Math.floor(ms / width) * width;
}

/** The callbacks' expected interval, from the start's config (ms); null when it says none. */
function expectedInterval(h: Pick<TaskHeader, 'service' | 'config'>): number | null {
  const value = h.config?.[h.service === 'recording' ? 'slicesMin' : 'slicesSec'];
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return null;
  return value * (h.service === 'recording' ? 60_000 : 1_000);
}

/** How long a task may go without a callback before it is stalled. */
export function stallTimeOf(h: Pick<TaskHeader, 'service' | 'config'>, s: TimeSettings): number {
  const interval = expectedInterval(h);
  if (interval === null) return s.stallUnknownMs;
  return Math.max(s.stallMinMs, s.stallFactor * interval);
}

/** Whether a task can stall: it has not ended, and no start failed. */
const canStall = (h: Pick<TaskHeader, 'endRank' | 'startOrEndFailed'>): boolean =>
  h.endRank === null && !h.startOrEndFailed;

/** When a task becomes stalled (its latest callback + its stall time); null when it cannot, or already is. */
export function stallDeadline(h: TaskHeader, updatedAt: number | null, t: TaskTime, s: TimeSettings): number | null {
  if (!canStall(h) || updatedAt === null || t.stalledSince !== null) return null;
  return updatedAt + stallTimeOf(h, s);
}

/** The latest callback (platform time) a stall was measured from: stored with it, else stalledSince − stall time. */
function stallMeasuredFrom(h: Pick<TaskHeader, 'service' | 'config'>, t: TaskTime, s: TimeSettings): number | null {
  if (t.stalledSince === null) return null;
  return t.stalledFrom ?? t.stalledSince - stallTimeOf(h, s);
}

/**
 * Whether a stalled task is resumed: its latest callback (`updatedAt`) is later than the one its stall was measured
 * from, or it can no longer stall (its end, or a failed start, came late, whatever its timestamp: uploads follow an
 * end, so an end delivered hours late is older than the task's latest callback). Any other callback older than the
 * stall's, or as old, leaves the task stalled (the stall, and its id, stand).
 */
export function resumesStall(h: TaskHeader, updatedAt: number | null, t: TaskTime, s: TimeSettings): boolean {
  const from = stallMeasuredFrom(h, t, s);
  if (from === null) return false;
  return !canStall(h) || (updatedAt !== null && updatedAt > from);
}

/** When a completed task settles (its last change + SETTLE_AFTER); null when it is not completed, or settled. */
export function settleDeadline(
  status: TaskStatus,
  updatedAt: number | null,
  t: TaskTime,
  s: TimeSettings,
): number | null {
  if (status !== 'completed' || t.settledAt !== null) return null;
  const changed = t.changedAt ?? updatedAt;
  return changed === null ? null : changed + s.settleAfterMs;
}

/** When the platform deletes a failed file (its first failure + 24 h); null for a file not failed. */
export function purgeAtOf(f: FileRecord): number | null {
  if (!f.upload || f.upload.ok || f.firstFailureAt === null) return null;
  return f.firstFailureAt + FILE_HOLD_MS;
}

/** What is due of one file at `now`: its warning, its loss (both when both have passed). */
export function fileDue(f: FileRecord, m: FileMarks, now: number, s: TimeSettings): { warn: boolean; lose: boolean } {
  const purgeAt = purgeAtOf(f);
  if (purgeAt === null) return { warn: false, lose: false };
  return {
    warn: m.warnedAt === null && now >= purgeAt - s.purgeWarningBeforeMs,
    lose: m.lostAt === null && now >= purgeAt,
  };
}

/** A file's next deadline (its warning, then its loss); null when none is left. */
export function fileDeadline(f: FileRecord, m: FileMarks, s: TimeSettings): number | null {
  const purgeAt = purgeAtOf(f);
  if (purgeAt === null || m.lostAt !== null) return null;
  return m.warnedAt === null ? purgeAt - s.purgeWarningBeforeMs : purgeAt;
}

/** The lost files among a task's files: failed, and marked lost. */
export const lostFiles = (files: readonly FileRecord[]): number =>
  files.filter((f) => f.lostAt !== undefined && fileState(f) === 'failed').length;

/** The task as the deadlines need it: its header facts, status and latest callback, and its time facts. */
export interface TaskClockView {
  header: TaskHeader;
  status: TaskStatus;
  updatedAt: number | null;
  time: TaskTime;
}

/** What is due of a task itself at `now`: the stalledSince or settledAt to set (null: nothing). */
export function taskDue(
  v: TaskClockView,
  now: number,
  s: TimeSettings,
): { stall: number | null; settle: number | null } {
  const stall = stallDeadline(v.header, v.updatedAt, v.time, s);
  const settle = settleDeadline(v.status, v.updatedAt, v.time, s);
  return {
    stall: stall !== null && now >= stall ? stall : null,
    settle: settle !== null && now >= settle ? settle : null,
  };
}

/**
 * The task's next deadline after what is due now is done: the earliest of its stall, its settle and its files'
 * (those read, with their marks: the task's failed files).
 */
export function nextDeadline(
  v: TaskClockView,
  files: readonly { file: FileRecord; marks: FileMarks }[],
  s: TimeSettings,
): number | null {
  const times = [stallDeadline(v.header, v.updatedAt, v.time, s), settleDeadline(v.status, v.updatedAt, v.time, s)];
  for (const { file, marks } of files) times.push(fileDeadline(file, marks, s));
  const left = times.filter((t): t is number => t !== null);
  return left.length === 0 ? null : Math.min(...left);
}

/** The purge warning's sentence. */
export function purgeWarningMessage(purgeAt: number): string {
  return (
    `The platform deletes this file at ${new Date(purgeAt).toISOString()} unless an upload succeeds; ` +
    'a new storage configuration takes up to 30 minutes to apply.'
  );
}
