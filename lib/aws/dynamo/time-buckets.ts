// Time bucket entries (docs/task-store.md): a small index in plain items, `<kind>#<bucket>` / `<scope>#<id>` (one
// task) or `~<token>` (several, in `t`), that says which tasks something happened to or is due of in a time bucket.
// Written only when a task's bucket changes (its header records the bucket it last wrote), never moved or deleted:
// a reader checks each task's header, and TTL removes old entries. No GSI, no stream, no transaction: it runs on
// dynalite as on DynamoDB.
import type { Capacity } from '../../domain/task-store.ts';
import { noCapacity, type Item, type TableClient, type TableReader } from './table-client.ts';

/** The kinds of entries, each with its bucket width. */
const BUCKET_KINDS = {
  /** The sweeper's deadlines: header attribute `db`. */
  DUE: 5 * 60_000,
  /** A task's latest change (receiver's time): header attribute `uh`. */
  CHG: 3_600_000,
  /** A task's end (platform time of `endedAt`): header attribute `eh`. */
  END: 3_600_000,
} as const;
export type BucketKind = keyof typeof BUCKET_KINDS;

/** Days an entry is kept after its bucket begins. */
const ENTRY_TTL_DAYS = 2;

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
  const width = BUCKET_KINDS[kind];
  return Math.floor(ms / width) * width;
}

/** `<kind>#YYYY-MM-DDTHH:MM` (UTC): the partition of a bucket. */
function bucketPk(kind: BucketKind, bucket: number): string {
  return `${kind}#${new Date(bucket).toISOString().slice(0, 16)}`;
}

const scopeOf = (appKey: string) => `${appKey.length}:${appKey}`;

/** The sort key of one task's entry. */
const taskEntrySk = (t: TaskRef): string => `${scopeOf(t.appKey)}#${t.id}`;

/** The task a one-task entry's sort key names. */
function readTaskSk(sk: string): TaskRef {
  const colon = sk.indexOf(':');
  const length = Number(sk.slice(0, colon));
  const appKey = sk.slice(colon + 1, colon + 1 + length);
  return { appKey, id: sk.slice(colon + 1 + length + 1) };
}

/** The entry items that name `tasks` in a bucket: one per task, or shared ones (`~<token>`) for several. */
function entryItems(kind: BucketKind, bucket: number, tasks: readonly TaskRef[], token?: string): Item[] {
  const base = { pk: bucketPk(kind, bucket), expiresAt: Math.floor(bucket / 1000) + ENTRY_TTL_DAYS * 86_400 };
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
  token?: string,
): Promise<number> {
  const bucket = bucketStart(kind, ms);
  for (const item of entryItems(kind, bucket, tasks, token)) await table.put(item, cap);
  return bucket;
}

/** The tasks an entry item names. */
function tasksOfEntry(item: Item): TaskRef[] {
  if (typeof item.sk === 'string' && item.sk.startsWith('~'))
    return (item.t as [string, string][]).map(([appKey, id]) => ({ appKey, id }));
  return [readTaskSk(item.sk)];
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
  const width = BUCKET_KINDS[kind];
  for (let bucket = bucketStart(kind, from); bucket <= to; bucket += width) {
    for await (const item of table.queryAll(
      {
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: bucketPk(kind, bucket) } },
      },
      cap,
    ))
      for (const t of tasksOfEntry(item)) yield { bucket, ...t };
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
