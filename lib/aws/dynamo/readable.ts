// What a person reads in the DynamoDB console: plain attributes beside the write path's own. A header carries its
// task id, appKey, service and status (the status the read API reports), and the times a person looks at in ISO
// 8601 beside their numbers; a file item its name and state. Written by the writes that change them, read by
// nothing in the code: the code reads the keys and the facts (docs/inspecting-tasks.md).
import type { TaskStatus } from '../../domain/task.ts';
import type { FileState } from '../../domain/task.ts';
import type { Item } from './table-client.ts';

/** The plain attributes of a header and of a file item, each named once. */
export const READABLE = {
  taskId: 'taskId',
  appKey: 'appKey',
  status: 'status',
  startedAtIso: 'startedIso',
  endedAtIso: 'endedIso',
  updatedAtIso: 'updatedIso',
  fileName: 'fileName',
  fileState: 'state',
} as const;

/** Epoch milliseconds as ISO 8601 (UTC). */
export const isoOf = (ms: number): string => new Date(ms).toISOString();

/** A header item with its plain attributes (`status`: as the read API reports the item). */
export function readableHeader(item: Item, ids: { id: string; appKey: string }, status: TaskStatus | null): Item {
  const out: Item = { ...item, [READABLE.taskId]: ids.id, [READABLE.appKey]: ids.appKey };
  if (status !== null) out[READABLE.status] = status;
  for (const [ms, iso] of [
    ['startedAt', READABLE.startedAtIso],
    ['endedAt', READABLE.endedAtIso],
    ['updatedAt', READABLE.updatedAtIso],
  ] as const) {
    if (typeof item[ms] === 'number') out[iso] = isoOf(item[ms]);
    else delete out[iso];
  }
  return out;
}

/** A file item's plain attributes: its name, and its state (`lost`: failed past its purge time, as read). */
export function readableFile(fileName: string, state: FileState, lost: boolean): Item {
  return {
    [READABLE.fileName]: fileName,
    [READABLE.fileState]: lost && state === 'failed' ? 'lost' : (state ?? 'pending'),
  };
}
