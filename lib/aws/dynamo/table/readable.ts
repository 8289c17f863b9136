// What a person reads in the DynamoDB console: plain attributes beside the write path's own. A header carries its
// task id, appKey, service and status (the status the read API reports), and the times a person looks at in ISO
// 8601 beside their numbers; a file item its name and state. Written by the writes that change them, read by
// nothing in the code: the code reads the keys and the facts (docs/inspecting-tasks.md).
import type { TaskStatus } from '../../../domain/task.ts';
import type { FileState } from '../../../domain/task.ts';
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

/** Epoch milliseconds as ISO 8601 (UTC) to the second, as a person reads it (the number beside keeps the rest). */
export const isoOf = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/** The times a person looks at in a header, epoch ms (null: not known yet). */
export interface ReadableTimes {
  startedAt: number | null;
  endedAt: number | null;
  updatedAt: number | null;
}

/** A header item with its plain attributes (`status`: as the read API reports the item). */
export function readableHeader(
  item: Item,
  ids: { id: string; appKey: string },
  status: TaskStatus,
  times: ReadableTimes,
): Item {
  const out: Item = { ...item, [READABLE.taskId]: ids.id, [READABLE.appKey]: ids.appKey, [READABLE.status]: status };
  for (const [ms, iso] of [
    ['startedAt', READABLE.startedAtIso],
    ['endedAt', READABLE.endedAtIso],
    ['updatedAt', READABLE.updatedAtIso],
  ] as const) {
    const at = times[ms];
    if (at !== null) out[iso] = isoOf(at);
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
