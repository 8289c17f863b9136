// Listings by time of change (`updatedSince`) and of end (`endedSince`), through the `CHG` and `END` hour
// buckets (docs/task-store.md, Time bucket entries) rather than an index by first callback: the buckets from
// the hour of the time asked (less the platform's reordering, for changes) to now, newest hour first, each
// bucket's entries in key order, the headers read in batches. A task is listed at the bucket its header names
// (`uh`, `eh`: its latest entry), so once only, however many hours it changed in; then it is kept when its
// `updatedAt` (or `endedAt`) is that late and the other filters hold. A page is bounded like any listing's.
import { Buffer } from 'node:buffer';
import {
  InvalidCursorError,
  type Capacity,
  type Page,
  type PageRequest,
  type TaskQuery,
} from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import { ByTimeCursor, decodeCursor, encodeCursor, type ResolvedQuery } from '../table/cursors.ts';
import { headerParts } from '../table/items.ts';
import { headerChangeBucket } from '../time/listing-hours.ts';
import {
  checkResumedFilters,
  filtersOf,
  headerMatches,
  matches,
  purgeWithin,
  timeFiltersOf,
} from './listing-filters.ts';
import type { ListingContext } from './listing.ts';
import { noCapacity, type Item } from '../table/table-client.ts';
import {
  BUCKET_KINDS,
  bucketStart,
  readBucketPage,
  tasksOfEntry,
  type BucketEntry,
  type BucketKind,
} from '../time/time-buckets.ts';
import { Keys } from '../table/table.ts';
import { verificationWithin } from '../storage/verifications.ts';

/**
 * How far before the time asked a change may have been received: the platform's clock and the receiver's
 * differ by a few seconds, and a `CHG` bucket is the receiver's hour of the change. A task that ended at or
 * after a time changed (its end arrived) no earlier than this before it, so `CHG` buckets serve `endedSince`
 * too: its header's `uh` names its latest change, at or after that.
 */
const CHANGE_REORDER_MS = 5 * 60_000;
/** Listings by time read the buckets of the task's latest change (`uh`). */
const KIND: BucketKind = 'CHG';
/** Without `until`, the sort-time window reaches this far ahead of now. */
const FUTURE_MS = 366 * 86_400_000;
/** Entry items one request reads. */
const ENTRIES_PER_READ = 100;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/** Whether a cursor is one of a listing by time of change or of end. */
export function isByTimeCursor(cursor: string | undefined): boolean {
  if (cursor === undefined) return false;
  try {
    decodeCursor(cursor, ByTimeCursor);
    return true;
  } catch {
    return false;
  }
}

/** The oldest bucket a listing reads: the hour asked, no older than entries are kept (TTL). */
function firstBucket(q: ResolvedQuery, now: number): number {
  const asked = (q.es ?? q.us!) - CHANGE_REORDER_MS;
  return bucketStart(KIND, Math.max(0, asked, now - BUCKET_KINDS[KIND].ttlMs));
}

function resolve(query: TaskQuery, now: number): { q: ResolvedQuery; bucket: number } {
  const q: ResolvedQuery = {
    ...filtersOf(query),
    ...timeFiltersOf(query, now),
    from: Math.max(0, Math.trunc(query.since ?? 0)),
    to: Math.max(0, Math.trunc(query.until ?? now + FUTURE_MS)),
  };
  if (query.endedSince !== undefined) q.es = Math.max(0, Math.trunc(query.endedSince));
  if (query.updatedSince !== undefined) q.us = Math.max(0, Math.trunc(query.updatedSince));
  return { q, bucket: bucketStart(KIND, now) };
}

/** Whether a task's row answers a listing by time: its times, then the listing's other filters. */
function rowMatches(s: TaskSummary, q: ResolvedQuery): boolean {
  return (
    (q.us === undefined || s.updatedAt >= q.us) &&
    (q.es === undefined || (s.endedAt !== null && s.endedAt >= q.es)) &&
    s.sortAt >= q.from &&
    s.sortAt <= q.to &&
    matches(s, q)
  );
}

/**
 * A listing by time as it walks back through its buckets: where it stands, the page it fills, and what it has spent
 * of the page's budget.
 */
interface Walk {
  ctx: ListingContext;
  q: ResolvedQuery;
  /** The bucket being read, and the last entry read of it (null: none yet). */
  bucket: number;
  after: string | null;
  /**
   * A shared entry (`~`: the tasks one batch created) names several tasks: a page may stop within it, after `done`
   * of its tasks, so that pages keep their limit and their budget of headers.
   */
  done: number;
  oldest: number;
  limit: number;
  maxBytes: number;
  items: TaskSummary[];
  bytes: number;
  examined: number;
  queries: number;
  cap: Capacity;
}

/** One read of a bucket's entries: the tasks each names, those of each this page examines, and their headers. */
interface EntriesRead {
  read: Awaited<ReturnType<typeof readBucketPage>>;
  named: BucketEntry[][];
  taken: BucketEntry[][];
  headers: (Item | null)[];
}

/** One page of a listing by time of change or of end. */
export async function listByTimePage(
  ctx: ListingContext,
  query: TaskQuery,
  page: PageRequest,
): Promise<Page<TaskSummary>> {
  const w = startWalk(ctx, query, page);
  while (w.bucket >= w.oldest) {
    if (isFull(w) || outOfBudget(w)) return pageOf(w, w.done);
    const entries = await readEntries(w);
    const stopped = await takeEntries(w, entries);
    if (stopped) return stopped;
    if (entries.read.more) continue;
    w.bucket -= BUCKET_KINDS[KIND].width;
    w.after = null;
    if (isFull(w)) return { items: w.items, next: w.bucket >= w.oldest ? cursorOf(w) : null };
  }
  return { items: w.items, next: null };
}

/** The walk of a first page (from the current bucket), or of a page after one (where its cursor says). */
function startWalk(ctx: ListingContext, query: TaskQuery, page: PageRequest): Walk {
  let q: ResolvedQuery;
  let bucket: number;
  let after: string | null = null;
  let done = 0;
  if (page.cursor === undefined) ({ q, bucket } = resolve(query, ctx.now));
  else {
    const c = decodeCursor(page.cursor, ByTimeCursor);
    checkResumedFilters(query, c.q);
    if (c.q.us === undefined && c.q.es === undefined)
      throw new InvalidCursorError('the cursor is not one this listing gave out');
    ({ q, b: bucket, k: after } = c);
    done = c.n ?? 0;
  }
  return {
    ctx,
    q,
    bucket,
    after,
    done,
    oldest: firstBucket(q, ctx.now),
    limit: Math.max(1, page.limit),
    maxBytes: page.maxBytes ?? Number.POSITIVE_INFINITY,
    items: [],
    bytes: 0,
    examined: 0,
    queries: 0,
    cap: noCapacity(),
  };
}

const isFull = (w: Walk): boolean => w.items.length >= w.limit || w.bytes >= w.maxBytes;

const outOfBudget = (w: Walk): boolean =>
  w.examined >= w.ctx.budget.headersPerPage || w.queries >= w.ctx.budget.queriesPerPage;

/** The cursor of where the walk stands, `within` tasks into the entry after `after`. */
const cursorOf = (w: Walk, within = 0): string =>
  encodeCursor({ q: w.q, b: w.bucket, k: w.after, ...(within > 0 ? { n: within } : {}) } satisfies ByTimeCursor);

const pageOf = (w: Walk, within = 0): Page<TaskSummary> => ({ items: w.items, next: cursorOf(w, within) });

/** The next entries of the bucket, and the headers of the tasks they name that this page examines. */
async function readEntries(w: Walk): Promise<EntriesRead> {
  w.queries += 1;
  const want = Math.min(ENTRIES_PER_READ, w.ctx.budget.headersPerPage - w.examined);
  const read = await readBucketPage(w.ctx.table, { kind: KIND, bucket: w.bucket, after: w.after }, want, w.cap);
  // The tasks this read examines, entry by entry, within the page's budget of headers.
  const named = read.items.map((item, i) => tasksOfEntry(item, w.bucket).slice(i === 0 ? w.done : 0));
  let room = w.ctx.budget.headersPerPage - w.examined;
  const taken = named.map((tasks) => {
    const t = tasks.slice(0, Math.max(0, room));
    room -= t.length;
    return t;
  });
  const keys = taken.flat().map((t) => ({ pk: Keys.taskPk(t.id), sk: Keys.headerSk(t.appKey) }));
  const headers = keys.length ? await w.ctx.table.getMany(keys, w.cap, false) : [];
  return { read, named, taken, headers };
}

/** Lists the tasks of the entries read that the listing keeps; the page, once it ends within them. */
async function takeEntries(w: Walk, { read, named, taken, headers }: EntriesRead): Promise<Page<TaskSummary> | null> {
  let h = 0;
  for (let i = 0; i < read.items.length; i++) {
    const before = i === 0 ? w.done : 0;
    for (let j = 0; j < taken[i]!.length; j++) {
      const header = headers[h++];
      w.examined += 1;
      w.done = before + j + 1;
      const summary = await listedRow(w, header);
      if (!summary) continue;
      w.items.push(summary);
      w.bytes += jsonBytes(summary);
      if (isFull(w) && j < named[i]!.length - 1) return pageOf(w, w.done);
    }
    // The budget ran out within this entry: the next page goes on from its next task.
    if (taken[i]!.length < named[i]!.length) return pageOf(w, before + taken[i]!.length);
    w.after = read.items[i]!.sk;
    w.done = 0;
    const full = isFull(w);
    if (full && (i < read.items.length - 1 || read.more)) return pageOf(w);
    if (full) break;
  }
  return null;
}

/** A task's row, when the listing keeps it. */
async function listedRow(w: Walk, header: Item | null | undefined): Promise<TaskSummary | null> {
  // Listed at the bucket its header names only: once, however many hours hold an entry of it.
  if (!header || headerChangeBucket(header) !== w.bucket || !headerMatches(header, w.q)) return null;
  if (!(await purgeWithin(w.ctx.table, header, w.q, w.cap))) return null;
  const parts = headerParts(header);
  if (!parts || parts.eventCount === 0) return null;
  const summary = toSummary(parts);
  if (!rowMatches(summary, w.q) || !(await verificationWithin(w.ctx.table, summary, w.q, w.cap))) return null;
  return summary;
}
