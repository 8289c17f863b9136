// Listings of tasks through the table's keys-only indexes, newest first: which index partitions a query
// reads (an appKey's session, room or whole, or one per day), each read as a stream of keys from where the
// cursor left it, the streams merged by sort time, the task headers read in batches, each task added up
// from its items (its status and counts are computed on read) and filtered. A page is bounded in items,
// bytes, index queries and headers read, so a filter that no index serves, or a long stretch of empty
// days, ends a page early with a cursor instead of outgrowing a request.
import { Buffer } from 'node:buffer';
import { InvalidCursorError, type Page, type PageRequest, type TaskQuery } from '../../../domain/task-store.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import { decodeCursor, encodeTasksCursor, TasksCursor, type Position, type ResolvedQuery } from '../table/cursors.ts';
import { NewestFirst, StreamReader, type StreamPlan } from './index-streams.ts';
import { toSummary } from '../../../domain/task-parts.ts';
import { headerParts } from '../table/items.ts';
import {
  checkResumedFilters,
  filtersOf,
  hasTimeFilter,
  headerMatches,
  purgeWithin,
  matches,
  timeFiltersOf,
} from './listing-filters.ts';
import { MAX_PARTITION_KEY_BYTES } from '../table/limits.ts';
import type { TaskQueries } from './queries.ts';
import { noCapacity, type Item, type TableReader } from '../table/table-client.ts';
import { Index, Keys, dayOf } from '../table/table.ts';
import { verificationWithin } from '../storage/verifications.ts';
import { inParallel } from '../../../in-parallel.ts';

const DAY_MS = 86_400_000;
/** Without `since`, a listing that is not narrowed by an index key covers this many days. */
export const DEFAULT_LISTING_DAYS = 30;
/** Without `until`, listings reach this far ahead of now (clocks of senders run ahead at times). */
const FUTURE_MS = 366 * DAY_MS;

export interface ReadBudget {
  /** Index queries one listing page may send; past it the page ends early with a cursor. */
  queriesPerPage: number;
  /** Task headers one listing page may read (filters that no index serves discard some). */
  headersPerPage: number;
  /**
   * Recorded callback keys one page of a task's events may look up (raw bodies past their retention are
   * gone, and a task may have thousands): past it the page ends early with a cursor.
   */
  eventKeysPerPage: number;
}

export const DEFAULT_READ_BUDGET: ReadBudget = { queriesPerPage: 64, headersPerPage: 1000, eventKeysPerPage: 500 };

export interface ListingContext {
  table: TableReader;
  /** Adds a task up from its items. */
  tasks: TaskQueries;
  /** When the first page resolves relative times and the default window. */
  now: number;
  budget: ReadBudget;
}

/** Tasks whose items a page reads at the same time. */
const TASK_READS_IN_PARALLEL = 8;
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * One page of a listing: index keys merged newest first, their task headers read in batches of up to
 * 100, each task added up from its items, filters applied; the cursor records where each stream of index
 * partitions stands.
 */
export async function listTasksPage(
  ctx: ListingContext,
  query: TaskQuery,
  page: PageRequest,
): Promise<Page<TaskSummary>> {
  const { q, positions } =
    page.cursor === undefined
      ? { q: resolveQuery(query, ctx.now), positions: undefined }
      : resumeQuery(query, page.cursor);
  if (q.from > q.to) return { items: [], next: null };
  const plan = planStreams(q);
  // Enough for a first key of every stream, so that each page moves on.
  const budget = { queries: Math.max(ctx.budget.queriesPerPage, plan.length + 1) };
  const readers = plan.map(
    (stream, i) => new StreamReader(ctx.table, stream, q, positions ? positions[i]! : { i: 0 }, budget),
  );
  const fill: Fill = {
    ctx,
    q,
    readers,
    merge: new NewestFirst(readers),
    limit: Math.max(1, page.limit),
    maxBytes: page.maxBytes ?? Number.POSITIVE_INFINITY,
    items: [],
    bytes: 0,
    examined: 0,
  };
  const cut = await fillPage(fill);
  if (cut) return { items: fill.items, next: encodeTasksCursor(q, cut) };
  return { items: fill.items, next: await nextCursor(fill) };
}

/** A page being filled: its streams of index keys merged, the tasks listed so far, and the headers examined. */
interface Fill {
  ctx: ListingContext;
  q: ResolvedQuery;
  readers: StreamReader[];
  merge: NewestFirst;
  limit: number;
  maxBytes: number;
  items: TaskSummary[];
  bytes: number;
  examined: number;
}

/** Whether a listing has a filter that no index serves: it reads full batches of keys, whatever the page's limit. */
function isFiltered(q: ResolvedQuery): boolean {
  return (
    q.st !== undefined ||
    q.a !== undefined ||
    q.r !== undefined ||
    q.sv !== undefined ||
    q.u !== undefined ||
    q.vf !== undefined ||
    hasTimeFilter(q)
  );
}

/**
 * Lists tasks batch of keys by batch until the page is full or its headers are spent. Returns the positions where
 * the page stopped inside a batch of keys, when it did: the rest of the batch is left for the next page.
 */
async function fillPage(f: Fill): Promise<Position[] | null> {
  const { ctx, q, readers, merge } = f;
  const filtered = isFiltered(q);
  while (f.items.length < f.limit && f.examined < ctx.budget.headersPerPage) {
    const before = readers.map((r) => r.position());
    const want = Math.min(100, ctx.budget.headersPerPage - f.examined, filtered ? 100 : f.limit - f.items.length);
    const batch = await merge.take(want);
    if (batch.length === 0) break;
    const headers = await ctx.table.getMany(
      batch.map((e) => ({ pk: e.pk, sk: e.sk })),
      noCapacity(),
      false,
    );
    const summaries = await summariesOf(ctx.tasks, ctx.table, headers, q);
    const working = before;
    for (let j = 0; j < batch.length; j++) {
      const entry = batch[j]!;
      working[entry.stream] = { i: entry.partition, s: entry.sortAt, k: entry.pk, h: entry.sk };
      f.examined += 1;
      const summary = summaries[j];
      if (summary) {
        if (matches(summary, q)) {
          f.items.push(summary);
          f.bytes += jsonBytes(summary);
        }
      }
      if (f.items.length >= f.limit || f.bytes >= f.maxBytes) return j < batch.length - 1 ? working : null;
    }
  }
  return null;
}

/** The cursor of a page that ended on a batch boundary: none once no stream holds another key. */
async function nextCursor({ q, readers, merge }: Fill): Promise<string | null> {
  const over = merge.blocked() ? false : (await merge.peek()) === null && !merge.blocked();
  return over
    ? null
    : encodeTasksCursor(
        q,
        readers.map((r) => r.position()),
      );
}

/**
 * Each header's task added up from its items (null for none, a task no callback has been recorded in,
 * or one whose header already fails a filter: its items are not read).
 */
async function summariesOf(
  _tasks: TaskQueries,
  table: TableReader,
  headers: (Item | null)[],
  q: ResolvedQuery,
): Promise<(TaskSummary | null)[]> {
  return inParallel(headers, TASK_READS_IN_PARALLEL, async (header) => {
    if (!header || !headerMatches(header, q) || !(await purgeWithin(table, header, q))) return null;
    // The header keeps the task's counts.
    const counted = headerParts(header);
    const summary = counted.eventCount > 0 ? toSummary(counted) : null;
    return summary && (await verificationWithin(table, summary, q)) ? summary : null;
  });
}

/**
 * Whether a listing goes day by day through the byDay index: one that names no appKey, as rooms and
 * sessions are indexed under their appKey. Without `since` it covers the last DEFAULT_LISTING_DAYS days.
 */
export function listsDayByDay(query: Pick<TaskQuery, 'appKey'>): boolean {
  return !query.appKey;
}

function resolveQuery(query: TaskQuery, now: number): ResolvedQuery {
  const filters = { ...filtersOf(query), ...timeFiltersOf(query, now) };
  const byDay = listsDayByDay(query);
  let to = Math.max(0, Math.trunc(query.until ?? now + FUTURE_MS));
  // No task sorts after the day partition of tomorrow: the day stream starts there.
  if (byDay) to = Math.min(to, now + DAY_MS);
  const from = Math.max(0, Math.trunc(query.since ?? (byDay ? to - DEFAULT_LISTING_DAYS * DAY_MS : 0)));
  return { ...filters, from, to };
}

/** The query a cursor carries, after checking that the filters given agree with it. */
function resumeQuery(query: TaskQuery, cursor: string): { q: ResolvedQuery; positions: Position[] } {
  const { q, p } = decodeCursor(cursor, TasksCursor);
  checkResumedFilters(query, q);
  const plan = planStreams(q);
  if (q.from > q.to || p.length !== plan.length)
    throw new InvalidCursorError('the cursor is not one this listing gave out');
  p.forEach((pos, i) => {
    if (pos === null) return;
    const inRange = pos.s === undefined || (pos.s >= q.from && pos.s <= q.to);
    const taken = [pos.s, pos.k, pos.h].filter((x) => x !== undefined).length;
    if (pos.i >= plan[i]!.partitions || (taken !== 0 && taken !== 3) || !inRange)
      throw new InvalidCursorError('the cursor is not one this listing gave out');
  });
  return { q, positions: p };
}

/**
 * Which index partitions a query reads: with an appKey, the session's, the room's or else the appKey's
 * own; without, one partition per day, newest day first.
 */
function planStreams(q: ResolvedQuery): StreamPlan[] {
  const one = (index: { name: string; pk: string }, value: string): StreamPlan => ({
    index: index.name,
    pkAttr: index.pk,
    // No task is stored under a key longer than DynamoDB allows (../table/limits.ts): such a partition is empty.
    partitions: Buffer.byteLength(value, 'utf8') <= MAX_PARTITION_KEY_BYTES ? 1 : 0,
    partition: () => value,
  });
  if (q.a !== undefined) {
    if (q.s) return [one(Index.bySession, Keys.sessionGsi(q.a, q.s))];
    if (q.r) return [one(Index.byRoom, Keys.roomGsi(q.a, q.r))];
    return [one(Index.byApp, Keys.appGsi(q.a))];
  }
  const newest = Math.floor(q.to / DAY_MS) * DAY_MS;
  const oldest = Math.floor(q.from / DAY_MS) * DAY_MS;
  return [
    {
      index: Index.byDay.name,
      pkAttr: Index.byDay.pk,
      partitions: Math.max(0, (newest - oldest) / DAY_MS + 1),
      partition: (i) => Keys.dayGsi(dayOf(newest - i * DAY_MS)),
    },
  ];
}
