// The facts of time as items keep them (docs/task-store.md): a header's `ca`, `st`, `sf`, `sa`, `nLost`, `db`, `sl`,
// carried over by every put of the header as its counts are; a file's `pw` and `lo`,
// carried by the record (lib/domain/task.ts FileRecord) through every put of the file.
import type { TaskTime } from '../../../domain/deadlines.ts';
import type { FileRecord } from '../../../domain/task.ts';
import type { QueryCommandInput } from '@aws-sdk/client-dynamodb';
import type { Item } from '../table/table-client.ts';
import { Keys } from '../table/table.ts';

/**
 * Header attributes of time, by what they hold. A header is written at every count update and kept under the
 * 1 KB of a write unit: the ones every header has are whole minutes (`ca`, `db`), the others ms.
 */
export const TIME_ATTRS = {
  /** Minutes (rounded up) of the task's last change; its hour is that of its `CHG` entry (./listing-hours.ts). */
  changedAt: 'ca',
  stalledSince: 'st',
  /** The latest callback (`updatedAt`, ms) the stall was measured from: a callback later than it resumes the task. */
  stalledFrom: 'sf',
  settledAt: 'sa',
  lost: 'nLost',
  /** Minutes of the start of the bucket of the task's armed DUE entry. */
  armed: 'db',
  /** A sweep's lease on the task (its expiry). */
  lease: 'sl',
} as const;

const MINUTE = 60_000;
/** Whole minutes of a time that is a whole number of minutes (a bucket's start). */
export const toMinutes = (ms: number): number => Math.floor(ms / MINUTE);
/** Whole minutes of a time, rounded up. */
export const minutesAfter = (ms: number): number => Math.ceil(ms / MINUTE);

/** The attributes of time a header put carries over from the item it replaces. */
export function carriedTime(previous: Item | null): Item {
  const out: Item = {};
  if (!previous) return out;
  for (const attr of Object.values(TIME_ATTRS)) if (previous[attr] !== undefined) out[attr] = previous[attr];
  return out;
}

const numberOrNull = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const minutesOrNull = (v: unknown): number | null => (typeof v === 'number' ? v * MINUTE : null);

/** What a header keeps about time. */
export function timeOf(header: Item): TaskTime {
  return {
    changedAt: minutesOrNull(header[TIME_ATTRS.changedAt]),
    stalledSince: numberOrNull(header[TIME_ATTRS.stalledSince]),
    stalledFrom: numberOrNull(header[TIME_ATTRS.stalledFrom]),
    settledAt: numberOrNull(header[TIME_ATTRS.settledAt]),
    lost: numberOrNull(header[TIME_ATTRS.lost]) ?? 0,
    armed: minutesOrNull(header[TIME_ATTRS.armed]),
  };
}

/** A file item's marks of the facts of time: when it was warned about, and its purgeAt once lost. */
export const FILE_MARK_ATTRS = { warnedAt: 'pw', lostAt: 'lo' } as const;

/** A file record's marks as item attributes (`pw`, `lo`). */
export function fileMarksToItem(f: Pick<FileRecord, 'warnedAt' | 'lostAt'>): Item {
  const out: Item = {};
  if (f.warnedAt !== undefined) out[FILE_MARK_ATTRS.warnedAt] = f.warnedAt;
  if (f.lostAt !== undefined) out[FILE_MARK_ATTRS.lostAt] = f.lostAt;
  return out;
}

/** A file item's marks, as its record keeps them. */
export function fileMarksOf(item: Item): Pick<FileRecord, 'warnedAt' | 'lostAt'> {
  const warned = item[FILE_MARK_ATTRS.warnedAt];
  const lost = item[FILE_MARK_ATTRS.lostAt];
  return {
    ...(typeof warned === 'number' ? { warnedAt: warned } : {}),
    ...(typeof lost === 'number' ? { lostAt: lost } : {}),
  };
}

/**
 * The Query of a task's files whose winning upload failed (the others filtered out); `notLost`: those not lost
 * yet only. The sweeper reads them whole, a listing by purge window only their first failure.
 */
export function failedFilesQuery(
  appKey: string,
  id: string,
  opts: { notLost?: boolean; projection?: string; consistent?: boolean } = {},
): Omit<QueryCommandInput, 'TableName'> {
  return {
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :f)',
    FilterExpression: opts.notLost ? '#u.#ok = :no AND attribute_not_exists(#lo)' : '#u.#ok = :no',
    ExpressionAttributeNames: {
      '#u': 'upload',
      '#ok': 'ok',
      ...(opts.notLost ? { '#lo': FILE_MARK_ATTRS.lostAt } : {}),
    },
    ExpressionAttributeValues: {
      ':pk': { S: Keys.taskPk(id) },
      ':f': { S: Keys.fileSk(appKey, '') },
      ':no': { BOOL: false },
    },
    ...(opts.projection ? { ProjectionExpression: opts.projection } : {}),
    ...(opts.consistent ? { ConsistentRead: true } : {}),
  };
}
