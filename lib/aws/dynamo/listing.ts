// Listings of tasks through the table's keys-only indexes, newest first: which index partitions a query
// reads (a session's, a room's, an appKey's six status partitions, or one per day), each read as a stream
// of keys from where the cursor left it, the streams merged by sort time, the task headers read in
// batches and filtered. A page is bounded in items, bytes, index queries and headers read, so a filter
// that no index serves, or a long stretch of empty days, ends a page early with a cursor instead of
// outgrowing a request.
import { Buffer } from 'node:buffer';
import { QueryCommand, type DynamoDBClient, type QueryCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { TASK_STATUSES, type TaskStatus } from '../../domain/task.ts';
import {
  InvalidCursorError,
  type Capacity,
  type Page,
  type PageRequest,
  type TaskQuery,
  type TaskSummary,
} from '../../domain/task-store.ts';
import { decodeCursor, encodeTasksCursor, TasksCursor, type Position, type ResolvedQuery } from './cursors.ts';
import { batchGetItems, fromItem, summaryFromItem, type Key } from './items.ts';
import { Index, Keys, SORT_AT, dayOf } from './table.ts';

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
}

export const DEFAULT_READ_BUDGET: ReadBudget = { queriesPerPage: 64, headersPerPage: 1000 };

export interface ListingContext {
  client: DynamoDBClient;
  table: string;
  /** When the first page resolves relative times and the default window. */
  now: number;
  budget: ReadBudget;
}

const noCapacity = (): Capacity => ({ read: 0, write: 0 });
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

/**
 * One page of a listing: index keys merged newest first, their task headers read in batches of up to
 * 100, filters applied; the cursor records where each stream of index partitions stands.
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
    (stream, i) => new StreamReader(ctx.client, ctx.table, stream, q, positions ? positions[i]! : { i: 0 }, budget),
  );
  const merge = new NewestFirst(readers);
  const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
  const limit = Math.max(1, page.limit);
  const items: TaskSummary[] = [];
  let bytes = 0;
  let examined = 0;
  // Positions where the page stopped inside a batch of keys, when it did: the rest of the batch is
  // left for the next page.
  let cut: Position[] | null = null;
  const filtered =
    q.st !== undefined || q.a !== undefined || q.r !== undefined || q.sv !== undefined || q.u !== undefined;
  fill: while (items.length < limit && examined < ctx.budget.headersPerPage) {
    const before = readers.map((r) => r.position());
    const want = Math.min(100, ctx.budget.headersPerPage - examined, filtered ? 100 : limit - items.length);
    const batch = await merge.take(want);
    if (batch.length === 0) break;
    const headers = await batchGetItems(
      ctx.client,
      ctx.table,
      batch.map((e) => ({ pk: e.pk, sk: Keys.headerSk })),
      noCapacity(),
    );
    const working = before;
    for (let j = 0; j < batch.length; j++) {
      const entry = batch[j]!;
      working[entry.stream] = { i: entry.partition, s: entry.sortAt, k: entry.pk };
      examined += 1;
      const item = headers[j];
      if (item) {
        const summary = summaryFromItem(item);
        if (matches(summary, q, plan[entry.stream]!.status)) {
          items.push(summary);
          bytes += jsonBytes(summary);
        }
      }
      if (items.length >= limit || bytes >= maxBytes) {
        if (j < batch.length - 1) cut = working;
        break fill;
      }
    }
  }
  if (cut) return { items, next: encodeTasksCursor(q, cut) };
  // Ended on a batch boundary: the listing is over only if no stream holds another key.
  const over = merge.blocked() ? false : (await merge.peek()) === null && !merge.blocked();
  return {
    items,
    next: over
      ? null
      : encodeTasksCursor(
          q,
          readers.map((r) => r.position()),
        ),
  };
}

function resolveQuery(query: TaskQuery, now: number): ResolvedQuery {
  const filters = filtersOf(query);
  const byDay = !query.sessionId && !query.roomId && !query.appKey;
  let to = Math.max(0, Math.trunc(query.until ?? now + FUTURE_MS));
  // No task sorts after the day partition of tomorrow: the day stream starts there.
  if (byDay) to = Math.min(to, now + DAY_MS);
  const from = Math.max(0, Math.trunc(query.since ?? (byDay ? to - DEFAULT_LISTING_DAYS * DAY_MS : 0)));
  return { ...filters, from, to };
}

function filtersOf(query: TaskQuery): Omit<ResolvedQuery, 'from' | 'to'> {
  const f: Omit<ResolvedQuery, 'from' | 'to'> = {};
  if (query.roomId) f.r = query.roomId;
  if (query.sessionId) f.s = query.sessionId;
  if (query.appKey) f.a = query.appKey;
  if (query.status) f.st = query.status;
  if (query.service) f.sv = query.service;
  if (query.userId) f.u = query.userId;
  return f;
}

const FILTER_NAMES: Record<keyof Omit<ResolvedQuery, 'from' | 'to'>, string> = {
  r: 'roomId',
  s: 'sessionId',
  a: 'appKey',
  st: 'status',
  sv: 'service',
  u: 'userId',
};

/** The query a cursor carries, after checking that the filters given agree with it. */
function resumeQuery(query: TaskQuery, cursor: string): { q: ResolvedQuery; positions: Position[] } {
  const { q, p } = decodeCursor(cursor, TasksCursor);
  const given = filtersOf(query);
  for (const [short, value] of Object.entries(given) as [keyof typeof FILTER_NAMES, string][]) {
    if (q[short] !== value)
      throw new InvalidCursorError(`the cursor belongs to a listing with another ${FILTER_NAMES[short]} filter`);
  }
  const plan = planStreams(q);
  if (q.from > q.to || p.length !== plan.length)
    throw new InvalidCursorError('the cursor is not one this listing gave out');
  p.forEach((pos, i) => {
    if (pos === null) return;
    const inRange = pos.s === undefined || (pos.s >= q.from && pos.s <= q.to);
    if (pos.i >= plan[i]!.partitions || (pos.s === undefined) !== (pos.k === undefined) || !inRange)
      throw new InvalidCursorError('the cursor is not one this listing gave out');
  });
  return { q, positions: p };
}

/** A stream of index partitions read newest first, one after the other. */
interface StreamPlan {
  index: string;
  pkAttr: string;
  partitions: number;
  partition(i: number): string;
  /** Streams of one status partition each only report tasks still in that status (no doubles while moving). */
  status?: TaskStatus;
}

/**
 * Which index partitions a query reads: a session's or a room's, an appKey's six status partitions
 * merged (or the one of the status asked for), or else one partition per day, newest day first.
 */
function planStreams(q: ResolvedQuery): StreamPlan[] {
  const one = (index: { name: string; pk: string }, value: string): StreamPlan => ({
    index: index.name,
    pkAttr: index.pk,
    partitions: 1,
    partition: () => value,
  });
  if (q.s) return [one(Index.bySession, Keys.sessionGsi(q.s))];
  if (q.r) return [one(Index.byRoom, Keys.roomGsi(q.r))];
  if (q.a) {
    const appKey = q.a;
    return (q.st ? [q.st] : TASK_STATUSES).map((status) => ({
      ...one(Index.byAppStatus, Keys.appStatusGsi(appKey, status)),
      status,
    }));
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

function matches(s: TaskSummary, q: ResolvedQuery, streamStatus: TaskStatus | undefined): boolean {
  return (
    (q.a === undefined || s.appKey === q.a) &&
    (q.st === undefined || s.status === q.st) &&
    (streamStatus === undefined || s.status === streamStatus) &&
    (q.r === undefined || s.roomId === q.r) &&
    (q.s === undefined || s.sessionId === q.s) &&
    (q.sv === undefined || s.service === q.sv) &&
    (q.u === undefined || s.userId === q.u)
  );
}

interface IndexEntry {
  stream: number;
  partition: number;
  pk: string;
  sortAt: number;
}

/** Reads one stream of partitions in pages of index keys, from a position, within the request budget. */
class StreamReader {
  private buffer: Omit<IndexEntry, 'stream'>[] = [];
  private partition: number;
  private last: { s: number; k: string } | undefined;
  /** The current partition has no key after the buffered ones. */
  private partitionDone = false;
  private exhausted: boolean;
  /** Out of query budget with nothing buffered: the stream's next key is unknown. */
  blocked = false;

  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly plan: StreamPlan;
  private readonly q: ResolvedQuery;
  private readonly budget: { queries: number };

  constructor(
    client: DynamoDBClient,
    table: string,
    plan: StreamPlan,
    q: ResolvedQuery,
    start: Position,
    budget: { queries: number },
  ) {
    this.client = client;
    this.table = table;
    this.plan = plan;
    this.q = q;
    this.budget = budget;
    this.exhausted = start === null || start.i >= plan.partitions;
    this.partition = start?.i ?? 0;
    this.last = start?.s !== undefined && start.k !== undefined ? { s: start.s, k: start.k } : undefined;
  }

  /** The next key without taking it; null when the stream is exhausted or blocked. */
  async head(): Promise<Omit<IndexEntry, 'stream'> | null> {
    while (this.buffer.length === 0 && !this.exhausted) {
      if (this.partitionDone) {
        this.advance();
        continue;
      }
      if (this.budget.queries <= 0) {
        this.blocked = true;
        return null;
      }
      this.budget.queries -= 1;
      await this.fetch();
    }
    return this.buffer[0] ?? null;
  }

  take(): Omit<IndexEntry, 'stream'> {
    const entry = this.buffer.shift()!;
    this.last = { s: entry.sortAt, k: entry.pk };
    return entry;
  }

  /** Where the next page starts: after the last key taken (partitions known to be finished skipped). */
  position(): Position {
    let partition = this.partition;
    let last = this.last;
    if (!this.exhausted && this.buffer.length === 0 && this.partitionDone) {
      partition += 1;
      last = undefined;
    }
    if (this.exhausted || partition >= this.plan.partitions) return null;
    return last ? { i: partition, s: last.s, k: last.k } : { i: partition };
  }

  private advance(): void {
    this.partition += 1;
    this.last = undefined;
    this.partitionDone = false;
    if (this.partition >= this.plan.partitions) this.exhausted = true;
  }

  private async fetch(): Promise<void> {
    const value = this.plan.partition(this.partition);
    const input: QueryCommandInput = {
      TableName: this.table,
      IndexName: this.plan.index,
      KeyConditionExpression: `${this.plan.pkAttr} = :v AND ${SORT_AT} BETWEEN :a AND :b`,
      ExpressionAttributeValues: {
        ':v': { S: value },
        ':a': { N: String(this.q.from) },
        ':b': { N: String(this.q.to) },
      },
      ScanIndexForward: false,
      Limit: 100,
    };
    if (this.last) {
      // An index's start key is the index key and the table key of the last entry read.
      const key: Key = { pk: this.last.k, sk: Keys.headerSk };
      input.ExclusiveStartKey = marshall({ ...key, [this.plan.pkAttr]: value, [SORT_AT]: this.last.s });
    }
    const res = await this.client.send(new QueryCommand(input));
    this.buffer = (res.Items ?? []).map((raw) => {
      const item = fromItem(raw);
      return { partition: this.partition, pk: item.pk as string, sortAt: item[SORT_AT] as number };
    });
    this.partitionDone = res.LastEvaluatedKey === undefined;
    if (this.buffer.length > 0) this.blocked = false;
  }
}

/** Merges streams that are each newest first into one newest-first sequence of keys. */
class NewestFirst {
  private readonly streams: StreamReader[];

  constructor(streams: StreamReader[]) {
    this.streams = streams;
  }

  /** The next key of the merge, or null when every stream is exhausted or one is blocked. */
  async peek(): Promise<IndexEntry | null> {
    let best: IndexEntry | null = null;
    for (let i = 0; i < this.streams.length; i++) {
      const head = await this.streams[i]!.head();
      if (this.streams[i]!.blocked) return null;
      // Ties go to the lower stream index, so that every page merges in the same order.
      if (head && (best === null || head.sortAt > best.sortAt)) best = { ...head, stream: i };
    }
    return best;
  }

  async take(n: number): Promise<IndexEntry[]> {
    const taken: IndexEntry[] = [];
    while (taken.length < n) {
      const next = await this.peek();
      if (!next) break;
      this.streams[next.stream]!.take();
      taken.push(next);
    }
    return taken;
  }

  blocked(): boolean {
    return this.streams.some((s) => s.blocked);
  }
}
