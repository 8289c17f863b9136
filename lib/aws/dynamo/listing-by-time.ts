// Listings by time of change (`updatedSince`) and of end (`endedSince`), through the `CHG` and `END` hour
// buckets (docs/task-store.md, Time bucket entries) rather than an index by first callback: the buckets from
// the hour of the time asked (less the platform's reordering, for changes) to now, newest hour first, each
// bucket's entries in key order, the headers read in batches. A task is listed at the bucket its header names
// (`uh`, `eh`: its latest entry), so once only, however many hours it changed in; then it is kept when its
// `updatedAt` (or `endedAt`) is that late and the other filters hold. A page is bounded like any listing's.
import { Buffer } from 'node:buffer';
import { InvalidCursorError, type Page, type PageRequest, type TaskQuery } from '../../domain/task-store.ts';
import type { TaskSummary } from '../../domain/task-summary.ts';
import { toSummary } from '../../domain/task-parts.ts';
import { ByTimeCursor, decodeCursor, encodeCursor, type ResolvedQuery } from './cursors.ts';
import { headerParts } from './items.ts';
import { headerChangeBucket } from './listing-hours.ts';
import {
  checkResumedFilters,
  filtersOf,
  headerMatches,
  matches,
  purgeWithin,
  timeFiltersOf,
} from './listing-filters.ts';
import type { ListingContext } from './listing.ts';
import { noCapacity } from './table-client.ts';
import { BUCKET_KINDS, bucketStart, readBucketPage, tasksOfEntry, type BucketKind } from './time-buckets.ts';
import { Keys } from './table.ts';
import { verificationWithin } from './verifications.ts';

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

/** One page of a listing by time of change or of end. */
export async function listByTimePage(
  ctx: ListingContext,
  query: TaskQuery,
  page: PageRequest,
): Promise<Page<TaskSummary>> {
  let q: ResolvedQuery;
  let bucket: number;
  let after: string | null = null;
  if (page.cursor === undefined) ({ q, bucket } = resolve(query, ctx.now));
  else {
    const c = decodeCursor(page.cursor, ByTimeCursor);
    checkResumedFilters(query, c.q);
    if (c.q.us === undefined && c.q.es === undefined)
      throw new InvalidCursorError('the cursor is not one this listing gave out');
    ({ q, b: bucket, k: after } = c);
  }
  const kind = KIND;
  const oldest = firstBucket(q, ctx.now);
  const width = BUCKET_KINDS[kind].width;
  const limit = Math.max(1, page.limit);
  const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
  const items: TaskSummary[] = [];
  let bytes = 0;
  let examined = 0;
  let queries = 0;
  const cap = noCapacity();
  // A shared entry (`~`: the tasks one batch created) names several tasks: a page may stop within it, after
  // `done` of its tasks, so that pages keep their limit and their budget of headers.
  let done = 0;
  const next = (within = 0) =>
    encodeCursor({ q, b: bucket, k: after, ...(within > 0 ? { n: within } : {}) } satisfies ByTimeCursor);
  if (page.cursor !== undefined) done = decodeCursor(page.cursor, ByTimeCursor).n ?? 0;
  while (bucket >= oldest) {
    if (items.length >= limit || bytes >= maxBytes) return { items, next: next(done) };
    if (examined >= ctx.budget.headersPerPage || queries >= ctx.budget.queriesPerPage)
      return { items, next: next(done) };
    queries += 1;
    const want = Math.min(ENTRIES_PER_READ, ctx.budget.headersPerPage - examined);
    const read = await readBucketPage(ctx.table, kind, bucket, after, want, cap);
    // The tasks this read examines, entry by entry, within the page's budget of headers.
    const named = read.items.map((item, i) => tasksOfEntry(item, bucket).slice(i === 0 ? done : 0));
    let room = ctx.budget.headersPerPage - examined;
    const taken = named.map((tasks) => {
      const t = tasks.slice(0, Math.max(0, room));
      room -= t.length;
      return t;
    });
    const keys = taken.flat().map((t) => ({ pk: Keys.taskPk(t.id), sk: Keys.headerSk(t.appKey) }));
    const headers = keys.length ? await ctx.table.getMany(keys, cap, false) : [];
    let h = 0;
    for (let i = 0; i < read.items.length; i++) {
      const before = i === 0 ? done : 0;
      for (let j = 0; j < taken[i]!.length; j++) {
        const header = headers[h++];
        examined += 1;
        done = before + j + 1;
        // Listed at the bucket its header names only: once, however many hours hold an entry of it.
        if (!header || headerChangeBucket(header) !== bucket || !headerMatches(header, q)) continue;
        if (!(await purgeWithin(ctx.table, header, q, cap))) continue;
        const parts = headerParts(header);
        if (!parts || parts.eventCount === 0) continue;
        const summary = toSummary(parts);
        if (!rowMatches(summary, q) || !(await verificationWithin(ctx.table, summary, q, cap))) continue;
        items.push(summary);
        bytes += jsonBytes(summary);
        const full = items.length >= limit || bytes >= maxBytes;
        if (full && j < named[i]!.length - 1) return { items, next: next(done) };
      }
      // The budget ran out within this entry: the next page goes on from its next task.
      if (taken[i]!.length < named[i]!.length) return { items, next: next(before + taken[i]!.length) };
      after = read.items[i]!.sk;
      done = 0;
      const full = items.length >= limit || bytes >= maxBytes;
      if (full && (i < read.items.length - 1 || read.more)) return { items, next: next() };
      if (full) break;
    }
    if (read.more) continue;
    bucket -= width;
    after = null;
    if (items.length >= limit || bytes >= maxBytes) return { items, next: bucket >= oldest ? next() : null };
  }
  return { items, next: null };
}
