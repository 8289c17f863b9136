// The task model and its state rules (docs/contract.md §4), expressed as a merge of facts that does not depend
// on order. A task is split into a bounded header (`TaskHeader`) and one record per file (`FileRecord`);
// every field of either is a join of the facts its callbacks carry (a minimum, a maximum, an "or", or a
// count of distinct events), so applying callbacks in any order reaches the same records. The storage
// layer keeps each record in its own item and applies a callback to at most one file and the header.
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import { modeName } from '../platform/modes.ts';
import type { Callback } from './callback.ts';
import type { CallbackType, Service } from './services.ts';
import type { TaskSummary } from './task-store.ts';

/**
 * Task statuses (docs/contract.md §4): `recording` is the recording service's, `capturing` the screenshot
 * one's.
 */
export const TASK_STATUSES = ['recording', 'capturing', 'ended', 'completed', 'upload_failed', 'failed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export function isTaskStatus(value: unknown): value is TaskStatus {
  return TASK_STATUSES.includes(value as TaskStatus);
}

export type FileUpload = 'pending' | 'uploaded' | 'failed';

/**
 * A total order on events: timestamp, then event key. Encoded as a string that sorts the same way, so
 * that the same comparison works in TypeScript and in a DynamoDB condition expression.
 */
export function rankOf(timestamp: number, key: string): string {
  return `${String(Math.max(0, Math.trunc(timestamp))).padStart(16, '0')}|${key}`;
}

/** Header facts. Every field is a join: min/max by rank, "or", or a count of distinct events. */
export interface TaskHeader {
  service: Service;
  id: string;
  /** Identity fields come from the best-ranked event: a start first, then the earliest. */
  identRank: string;
  appKey: string;
  roomId: string | null;
  sessionId: string | null;
  userId: string | null;
  mode: number | null;
  extra: string | null;
  /** Config from the best-ranked event carrying one (start first; screenshot ends carry it too). */
  configRank: string | null;
  config: Record<string, unknown> | null;
  /** The earliest start callback. */
  startRank: string | null;
  startedAt: number | null;
  startFileName: string | null;
  /** The earliest end callback. */
  endRank: string | null;
  endedAt: number | null;
  /** Some end callback carried code 200. */
  endOk: boolean;
  /** Some start or end callback carried a code other than 200. */
  startOrEndFailed: boolean;
  /** The latest callback whose code is not 200. */
  lastError: { rank: string; type: CallbackType; code: number; message: string | null; at: number } | null;
  firstAt: number;
  updatedAt: number;
  eventCount: number;
  /** Counts of files by their current upload state; maintained from file transitions. */
  fileCount: number;
  pendingFiles: number;
  failedFiles: number;
}

/** One file of a task: what slices, ends and uploads said about it. */
export interface FileRecord {
  fileName: string;
  /** Size from the latest slice or end callback naming this file. */
  sizeRank: string | null;
  size: number | null;
  /** The upload callback with the greatest timestamp (success wins a tie, then the event key). */
  upload: {
    rank: string;
    ok: boolean;
    code: number;
    message: string | null;
    url: string | null;
    at: number;
  } | null;
  firstFailureAt: number | null;
  /** Distinct upload callbacks seen for this file. */
  attempts: number;
}

/** A file's contribution to the header counters: absent (null) until a callback names it. */
export type FileState = FileUpload | null;

export interface FileView {
  fileName: string;
  size: number | null;
  url: string | null;
  upload: FileUpload;
  code: number | null;
  message: string | null;
  attempts: number;
  purgeAt: number | null;
}

/** The task exactly as `callbacks tasks get <id> --json` prints it (docs/contract.md §4). */
export interface Task {
  service: Service;
  id: string;
  appKey: string;
  roomId: string | null;
  sessionId: string | null;
  userId: string | null;
  status: TaskStatus;
  startedAt: number | null;
  endedAt: number | null;
  updatedAt: number | null;
  extra: string | null;
  config: Record<string, unknown> | null;
  mode?: number | null;
  modeName?: string | null;
  startFileName?: string | null;
  files: FileView[];
  lastError: { type: number; code: number; message: string | null; at: number } | null;
  eventCount: number;
}

// ---------------------------------------------------------------------------------------------------
// Files

/** The file a callback concerns, if any. */
export function fileNameOf(cb: Callback): string | null {
  return cb.file?.fileName ?? cb.upload?.fileName ?? null;
}

export function fileState(f: FileRecord | null): FileState {
  if (!f) return null;
  if (!f.upload) return 'pending';
  return f.upload.ok ? 'uploaded' : 'failed';
}

/** Orders two upload facts: the greater timestamp wins, success wins a tie, then the event key. */
function uploadBeats(a: NonNullable<FileRecord['upload']>, b: NonNullable<FileRecord['upload']>): boolean {
  if (a.at !== b.at) return a.at > b.at;
  if (a.ok !== b.ok) return a.ok;
  return a.rank > b.rank;
}

/**
 * Joins one callback's facts into a file record. Counting (`attempts`) assumes the callback has not been
 * applied to this record before: the caller guarantees that (the fold deduplicates by event key, the
 * store by a token on the item).
 */
export function applyToFile(file: FileRecord | null, cb: Callback): FileRecord {
  const fileName = fileNameOf(cb);
  if (!fileName) throw new Error(`callback type ${cb.type} names no file`);
  const next: FileRecord = file
    ? { ...file, upload: file.upload ? { ...file.upload } : null }
    : { fileName, sizeRank: null, size: null, upload: null, firstFailureAt: null, attempts: 0 };
  const rank = rankOf(cb.timestamp, cb.key);
  if (cb.file) {
    if (next.sizeRank === null || rank > next.sizeRank) {
      next.sizeRank = rank;
      next.size = cb.file.size;
    }
  }
  if (cb.upload) {
    next.attempts += 1;
    const candidate = {
      rank,
      ok: cb.upload.ok,
      code: cb.upload.code,
      message: cb.upload.message,
      url: cb.upload.url,
      at: cb.timestamp,
    };
    if (!next.upload || uploadBeats(candidate, next.upload)) next.upload = candidate;
    if (!cb.upload.ok && (next.firstFailureAt === null || cb.timestamp < next.firstFailureAt)) {
      next.firstFailureAt = cb.timestamp;
    }
  }
  return next;
}

export function toFileView(f: FileRecord): FileView {
  const upload = fileState(f) as FileUpload;
  return {
    fileName: f.fileName,
    size: f.size,
    url: f.upload?.url ?? null,
    upload,
    code: f.upload?.code ?? null,
    message: f.upload?.message ?? null,
    attempts: f.attempts,
    purgeAt: upload === 'failed' && f.firstFailureAt !== null ? f.firstFailureAt + FILE_HOLD_MS : null,
  };
}

// ---------------------------------------------------------------------------------------------------
// Header

/** A change of one file's state, applied to the header counters. */
export interface FileTransition {
  from: FileState;
  to: FileState;
}

const identPriority = (type: CallbackType) => (type === 1 ? '0' : '1');

export function emptyHeader(cb: Callback): TaskHeader {
  return {
    service: cb.service,
    id: cb.id,
    identRank: '~', // sorts after every real rank
    appKey: cb.appKey,
    roomId: null,
    sessionId: null,
    userId: null,
    mode: null,
    extra: null,
    configRank: null,
    config: null,
    startRank: null,
    startedAt: null,
    startFileName: null,
    endRank: null,
    endedAt: null,
    endOk: false,
    startOrEndFailed: false,
    lastError: null,
    firstAt: cb.timestamp,
    updatedAt: cb.timestamp,
    eventCount: 0,
    fileCount: 0,
    pendingFiles: 0,
    failedFiles: 0,
  };
}

/**
 * Joins one callback's facts into the header. `countEvent` adds it to `eventCount`; `transition` is the
 * change this callback caused to its file's state, if any. Both counts assume the caller applies each
 * event once (see applyToFile).
 */
export function applyToHeader(
  header: TaskHeader | null,
  cb: Callback,
  transition: FileTransition | null,
  countEvent = true,
): TaskHeader {
  const h: TaskHeader = header
    ? { ...header, lastError: header.lastError ? { ...header.lastError } : null }
    : emptyHeader(cb);
  const rank = rankOf(cb.timestamp, cb.key);

  const identRank = identPriority(cb.type) + rank;
  if (identRank < h.identRank) {
    h.identRank = identRank;
    h.appKey = cb.appKey;
    h.roomId = cb.roomId;
    h.sessionId = cb.sessionId;
    h.userId = cb.userId;
    h.mode = cb.mode;
    h.extra = cb.extra;
  }
  if (cb.config) {
    const configRank = identPriority(cb.type) + rank;
    if (h.configRank === null || configRank < h.configRank) {
      h.configRank = configRank;
      h.config = cb.config;
    }
  }
  if (cb.type === 1 && (h.startRank === null || rank < h.startRank)) {
    h.startRank = rank;
    h.startedAt = cb.timestamp;
    h.startFileName = cb.startFileName;
  }
  if (cb.type === 3 && (h.endRank === null || rank < h.endRank)) {
    h.endRank = rank;
    h.endedAt = cb.timestamp;
  }
  if (cb.type === 3 && cb.code === 200) h.endOk = true;
  if ((cb.type === 1 || cb.type === 3) && cb.code !== 200) h.startOrEndFailed = true;
  if (cb.code !== 200 && (h.lastError === null || rank > h.lastError.rank)) {
    h.lastError = { rank, type: cb.type, code: cb.code, message: cb.message, at: cb.timestamp };
  }
  if (cb.timestamp < h.firstAt) h.firstAt = cb.timestamp;
  if (cb.timestamp > h.updatedAt) h.updatedAt = cb.timestamp;
  if (countEvent) h.eventCount += 1;
  if (transition) applyTransition(h, transition);
  return h;
}

export function applyTransition(h: TaskHeader, t: FileTransition): void {
  if (t.from === t.to) return;
  if (t.from === null) h.fileCount += 1;
  if (t.from === 'pending') h.pendingFiles -= 1;
  if (t.from === 'failed') h.failedFiles -= 1;
  if (t.to === null) h.fileCount -= 1;
  if (t.to === 'pending') h.pendingFiles += 1;
  if (t.to === 'failed') h.failedFiles += 1;
}

/** docs/contract.md §4 status rule, in its order of precedence. */
export function deriveStatus(h: TaskHeader): TaskStatus {
  if (h.failedFiles > 0) return 'upload_failed';
  if (h.endOk && h.pendingFiles === 0) return 'completed';
  if (h.startOrEndFailed) return 'failed';
  if (h.endRank !== null) return 'ended';
  return h.service === 'recording' ? 'recording' : 'capturing';
}

/** The time a task sorts by in listings: its first callback's timestamp. */
export function sortTimeOf(h: TaskHeader): number {
  return h.firstAt;
}

/** Compares strings by UTF-8 bytes, the order DynamoDB sorts keys in. */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The task's summary, as listings and task events show it. */
export function toSummary(h: TaskHeader): TaskSummary {
  return {
    service: h.service,
    id: h.id,
    appKey: h.appKey,
    roomId: h.roomId,
    sessionId: h.sessionId,
    userId: h.userId,
    status: deriveStatus(h),
    startedAt: h.startedAt,
    endedAt: h.endedAt,
    updatedAt: h.updatedAt,
    sortAt: sortTimeOf(h),
    eventCount: h.eventCount,
    fileCount: h.fileCount,
    pendingFiles: h.pendingFiles,
    failedFiles: h.failedFiles,
  };
}

export function toTask(h: TaskHeader, files: readonly FileRecord[]): Task {
  const task: Task = {
    service: h.service,
    id: h.id,
    appKey: h.appKey,
    roomId: h.roomId,
    sessionId: h.sessionId,
    userId: h.userId,
    status: deriveStatus(h),
    startedAt: h.startedAt,
    endedAt: h.endedAt,
    updatedAt: h.updatedAt,
    extra: h.extra,
    config: h.config,
    files: [...files].sort((a, b) => compareUtf8(a.fileName, b.fileName)).map(toFileView),
    lastError: h.lastError
      ? { type: h.lastError.type, code: h.lastError.code, message: h.lastError.message, at: h.lastError.at }
      : null,
    eventCount: h.eventCount,
  };
  if (h.service === 'recording') {
    task.mode = h.mode;
    task.modeName = modeName(h.mode);
    task.startFileName = h.startFileName;
  }
  return task;
}
