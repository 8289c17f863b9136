// Time bucket entries (docs/task-store.md, Time bucket entries): a small index in plain items, `<kind>#<bucket>` /
// `<scope>#<id>` (one task) or `~<token>` (several, in `t`), that names the tasks something happened to or is due
// of in a bucket of time. `DUE` (5 minutes) serves the sweeper, `CHG` (1 hour) the listings by time of change and
// of end. Written only when a task's bucket changes (its header records the bucket it last wrote, `db`, or the
// time that names it, `ca`), never moved or deleted: a reader checks each task's header, and TTL removes old
// entries. No GSI, no stream, no transaction: it runs on dynalite as on DynamoDB.
import { DUE_BUCKET_MS } from '../../../domain/deadlines.ts';
import type { Capacity } from '../../../domain/task-store.ts';
import { noCapacity, type Item, type TableClient, type TableReader } from '../table/table-client.ts';
import { readScope, scopeOf } from '../table/table.ts';

const HOUR_MS = 3_600_000;

/**
 * Each kind's bucket width, and how long an entry outlives its bucket before TTL may remove it: a `DUE` entry is
 * read within minutes, but kept as long as SQS keeps a message (14 days), so that a sweeper down that long still
 * finds every deadline once it runs again; `CHG` entries serve listings by time of change and of end 90 days back
 * (tasks are kept for good, whatever the retention of their raw callbacks).
 */
export const BUCKET_KINDS = {
  DUE: { width: DUE_BUCKET_MS, ttlMs: 14 * 86_400_000 },
  CHG: { width: HOUR_MS, ttlMs: 90 * 86_400_000 },
} as const;
export type BucketKind = keyof typeof BUCKET_KINDS;

/** At most this many tasks in one shared entry (it stays under the 1 KB of a write unit). */
const MAX_TASKS_PER_ENTRY = 25;

export interface TaskRef {
  appKey: string;
  id: string;
}

/** A task named in a bucket: the bucket's start (ms) and the task. */
export interface BucketEntry extends TaskRef {
  bucket: number;
}

/** The start of the bucket of kind `kind` that `ms` falls in. */
export function bucketStart(kind: BucketKind, ms: number): number {
  const width = BUCKET_KINDS[kind].width;
  return Math.floor(ms / width) * width;
}

/** `<kind>#YYYY-MM-DDTHH:MM` (UTC): the partition of a bucket. */
export const bucketPk = (kind: BucketKind, bucket: number): string =>
  `${kind}#${new Date(bucket).toISOString().slice(0, 16)}`;

/** The sort key of one task's entry: with the appKey, the longest key a task's id is in (../table/limits.ts). */
export const taskEntrySk = (t: TaskRef): string => `${scopeOf(t.appKey)}#${t.id}`;

/**
 * The entry items that name `tasks` in the bucket `ms` falls in: one per task, or shared ones (`~<token>`) for
 * several.
 */
export function bucketEntryItems(kind: BucketKind, ms: number, tasks: readonly TaskRef[], token?: string): Item[] {
  const bucket = bucketStart(kind, ms);
  const { width, ttlMs } = BUCKET_KINDS[kind];
  const base = { pk: bucketPk(kind, bucket), expiresAt: Math.floor((bucket + width + ttlMs) / 1000) };
  if (tasks.length === 1 || token === undefined) return tasks.map((t) => ({ ...base, sk: taskEntrySk(t) }));
  const items: Item[] = [];
  for (let i = 0; i < tasks.length; i += MAX_TASKS_PER_ENTRY) {
    const chunk = tasks.slice(i, i + MAX_TASKS_PER_ENTRY);
    items.push({ ...base, sk: `~${token}#${i / MAX_TASKS_PER_ENTRY}`, t: chunk.map((t) => [t.appKey, t.id]) });
  }
  return items;
}

/** Writes the entries naming `tasks` in the bucket `ms` falls in (a put each: written again, they are the same). */
export async function putBucketEntries(
  table: TableClient,
  kind: BucketKind,
  ms: number,
  tasks: readonly TaskRef[],
  cap: Capacity,
): Promise<number> {
  const bucket = bucketStart(kind, ms);
  for (const item of bucketEntryItems(kind, bucket, tasks)) await table.put(item, cap);
  return bucket;
}

/** The tasks an entry item names (one, or several in a `~` entry), in the bucket it is in. */
export function tasksOfEntry(item: Item, bucket: number): BucketEntry[] {
  if (typeof item.sk !== 'string') return [];
  if (item.sk.startsWith('~')) {
    const named: unknown = item.t;
    if (!Array.isArray(named)) return [];
    return named
      .filter((t): t is [string, string] => Array.isArray(t) && typeof t[0] === 'string' && typeof t[1] === 'string')
      .map(([appKey, id]) => ({ bucket, appKey, id }));
  }
  const { appKey, rest } = readScope(item.sk, '');
  return rest.startsWith('#') ? [{ bucket, appKey, id: rest.slice(1) }] : [];
}

/** Where a read of a bucket's entries goes on: the bucket of a kind, after the entry `after` (null: from the first). */
export interface BucketPosition {
  kind: BucketKind;
  bucket: number;
  after: string | null;
}

/** One page of a bucket's entry items, in sort-key order after `at.after`. */
export async function readBucketPage(
  table: TableReader,
  at: BucketPosition,
  limit: number,
  cap: Capacity = noCapacity(),
): Promise<{ items: Item[]; last: string | null; more: boolean }> {
  const { kind, bucket, after } = at;
  const items: Item[] = [];
  const pk = bucketPk(kind, bucket);
  for await (const item of table.queryAll(
    {
      KeyConditionExpression: after === null ? 'pk = :pk' : 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: { ':pk': { S: pk }, ...(after === null ? {} : { ':after': { S: after } }) },
      Limit: limit + 1,
    },
    cap,
  )) {
    items.push(item);
    if (items.length > limit) break;
  }
  const more = items.length > limit;
  if (more) items.pop();
  return { items, last: items.at(-1)?.sk ?? after, more };
}

/**
 * The tasks named in each bucket of `kind` from the one `from` falls in to the one `to` falls in, oldest first:
 * one Query per bucket, never a Scan. A task named twice is yielded twice; the reader checks its header.
 */
export async function* readBucketEntries(
  table: TableReader,
  kind: BucketKind,
  from: number,
  to: number,
  cap: Capacity = noCapacity(),
): AsyncIterable<BucketEntry> {
  const width = BUCKET_KINDS[kind].width;
  for (let bucket = bucketStart(kind, from); bucket <= to; bucket += width) {
    for await (const item of table.queryAll(
      { KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': { S: bucketPk(kind, bucket) } } },
      cap,
    ))
      yield* tasksOfEntry(item, bucket);
  }
}

/** The position item of a kind's sweep: the last bucket every sweep has gone through. */
const positionKey = (kind: BucketKind) => ({ pk: `SWEEP#${kind}`, sk: '#' });

/** The last bucket swept through (null: never). */
export async function readSweepPosition(table: TableReader, kind: BucketKind, cap: Capacity): Promise<number | null> {
  const item = await table.get(positionKey(kind), cap);
  return typeof item?.b === 'number' ? item.b : null;
}

/** Moves the sweep position to `bucket`, on condition that it only grows (false: another sweep is further). */
export async function moveSweepPosition(
  table: TableClient,
  kind: BucketKind,
  bucket: number,
  cap: Capacity,
): Promise<boolean> {
  return table.putIf(
    { ...positionKey(kind), b: bucket },
    'attribute_not_exists(b) OR b < :b',
    { ':b': { N: String(bucket) } },
    cap,
  );
}
