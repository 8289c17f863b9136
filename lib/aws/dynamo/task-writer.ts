// The write side of the DynamoDB task store: a callback applied to its task exactly once, a callback kept
// aside in the quarantine, and an entry of the quarantine marked as applied. Apart from the reads
// (./task-store.ts adds them) so that the worker, which builds only this, bundles no listing and no query
// of an index: its role is granted exactly the requests its bundle holds (infra/serverless.test.ts).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineApplied,
  QuarantineEntry,
  TaskWriter,
} from '../../domain/task-store.ts';
import { WritePath } from './apply-callback.ts';
import { Deliveries } from './deliveries.ts';
import { readAfterWrite } from './queries.ts';
import { TableClient } from './table-client.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from './table.ts';

export interface DynamoTaskWriterOptions {
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
}

export class DynamoTaskWriter implements TaskWriter {
  private readonly writes: WritePath;
  private readonly deliveries: Deliveries;
  /** The table and the raw archive's retention it was built with. */
  readonly settings: { tableName: string; rawEventTtlDays: number };

  constructor(opts: DynamoTaskWriterOptions) {
    this.settings = {
      tableName: opts.tableName,
      rawEventTtlDays: opts.rawEventTtlDays ?? DEFAULT_RAW_EVENT_TTL_DAYS,
    };
    const table = new TableClient(opts.client, opts.tableName);
    this.deliveries = new Deliveries(table, this.settings.rawEventTtlDays, opts.now ?? Date.now);
    this.writes = new WritePath(table, this.deliveries, {
      maxAttempts: opts.maxAttempts ?? 16,
      inlineKeys: opts.inlineKeys ?? 4,
      knownHeaders: opts.knownHeaders ?? 10_000,
      knownFiles: opts.knownFiles ?? 5_000,
      readAfterWrite: (appKey, id, cap) => readAfterWrite(table, appKey, id, cap),
    });
  }

  applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writes.applyCallback(input);
  }

  quarantine(entry: QuarantineEntry): Promise<Capacity> {
    return this.deliveries.quarantine(entry);
  }

  markQuarantineApplied(
    entry: Pick<QuarantineEntry, 'receivedAt' | 'messageId'>,
    applied: QuarantineApplied,
  ): Promise<boolean> {
    return this.deliveries.markQuarantineApplied(entry, applied);
  }
}
