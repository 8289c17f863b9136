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
  /** Tokens an item may hold before a write checks which of them can go (default 4). */
  pruneThreshold?: number;
  /** Optimistic-concurrency attempts before giving up with a retryable error (default 16). */
  maxAttempts?: number;
}

export class DynamoTaskStore implements TaskStore {
  private readonly writes: WritePath;
  private readonly reads: TaskQueries;

  constructor(opts: DynamoTaskStoreOptions) {
    const table = new TableClient(opts.client, opts.tableName);
    const now = opts.now ?? Date.now;
    this.writes = new WritePath(table, {
      ttlDays: opts.rawEventTtlDays ?? 90,
      now,
      pruneThreshold: opts.pruneThreshold ?? 4,
      maxAttempts: opts.maxAttempts ?? 16,
    });
    this.reads = new TaskQueries(table, now);
  }

  applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writes.applyCallback(input);
  }

  quarantine(entry: QuarantineEntry): Promise<Capacity> {
    return this.writes.quarantine(entry);
  }

  getTask(id: string): Promise<Task | null> {
    return this.reads.getTask(id);
  }

  listEvents(id: string): Promise<StoredEvent[]> {
    return this.reads.listEvents(id);
  }

  listTasks(query: TaskQuery): AsyncIterable<TaskSummary> {
    return this.reads.listTasks(query);
  }

  listQuarantine(opts?: { sinceDays?: number; limit?: number }): AsyncIterable<QuarantineEntry> {
    return this.reads.listQuarantine(opts);
  }
}
