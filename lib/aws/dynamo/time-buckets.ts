// Time bucket entries (docs/task-store.md, Time bucket entries): a small index in plain items that names the
// tasks something happens to in a bucket of time. `DUE` (5 minutes) serves the sweeper, `CHG` and `END` (1 hour)
// the listings by time of change and of end. An entry is never moved or deleted: the header says which bucket
// its task's latest entry is in (`db`, `uh`, `eh`), so a stale entry is recognised there, and TTL removes it.
import { DUE_BUCKET_MS } from '../../domain/deadlines.ts';
import type { Capacity } from '../../domain/task-store.ts';
import { noCapacity, type Item, type TableClient, type TableReader } from './table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS, readScope, scopeOf } from './table.ts';

const HOUR_MS = 3_600_000;

/**
 * Each kind's bucket width, and how long an entry outlives its bucket before TTL may remove it: a `DUE` entry is
 * read within minutes; `CHG` and `END` entries serve listings by time as far back as raw callbacks are kept.
 */
export const BUCKET_KINDS = {
  DUE: { width: DUE_BUCKET_MS, ttlMs: 2 * 86_400_000 },
  CHG: { width: HOUR_MS, ttlMs: DEFAULT_RAW_EVENT_TTL_DAYS * 86_400_000 },
  END: { width: HOUR_MS, ttlMs: DEFAULT_RAW_EVENT_TTL_DAYS * 86_400_000 },
} as const;
export type BucketKind = keyof typeof BUCKET_KINDS;

/** Tasks one shared (`~`) entry names at most. */
const TASKS_PER_SHARED_ENTRY = 25;

/** The start of the bucket of `kind` that `ms` falls in. */
export const bucketStart = (kind: BucketKind, ms: number): number =>
  Math.floor(ms / BUCKET_KINDS[kind].width) * BUCKET_KINDS[kind].width;

/**
 * An hour bucket as a header keeps it in `uh` and `eh`: its number of hours since the epoch (6 digits, where its
 * start in ms takes 13), for the header's bytes are paid at every write of it.
 */
export const hourNumber = (bucket: number): number => Math.floor(bucket / HOUR_MS);

/** `<kind>#YYYY-MM-DDTHH:MM` (UTC) of a bucket's start. */
export const bucketPk = (kind: BucketKind, bucket: number): string =>
  `${kind}#${new Date(bucket).toISOString().slice(0, 16)}`;

/** The sort key of an entry that names one task. */
const entrySk = (appKey: string, id: string): string => `${scopeOf(appKey)}#${id}`;

/** A task an entry names, and the bucket it is in. */
export interface BucketEntry {
  bucket: number;
  appKey: string;
  id: string;
}

/** The tasks an entry item names (one, or several in a `~` entry). */
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

/**
 * Writes one entry naming `tasks` in a bucket: a task alone under its own key, several (at most
 * TASKS_PER_SHARED_ENTRY) under `~<token>`. A put of the same entry again changes nothing a reader sees.
 */
export async function writeBucketEntry(
  table: TableClient,
  kind: BucketKind,
  bucket: number,
  tasks: readonly { appKey: string; id: string }[],
  token: string,
  cap: Capacity = noCapacity(),
): Promise<void> {
  if (tasks.length === 0) return;
  if (tasks.length > TASKS_PER_SHARED_ENTRY)
    throw new Error(`one entry names at most ${TASKS_PER_SHARED_ENTRY} tasks, not ${tasks.length}`);
  const expiresAt = Math.floor((bucket + BUCKET_KINDS[kind].width + BUCKET_KINDS[kind].ttlMs) / 1000);
  const pk = bucketPk(kind, bucket);
  const item: Item =
    tasks.length === 1
      ? { pk, sk: entrySk(tasks[0]!.appKey, tasks[0]!.id), expiresAt }
      : { pk, sk: `~${token}`, t: tasks.map((t) => [t.appKey, t.id]), expiresAt };
  await table.put(item, cap);
}

/** One page of a bucket's entry items, in sort-key order after `after` (null: from the first). */
export async function readBucketPage(
  table: TableReader,
  kind: BucketKind,
  bucket: number,
  after: string | null,
  limit: number,
  cap: Capacity = noCapacity(),
): Promise<{ items: Item[]; last: string | null; more: boolean }> {
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
 * The tasks named in each bucket of `kind` from `from` to `to` (inclusive, oldest first), one Query per
 * bucket: a task named twice is yielded twice, and the reader checks its header.
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
