// A task from its parts: the header, the files, the join of every part's tally and the number of distinct
// callbacks recorded. The counts are the header's own (docs/task-store.md), or added up here from every file
// for a header written before headers kept them.
import { modeName } from '../platform/modes.ts';
import { lostFiles, type TaskTime } from './deadlines.ts';
import type { TaskCounts } from './task-counts.ts';
import { taskFileCounts } from './task-file-counts.ts';
import type { TaskSummary } from './task-summary.ts';
import {
  compareUtf8,
  emptyTally,
  fileState,
  toFileView,
  type FileRecord,
  type FileState,
  type FileTransition,
  type Tally,
  type Task,
  type TaskHeader,
  type TaskStatus,
} from './task.ts';

export interface FileCounts {
  fileCount: number;
  pendingFiles: number;
  failedFiles: number;
}

export function countFiles(files: Iterable<FileRecord>): FileCounts {
  const counts: FileCounts = { fileCount: 0, pendingFiles: 0, failedFiles: 0 };
  for (const f of files) {
    const state = fileState(f);
    counts.fileCount += 1;
    if (state === 'pending') counts.pendingFiles += 1;
    if (state === 'failed') counts.failedFiles += 1;
  }
  return counts;
}

/** The file counts of a header's counts. */
function fileCountsOf(c: TaskCounts): FileCounts {
  return { fileCount: c.files, pendingFiles: c.pending, failedFiles: c.failed };
}

/** The task's file counts: the header's when it keeps them, else added up from the files. */
export function countsOfParts(parts: TaskParts): FileCounts {
  return parts.counts ? fileCountsOf(parts.counts) : countFiles(parts.files);
}

/** A file's change of state from one callback. */
export function transitionOf(before: FileRecord | null, after: FileRecord): FileTransition {
  return { from: fileState(before), to: fileState(after) };
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Whether a join left a file's facts and tally as they were. */
export function sameFacts(
  before: FileRecord | null,
  after: FileRecord,
  tallyBefore: Tally,
  tallyAfter: Tally,
): boolean {
  return before !== null && sameJson(before, after) && sameJson(tallyBefore ?? emptyTally(), tallyAfter);
}

/** The counts as they were before one file changed state. */
export function countsBefore(counts: FileCounts, t: FileTransition): FileCounts {
  const next = { ...counts };
  const move = (state: FileState, by: number) => {
    if (state === null) return;
    next.fileCount += by;
    if (state === 'pending') next.pendingFiles += by;
    if (state === 'failed') next.failedFiles += by;
  };
  move(t.to, -1);
  move(t.from, +1);
  return next;
}

/** docs/contract.md §4 status rule, in its order of precedence. */
export function deriveStatus(h: TaskHeader, counts: FileCounts): TaskStatus {
  if (counts.failedFiles > 0) return 'upload_failed';
  if (h.endOk && counts.pendingFiles === 0) return 'completed';
  if (h.startOrEndFailed) return 'failed';
  if (h.endRank !== null) return 'ended';
  return h.service === 'recording' ? 'recording' : 'capturing';
}

/** The time a task sorts by in listings: its identity callback's (its start's, or its earliest callback's). */
export function sortTimeOf(h: TaskHeader): number {
  return h.identAt;
}

/** Everything a task is made of: its header, its files, the join of its tallies, its distinct callbacks. */
export interface TaskParts {
  header: TaskHeader;
  /** Every file, or (with `counts`) only those at hand: a page, or the files a batch wrote. */
  files: readonly FileRecord[];
  tally: Tally;
  eventCount: number;
  /** The counts the header keeps; absent, they are added up from `files` (all of them). */
  counts?: TaskCounts;
  /** When the task first completed, as its header keeps it (null: not yet, or not kept). */
  completedAt?: number | null;
  /** The header's version: grows with every write of it (a task event's `sequence`). */
  version?: number;
  /** The header's facts of time (lib/domain/deadlines.ts); absent: none. */
  time?: TaskTime;
}

/** The failed files that are lost: the header's count, or those at hand marked lost. */
function lostOf(parts: TaskParts): number {
  if (parts.time) return parts.time.lost;
  return lostFiles(parts.files);
}

/** How long a task ran (platform time), when both its start and its end are known. */
function durationOf(h: TaskHeader): number | null {
  return h.startedAt !== null && h.endedAt !== null && h.endedAt >= h.startedAt ? h.endedAt - h.startedAt : null;
}

/** The fields a task and a task's summary share, in the order both print them. */
type TaskHead = Pick<
  Task,
  'service' | 'id' | 'appKey' | 'roomId' | 'sessionId' | 'userId' | 'status' | 'startedAt' | 'endedAt' | 'updatedAt'
>;

function taskHead(h: TaskHeader, counts: FileCounts, tally: Tally): TaskHead {
  return {
    service: h.service,
    id: h.id,
    appKey: h.appKey,
    roomId: h.roomId,
    sessionId: h.sessionId,
    userId: h.userId,
    status: deriveStatus(h, counts),
    startedAt: h.startedAt,
    endedAt: h.endedAt,
    updatedAt: tally.updatedAt,
  };
}

/** The task's summary, as listings and task events show it. */
export function toSummary(parts: TaskParts): TaskSummary {
  const counts = countsOfParts(parts);
  return {
    ...taskHead(parts.header, counts, parts.tally),
    updatedAt: parts.tally.updatedAt ?? parts.header.identAt,
    sortAt: sortTimeOf(parts.header),
    eventCount: parts.eventCount,
    ...counts,
    lostFiles: lostOf(parts),
    stalledSince: parts.time?.stalledSince ?? null,
    settledAt: parts.time?.settledAt ?? null,
    durationMs: durationOf(parts.header),
  };
}

export function toTask(parts: TaskParts): Task {
  const { header: h, files, tally } = parts;
  const lastError = tally.lastError;
  const task: Task = {
    ...taskHead(h, countsOfParts(parts), tally),
    extra: h.extra,
    config: h.config,
    counts: taskFileCounts({ ...countsOfParts(parts), lostFiles: lostOf(parts) }),
    files: [...files].sort((a, b) => compareUtf8(a.fileName, b.fileName)).map(toFileView),
    lastError: lastError
      ? { type: lastError.type, code: lastError.code, message: lastError.message, at: lastError.at }
      : null,
    eventCount: parts.eventCount,
    stalledSince: parts.time?.stalledSince ?? null,
    settledAt: parts.time?.settledAt ?? null,
  };
  if (h.service === 'recording') {
    task.mode = h.mode;
    task.modeName = modeName(h.mode);
    task.startFileName = h.startFileName;
  }
  return task;
}
