// The DynamoDB task store: `TaskStore` (lib/domain/task-store.ts) on one table (./table.ts). The write
// path is in ./apply-callback.ts, the reads in ./queries.ts, the item shapes in ./items.ts, DynamoDB's
// limits in ./limits.ts and the calls themselves, with capacity accounting, in ./table-client.ts.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineEntry,
  StoredEvent,
  TaskQuery,
  TaskStore,
  TaskSummary,
} from '../../domain/task-store.ts';
import type { Task } from '../../domain/task.ts';
import { WritePath } from './apply-callback.ts';
import { Deliveries } from './deliveries.ts';
import { TaskQueries } from './queries.ts';
import { TableClient } from './table-client.ts';

export { ContentionError } from './table-client.ts';

export interface DynamoTaskStoreOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Days a raw callback is kept before the TTL deletes it (default 90). */
  rawEventTtlDays?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** Optimistic-concurrency attempts before giving up with a retryable error (default 16). */
  maxAttempts?: number;
  /** Callback keys a file item records inline before further keys get items of their own (default 4). */
  inlineKeys?: number;
  /** Task headers the write path remembers, so that file callbacks need not read them (default 10,000; 0: none). */
  knownHeaders?: number;
}

export class DynamoTaskStore implements TaskStore {
  private readonly writes: WritePath;
  private readonly deliveries: Deliveries;
  private readonly reads: TaskQueries;

  constructor(opts: DynamoTaskStoreOptions) {
    const table = new TableClient(opts.client, opts.tableName);
    const now = opts.now ?? Date.now;
    this.reads = new TaskQueries(table, now);
    this.deliveries = new Deliveries(table, opts.rawEventTtlDays ?? 90, now);
    this.writes = new WritePath(table, this.deliveries, {
      maxAttempts: opts.maxAttempts ?? 16,
      inlineKeys: opts.inlineKeys ?? 4,
      knownHeaders: opts.knownHeaders ?? 10_000,
      readAfterWrite: (appKey, id, cap) => this.reads.readAfterWrite(appKey, id, cap),
    });
  }

  applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writes.applyCallback(input);
  }

  quarantine(entry: QuarantineEntry): Promise<Capacity> {
    return this.deliveries.quarantine(entry);
  }

  getTask(id: string, appKey?: string): Promise<Task | null> {
    return this.reads.getTask(id, appKey);
  }

  listEvents(id: string, appKey?: string): Promise<StoredEvent[]> {
    return this.reads.listEvents(id, appKey);
  }

  listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    return this.reads.listTasks(query);
  }

  listQuarantine(opts?: { sinceDays?: number; limit?: number }): AsyncIterable<QuarantineEntry> {
    return this.reads.listQuarantine(opts);
  }
}
