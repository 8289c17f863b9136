// The DynamoDB task store: `TaskStore` (lib/domain/task-store.ts) on one table (./table.ts, layout in
// docs/task-store.md). The write path is in ./apply-callback.ts and ./deliveries.ts, the reads in
// ./queries.ts, ./read-pages.ts and ./listing.ts, the item shapes in ./items.ts, DynamoDB's limits in
// ./limits.ts and the calls themselves, with capacity accounting, in ./table-client.ts.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  allEvents,
  type ApplyResult,
  type Capacity,
  type DeliveredCallback,
  type Page,
  type PageRequest,
  type QuarantineApplied,
  type QuarantineEntry,
  type QuarantineQuery,
  type StoredEvent,
  type TaskPage,
  type TaskQuery,
  type TaskRef,
  type TaskStore,
  type TaskSummary,
} from '../../domain/task-store.ts';
import type { Task } from '../../domain/task.ts';
import { WritePath } from './apply-callback.ts';
import { Deliveries } from './deliveries.ts';
import { TaskQueries } from './queries.ts';
import { DynamoTaskReader, type ReadBudget } from './read-pages.ts';
import { TableClient } from './table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from './table.ts';

export { ContentionError } from './table-client.ts';

export interface DynamoTaskStoreOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Days a raw callback is kept before the TTL deletes it (default DEFAULT_RAW_EVENT_TTL_DAYS). */
  rawEventTtlDays?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** Optimistic-concurrency attempts before giving up with a retryable error (default 16). */
  maxAttempts?: number;
  /** Callback keys a file item records inline before further keys get items of their own (default 4). */
  inlineKeys?: number;
  /** Task headers the write path remembers, so that file callbacks need not read them (default 10,000; 0: none). */
  knownHeaders?: number;
  /** File items the write path remembers, so that the next callback of a file need not read them (default 5,000). */
  knownFiles?: number;
  /** Requests a page of a listing may cost (listing.ts). */
  readBudget?: Partial<ReadBudget>;
}

/** Everything in one page: whole reads are built on the paginated ones, so that the CLI and the read API agree. */
const WHOLE = { limit: Number.POSITIVE_INFINITY } as const;

export class DynamoTaskStore implements TaskStore {
  private readonly writes: WritePath;
  private readonly deliveries: Deliveries;
  private readonly queries: TaskQueries;
  private readonly reader: DynamoTaskReader;
  /** The table and the raw archive's retention it was built with. */
  readonly settings: { tableName: string; rawEventTtlDays: number };

  constructor(opts: DynamoTaskStoreOptions) {
    this.settings = {
      tableName: opts.tableName,
      rawEventTtlDays: opts.rawEventTtlDays ?? DEFAULT_RAW_EVENT_TTL_DAYS,
    };
    const table = new TableClient(opts.client, opts.tableName);
    const now = opts.now ?? Date.now;
    this.queries = new TaskQueries(table, now);
    this.reader = new DynamoTaskReader({
      client: opts.client,
      tableName: opts.tableName,
      now,
      budget: opts.readBudget,
    });
    this.deliveries = new Deliveries(table, this.settings.rawEventTtlDays, now);
    this.writes = new WritePath(table, this.deliveries, {
      maxAttempts: opts.maxAttempts ?? 16,
      inlineKeys: opts.inlineKeys ?? 4,
      knownHeaders: opts.knownHeaders ?? 10_000,
      knownFiles: opts.knownFiles ?? 5_000,
      readAfterWrite: (appKey, id, cap) => this.queries.readAfterWrite(appKey, id, cap),
    });
  }

  applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writes.applyCallback(input);
  }

  quarantine(entry: QuarantineEntry): Promise<Capacity> {
    return this.deliveries.quarantine(entry);
  }

  getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    return this.reader.getTaskPage(ref, page);
  }

  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    return this.reader.listTasksPage(query, page);
  }

  listEventsPage(ref: TaskRef, page: PageRequest): Promise<Page<StoredEvent> | null> {
    return this.reader.listEventsPage(ref, page);
  }

  async getTask(id: string, appKey?: string): Promise<Task | null> {
    return (await this.getTaskPage({ id, appKey }, WHOLE))?.task ?? null;
  }

  async listEvents(id: string, appKey?: string): Promise<StoredEvent[]> {
    return (await allEvents(this, { id, appKey })) ?? [];
  }

  async *listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let cursor: string | undefined;
    do {
      const page = await this.listTasksPage(query, { limit: Math.min(remaining, 500), cursor });
      for (const summary of page.items) yield summary;
      remaining -= page.items.length;
      cursor = page.next ?? undefined;
    } while (cursor && remaining > 0);
  }

  listQuarantine(query?: QuarantineQuery): AsyncIterable<QuarantineEntry> {
    return this.queries.listQuarantine(query);
  }

  countQuarantined(taskId: string): Promise<number> {
    return this.queries.countQuarantined(taskId);
  }

  markQuarantineApplied(
    entry: Pick<QuarantineEntry, 'receivedAt' | 'messageId'>,
    applied: QuarantineApplied,
  ): Promise<boolean> {
    return this.deliveries.markQuarantineApplied(entry, applied);
  }
}
