// Paginated reads of the task table: a task with one page of its files, one page of a task's stored
// callbacks, one page of a listing of tasks. Each page is bounded in items, in bytes and, for listings,
// in DynamoDB requests, so that no request of the read API can outgrow a Lambda response or time-out.
//
// Cursors are opaque to callers: base64url of a small JSON object saying where the next page starts
// (the last file name or event rank returned; for listings, the resolved query and a position in each
// index partition stream). They are checked on the way in, never trusted to address another partition.
import { Buffer } from 'node:buffer';
import {
  GetItemCommand,
  QueryCommand,
  type AttributeValue,
  type DynamoDBClient,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import * as v from 'valibot';
import { toFileView, toTask, TASK_STATUSES, type TaskStatus } from '../../domain/task.ts';
import {
  InvalidCursorError,
  type Capacity,
  type Page,
  type PageRequest,
  type StoredEvent,
  type TaskPage,
  type TaskQuery,
  type TaskReader,
  type TaskRef,
  type TaskSummary,
} from '../../domain/task-store.ts';
import { SERVICES } from '../../queue-message.ts';
import {
  batchGetItems,
  eventFromItem,
  fileFromItem,
  headerFromItem,
  summaryFromItem,
  type Item,
  type Key,
} from './items.ts';
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

export interface DynamoTaskReaderOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Clock, for tests. */
  now?: () => number;
  budget?: Partial<ReadBudget>;
}

const noCapacity = (): Capacity => ({ read: 0, write: 0 });
const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

export class DynamoTaskReader implements TaskReader {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly now: () => number;
  private readonly budget: ReadBudget;

  constructor(opts: DynamoTaskReaderOptions) {
    this.client = opts.client;
    this.table = opts.tableName;
    this.now = opts.now ?? Date.now;
    this.budget = { ...DEFAULT_READ_BUDGET, ...opts.budget };
  }

  async getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, FilesCursor).f;
    const pk = Keys.taskPk(ref.id);
    const [header, files] = await Promise.all([
      this.header(pk),
      this.partitionPage(pk, Keys.filePrefix, after, page, (item) => fileFromItem(item), toFileView),
    ]);
    if (!header || (ref.appKey !== undefined && header.appKey !== ref.appKey)) return null;
    const last = files.items.at(-1);
    return {
      task: toTask(headerFromItem(header), files.items),
      nextFilesCursor: files.more && last ? encodeCursor({ f: last.fileName } satisfies FilesCursor) : null,
    };
  }

  async listEventsPage(ref: TaskRef, page: PageRequest): Promise<Page<StoredEvent> | null> {
    const after = page.cursor === undefined ? null : decodeCursor(page.cursor, EventsCursor).e;
    const pk = Keys.taskPk(ref.id);
    const [header, events] = await Promise.all([
      this.header(pk),
      this.partitionPage(
        pk,
        Keys.eventPrefix,
        after,
        page,
        (item) => ({ rank: sortKeySuffix(item, Keys.eventPrefix), event: eventFromItem(item) }),
        (e) => e.event,
      ),
    ]);
    if (!header || (ref.appKey !== undefined && header.appKey !== ref.appKey)) return null;
    const last = events.items.at(-1);
    return {
      items: events.items.map((e) => e.event),
      next: events.more && last ? encodeCursor({ e: last.rank } satisfies EventsCursor) : null,
    };
  }

  async listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    const { q, positions } =
      page.cursor === undefined
        ? { q: resolveQuery(query, this.now()), positions: undefined }
        : resumeQuery(query, page.cursor);
    if (q.from > q.to) return { items: [], next: null };
    const plan = planStreams(q);
    // Enough for a first key of every stream, so that each page moves on.
    const budget = { queries: Math.max(this.budget.queriesPerPage, plan.length + 1) };
    const readers = plan.map(
      (stream, i) => new StreamReader(this.client, this.table, stream, q, positions ? positions[i]! : { i: 0 }, budget),
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
    fill: while (items.length < limit && examined < this.budget.headersPerPage) {
      const before = readers.map((r) => r.position());
      const want = Math.min(100, this.budget.headersPerPage - examined, filtered ? 100 : limit - items.length);
      const batch = await merge.take(want);
      if (batch.length === 0) break;
      const headers = await batchGetItems(
        this.client,
        this.table,
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

  // -------------------------------------------------------------------------------------------------

  private async header(pk: string): Promise<Item | null> {
    const res = await this.client.send(
      new GetItemCommand({ TableName: this.table, Key: marshall({ pk, sk: Keys.headerSk }), ConsistentRead: true }),
    );
    return res.Item ? unmarshall(res.Item) : null;
  }

  /**
   * Items of one task partition whose sort key starts with `prefix`, in sort-key order, after the one
   * whose sort key is `prefix + after`: at most `page.limit`, and no more once their JSON (as `view`
   * gives it) reaches `page.maxBytes`. One item more than the limit is read to know whether any follows.
   */
  private async partitionPage<T>(
    pk: string,
    prefix: string,
    after: string | null,
    page: PageRequest,
    map: (item: Item) => T,
    view: (value: T) => unknown,
  ): Promise<{ items: T[]; more: boolean }> {
    const maxBytes = page.maxBytes ?? Number.POSITIVE_INFINITY;
    const items: T[] = [];
    let bytes = 0;
    let start: Record<string, AttributeValue> | undefined =
      after === null ? undefined : marshall({ pk, sk: prefix + after });
    do {
      const wanted = page.limit - items.length + 1;
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)',
          ExpressionAttributeValues: { ':pk': { S: pk }, ':p': { S: prefix } },
          ExclusiveStartKey: start,
          ...(Number.isFinite(wanted) ? { Limit: wanted } : {}),
        }),
      );
      const found = res.Items ?? [];
      for (let j = 0; j < found.length; j++) {
        if (items.length >= page.limit) return { items, more: true };
        const value = map(unmarshall(found[j]!));
        items.push(value);
        bytes += jsonBytes(view(value));
        if (bytes >= maxBytes) return { items, more: j < found.length - 1 || res.LastEvaluatedKey !== undefined };
      }
      start = res.LastEvaluatedKey;
    } while (start && items.length <= page.limit);
    return { items, more: false };
  }
}

function sortKeySuffix(item: Item, prefix: string): string {
  return String(item.sk).slice(prefix.length);
}

// ---------------------------------------------------------------------------------------------------
// Cursors

/** Longest cursor accepted: far above any this store makes, far below any request limit. */
const MAX_CURSOR_CHARS = 8192;
/** A sort key holds at most 1024 bytes, a partition key 2048. */
const SortKeyPart = v.pipe(
  v.string(),
  v.check((s) => Buffer.byteLength(s, 'utf8') <= 1024),
);

const FilesCursor = v.object({ f: SortKeyPart });
type FilesCursor = v.InferOutput<typeof FilesCursor>;
const EventsCursor = v.object({ e: SortKeyPart });
type EventsCursor = v.InferOutput<typeof EventsCursor>;

const Filter = v.optional(v.pipe(v.string(), v.minLength(1)));
/** A listing's query as resolved on its first page: filters and the absolute time window. */
const ResolvedQuery = v.object({
  r: Filter,
  s: Filter,
  a: Filter,
  st: v.optional(v.picklist(TASK_STATUSES)),
  sv: v.optional(v.picklist(SERVICES)),
  u: Filter,
  from: v.pipe(v.number(), v.integer(), v.minValue(0)),
  to: v.pipe(v.number(), v.integer(), v.minValue(0)),
});
type ResolvedQuery = v.InferOutput<typeof ResolvedQuery>;

/**
 * Where a stream of index partitions stands: partition `i`, after the entry (`s` = sortAt, `k` = the
 * task's pk) when one of it was taken already; null once the stream is exhausted.
 */
const Position = v.nullable(
  v.object({
    i: v.pipe(v.number(), v.integer(), v.minValue(0)),
    s: v.optional(v.pipe(v.number(), v.integer())),
    k: v.optional(
      v.pipe(
        v.string(),
        v.startsWith('TASK#'),
        v.check((s) => Buffer.byteLength(s, 'utf8') <= 2048),
      ),
    ),
  }),
);
type Position = v.InferOutput<typeof Position>;
const TasksCursor = v.object({ q: ResolvedQuery, p: v.array(Position) });
type TasksCursor = v.InferOutput<typeof TasksCursor>;

function encodeCursor(value: object): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function encodeTasksCursor(q: ResolvedQuery, p: Position[]): string {
  return encodeCursor({ q, p } satisfies TasksCursor);
}

function decodeCursor<S extends v.GenericSchema>(text: string, schema: S): v.InferOutput<S> {
  const invalid = () => new InvalidCursorError('the cursor is not one this listing gave out');
  if (text.length === 0 || text.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(text)) throw invalid();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const parsed = v.safeParse(schema, value);
  if (!parsed.success) throw invalid();
  return parsed.output;
}

// ---------------------------------------------------------------------------------------------------
// Listings

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
      const item = unmarshall(raw);
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
