// The task model and its state rules (docs/contract.md §4), expressed as a merge of facts that does not
// depend on order. A task is a header (`TaskHeader`: identity, config, start, end) and one record per file
// (`FileRecord`); every field of either is a join of the facts its callbacks carry (a minimum, a maximum,
// an "or"), and each keeps a `Tally` (latest error, latest time) of the callbacks it absorbed, so applying
// callbacks in any order, and any of them again, reaches the same records. Counts are the distinct
// callbacks the store recorded; a task is added up from its parts in ./task-parts.ts.
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import type { CallbackType, Service } from '../platform/services.ts';
import type { Callback } from './callback.ts';
import { clipConfig, clipText } from './header-text.ts';
import type { TaskFileCounts } from './task-file-counts.ts';

/** Task statuses (docs/contract.md §4): `recording` is the recording service's, `capturing` the screenshot's. */
export const TASK_STATUSES = ['recording', 'capturing', 'ended', 'completed', 'upload_failed', 'failed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export type FileUpload = 'pending' | 'uploaded' | 'failed';

/**
 * A total order on events: timestamp, then event key. Encoded as a string that sorts the same way, so
 * that the same comparison works in TypeScript and in a DynamoDB condition expression.
 */
export function rankOf(timestamp: number, key: string): string {
  return `${String(Math.max(0, Math.trunc(timestamp))).padStart(16, '0')}|${key}`;
}

/** A callback whose code is not 200, as the task reports the latest one. */
export interface ErrorFact {
  rank: string;
  type: CallbackType;
  code: number;
  message: string | null;
  at: number;
}

/**
 * The task's own facts: identity, config, start and end. Every field is a join (min/max by rank, "or"),
 * so a callback applied twice, or callbacks applied in any order, give the same header. Counts, status,
 * `updatedAt` and `lastError` are not here: they are joins over every item of the task (see `Tally`).
 */
export interface TaskHeader {
  service: Service;
  id: string;
  /** Identity fields come from the best-ranked event: a start first, then the earliest. */
  identRank: string;
  /** The identity callback's timestamp: the time the task sorts by in listings. */
  identAt: number;
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
  /** The earliest start or end callback whose code is not 200 (the time and error of `task.failed`). */
  failure: ErrorFact | null;
}

/**
 * What a part of the task (its header, a file) keeps of the callbacks it absorbed: the latest one whose
 * code is not 200 and the latest timestamp. The task's `lastError` and `updatedAt` are the join of its parts.
 */
export interface Tally {
  lastError: ErrorFact | null;
  updatedAt: number | null;
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
  /** Distinct upload callbacks seen for this file: counted by whoever knows which were seen, not by the join. */
  attempts: number;
  /** The sweeper's marks (lib/domain/deadlines.ts): when it warned of the purge, the purgeAt it found passed. */
  warnedAt?: number;
  lostAt?: number;
}

/** A file's upload state, or null before any callback names it. */
export type FileState = FileUpload | null;

export interface FileView {
  fileName: string;
  size: number | null;
  url: string | null;
  /** A failed file whose purgeAt has passed is `lost` (lib/domain/deadlines.ts). */
  upload: FileUpload | 'lost';
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
  /** Its files by upload state, from its header's counts: the same on every page of its files. */
  counts: TaskFileCounts;
  mode?: number | null;
  modeName?: string | null;
  startFileName?: string | null;
  files: FileView[];
  lastError: { type: number; code: number; message: string | null; at: number } | null;
  eventCount: number;
  /** docs/contract.md §4, facts of time: null when the task is not stalled / not settled. */
  stalledSince: number | null;
  settledAt: number | null;
}

// ---------------------------------------------------------------------------------------------------
// Files

/** The file a callback concerns, if any. */
export function fileNameOf(cb: Partial<Pick<Callback, 'file' | 'upload'>>): string | null {
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
 * Joins one callback's facts into a file record. A join: applying a callback again changes nothing, and
 * callbacks commute. `attempts` is left as it is: the caller counts distinct upload callbacks.
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
    upload: upload === 'failed' && f.lostAt !== undefined ? 'lost' : upload,
    code: f.upload?.code ?? null,
    message: f.upload?.message ?? null,
    attempts: f.attempts,
    purgeAt: upload === 'failed' && f.firstFailureAt !== null ? f.firstFailureAt + FILE_HOLD_MS : null,
  };
}

// ---------------------------------------------------------------------------------------------------
// Header

/** A change of one file's state. */
export interface FileTransition {
  from: FileState;
  to: FileState;
}

const identPriority = (type: CallbackType) => (type === 1 ? '0' : '1');

/** How a callback ranks as the source of a task's identity: a start first, then the earliest (lower wins). */
export function identRankOf(cb: Callback): string {
  return identPriority(cb.type) + rankOf(cb.timestamp, cb.key);
}

/**
 * Joins one callback's identity and config into the header (creating it if need be): what any callback of
 * the task says of it, its start and end facts aside.
 */
export function applyIdentity(header: TaskHeader | null, cb: Callback): TaskHeader {
  const rank = rankOf(cb.timestamp, cb.key);
  const identRank = identRankOf(cb);
  const h: TaskHeader = header
    ? { ...header }
    : {
        service: cb.service,
        id: cb.id,
        identRank,
        identAt: cb.timestamp,
        appKey: cb.appKey,
        roomId: cb.roomId,
        sessionId: cb.sessionId,
        userId: cb.userId,
        mode: cb.mode,
        extra: clipText(cb.extra),
        configRank: null,
        config: null,
        startRank: null,
        startedAt: null,
        startFileName: null,
        endRank: null,
        endedAt: null,
        endOk: false,
        startOrEndFailed: false,
        failure: null,
      };
  if (identRank < h.identRank) {
    h.identRank = identRank;
    h.identAt = cb.timestamp;
    h.appKey = cb.appKey;
    h.roomId = cb.roomId;
    h.sessionId = cb.sessionId;
    h.userId = cb.userId;
    h.mode = cb.mode;
    h.extra = clipText(cb.extra);
  }
  if (cb.config) {
    const configRank = identPriority(cb.type) + rank;
    if (h.configRank === null || configRank < h.configRank) {
      h.configRank = configRank;
      h.config = clipConfig(cb.config);
    }
  }
  return h;
}

/** Joins one callback's identity, config, start and end facts into the header (creating it if need be). */
export function applyToHeader(header: TaskHeader | null, cb: Callback): TaskHeader {
  const rank = rankOf(cb.timestamp, cb.key);
  const h = applyIdentity(header, cb);
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
  if ((cb.type === 1 || cb.type === 3) && cb.code !== 200) {
    h.startOrEndFailed = true;
    if (h.failure === null || rank < h.failure.rank)
      h.failure = { rank, type: cb.type, code: cb.code, message: clipText(cb.message), at: cb.timestamp };
  }
  return h;
}

/** Whether two headers hold the same facts (the config and the failure follow their ranks, which stand for them). */
export function sameHeader(a: TaskHeader, b: TaskHeader): boolean {
  for (const k of Object.keys(a) as (keyof TaskHeader)[])
    if (k !== 'config' && k !== 'failure' && a[k] !== b[k]) return false;
  return a.failure?.rank === b.failure?.rank;
}

/** Whether a callback's facts live in the header (start and end) rather than in a file. */
export function isHeaderEvent(cb: Callback): boolean {
  return cb.type === 1 || cb.type === 3;
}

// ---------------------------------------------------------------------------------------------------
// Tallies

export const emptyTally = (): Tally => ({ lastError: null, updatedAt: null });

/** Joins one callback into a tally. */
export function tallyCallback(t: Tally | null, cb: Callback): Tally {
  const next: Tally = t ? { ...t } : emptyTally();
  const rank = rankOf(cb.timestamp, cb.key);
  if (cb.code !== 200 && (next.lastError === null || rank > next.lastError.rank)) {
    next.lastError = { rank, type: cb.type, code: cb.code, message: clipText(cb.message), at: cb.timestamp };
  }
  if (next.updatedAt === null || cb.timestamp > next.updatedAt) next.updatedAt = cb.timestamp;
  return next;
}

/** The join of two tallies. */
export function joinTallies(a: Tally, b: Tally): Tally {
  const lastError =
    a.lastError === null
      ? b.lastError
      : b.lastError === null || a.lastError.rank > b.lastError.rank
        ? a.lastError
        : b.lastError;
  const updatedAt =
    a.updatedAt === null ? b.updatedAt : b.updatedAt === null ? a.updatedAt : Math.max(a.updatedAt, b.updatedAt);
  return { lastError, updatedAt };
}

/** Compares strings by UTF-8 bytes, the order DynamoDB sorts keys in. */
export function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
