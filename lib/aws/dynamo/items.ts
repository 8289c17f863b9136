// The shape of the task store's items: a task header, a file, a summary read back from a header.
import type { Callback } from '../../domain/callback.ts';
import type { TaskSummary } from '../../domain/task-store.ts';
import {
  deriveStatus,
  sortTimeOf,
  taskHead,
  type FileRecord,
  type FileState,
  type TaskHeader,
} from '../../domain/task.ts';
import type { Item, Key } from './table-client.ts';
import { Keys, SORT_AT, dayOf } from './table.ts';

/**
 * Tokens kept in an item's `inflight` map, keyed by event key: the header keeps the callback's timestamp,
 * a file also the state change the callback caused, so that a redelivery after a crash gives the header
 * the same change. Small on purpose: every byte of the header is paid at each write.
 */
export interface FileToken {
  ts: number;
  f: FileState;
  t: FileState;
}

export function holdsToken(item: Item | null, eventKey: string): boolean {
  return !!item?.inflight && Object.hasOwn(item.inflight, eventKey);
}

export function headerToItem(key: Key, h: TaskHeader, inflight: Record<string, number>): Item {
  const status = deriveStatus(h);
  const sortAt = sortTimeOf(h);
  return {
    ...key,
    kind: 'task',
    ...h,
    status,
    [SORT_AT]: sortAt,
    g1pk: h.roomId ? Keys.roomGsi(h.roomId) : undefined,
    g2pk: h.sessionId ? Keys.sessionGsi(h.sessionId) : undefined,
    g3pk: Keys.appStatusGsi(h.appKey, status),
    g4pk: Keys.dayGsi(dayOf(sortAt)),
    inflight,
  };
}

export function headerFromItem(item: Item): TaskHeader {
  return {
    service: item.service,
    id: item.id,
    identRank: item.identRank,
    appKey: item.appKey,
    roomId: item.roomId ?? null,
    sessionId: item.sessionId ?? null,
    userId: item.userId ?? null,
    mode: item.mode ?? null,
    extra: item.extra ?? null,
    configRank: item.configRank ?? null,
    config: item.config ?? null,
    startRank: item.startRank ?? null,
    startedAt: item.startedAt ?? null,
    startFileName: item.startFileName ?? null,
    endRank: item.endRank ?? null,
    endedAt: item.endedAt ?? null,
    endOk: item.endOk ?? false,
    startOrEndFailed: item.startOrEndFailed ?? false,
    lastError: item.lastError ?? null,
    firstAt: item.firstAt,
    updatedAt: item.updatedAt,
    eventCount: item.eventCount ?? 0,
    fileCount: item.fileCount ?? 0,
    pendingFiles: item.pendingFiles ?? 0,
    failedFiles: item.failedFiles ?? 0,
  };
}

export function fileToItem(key: Key, cb: Callback, f: FileRecord, inflight: Record<string, FileToken>): Item {
  return { ...key, kind: 'file', service: cb.service, taskId: cb.id, ...f, inflight };
}

export function fileFromItem(item: Item): FileRecord {
  return {
    fileName: item.fileName,
    sizeRank: item.sizeRank ?? null,
    size: item.size ?? null,
    upload: item.upload ?? null,
    firstFailureAt: item.firstFailureAt ?? null,
    attempts: item.attempts ?? 0,
  };
}

export function summaryFromItem(item: Item): TaskSummary {
  const h = headerFromItem(item);
  return {
    ...taskHead(h),
    sortAt: item[SORT_AT],
    eventCount: h.eventCount,
    fileCount: h.fileCount,
    pendingFiles: h.pendingFiles,
    failedFiles: h.failedFiles,
  };
}
