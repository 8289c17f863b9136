// The DynamoDB task store: `TaskStore` (lib/domain/task-store.ts) on one table (../table/table.ts, layout in
// docs/task-store.md). The writes are ../write/task-writer.ts (the write path in ../write/apply-callback.ts and
// ../write/deliveries.ts), the reads in ./queries.ts, ./read-pages.ts and ./listing.ts, the item shapes in
// ../table/items.ts, DynamoDB's limits in ../table/limits.ts and the calls themselves, with capacity accounting, in
// ../table/table-client.ts.
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  EventsPage,
  Page,
  PageRequest,
  QuarantineApplied,
  QuarantineEntry,
  QuarantineQuery,
  StoredEvent,
  TaskPage,
  TaskQuery,
  TaskRef,
  TaskStore,
} from '../../../domain/task-store.ts';
import type { AppliedBatch, BatchContext, BatchRecord, BatchWriter } from '../../../domain/batch.ts';
import { applyBatchWith } from '../batch/apply-batch.ts';
import type { BatchSteps, TaskBatch, UnarmedTask } from '../batch/steps.ts';
import type { TaskSummary } from '../../../domain/task-summary.ts';
import type { Task } from '../../../domain/task.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import { TaskQueries } from './queries.ts';
import { DynamoTaskReader, type ReadBudget } from './read-pages.ts';
import { TableReader } from '../table/table-client.ts';
import { DynamoTaskWriter, type DynamoTaskWriterOptions } from '../write/task-writer.ts';
import { allEvents } from '../../../domain/all-events.ts';

export { ContentionError } from '../table/table-client.ts';

export interface DynamoTaskStoreOptions extends DynamoTaskWriterOptions {
  /** Requests a page of a listing may cost (listing.ts). */
  readBudget?: Partial<ReadBudget>;
  /** A task's files with their verifications (../storage/verifications.ts), as the CLI and the read API read them. */
  verifications?: boolean;
}

/** Everything in one page: whole reads are built on the paginated ones, so that the CLI and the read API agree. */
const WHOLE = { limit: Number.POSITIVE_INFINITY } as const;

export class DynamoTaskStore implements TaskStore, BatchWriter, BatchSteps {
  private readonly writer: DynamoTaskWriter;
  private readonly queries: TaskQueries;
  private readonly reader: DynamoTaskReader;
  /** The table and the raw archive's retention it was built with. */
  readonly settings: { tableName: string; rawEventTtlDays: number };

  constructor(opts: DynamoTaskStoreOptions) {
    this.writer = new DynamoTaskWriter(opts);
    this.settings = this.writer.settings;
    const now = opts.now ?? Date.now;
    this.queries = new TaskQueries(new TableReader(opts.client, opts.tableName), now, this.settings.rawEventTtlDays);
    this.reader = new DynamoTaskReader({
      client: opts.client,
      tableName: opts.tableName,
      now,
      budget: opts.readBudget,
      verifications: opts.verifications,
    });
  }

  applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writer.applyCallback(input);
  }

  /**
   * A batch of queued callbacks applied by the protocol of ../batch/apply-batch.ts, through this store's own steps
   * (a test that wraps them sees every call).
   */
  applyBatch(records: readonly BatchRecord[], ctx: BatchContext): Promise<AppliedBatch> {
    return applyBatchWith(this, records, ctx);
  }

  applyUncounted(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writer.applyUncounted(input);
  }

  knowsHeader(appKey: string, id: string): boolean {
    return this.writer.knowsHeader(appKey, id);
  }

  dropHeld(appKey: string, id: string): void {
    this.writer.dropHeld(appKey, id);
  }

  forgetTask(appKey: string, id: string): void {
    this.writer.forgetTask(appKey, id);
  }

  writeHeld(appKey: string, id: string, fileName: string, capacity?: Capacity): Promise<void> {
    return this.writer.writeHeld(appKey, id, fileName, capacity);
  }

  absorbedSequence(appKey: string, id: string, capacity?: Capacity): Promise<string> {
    return this.writer.absorbedSequence(appKey, id, capacity);
  }

  countTask(batch: TaskBatch, capacity?: Capacity): Promise<TaskParts | null> {
    return this.writer.countTask(batch, capacity);
  }

  recountTask(appKey: string, id: string, through: string | null): Promise<boolean> {
    return this.writer.recountTask(appKey, id, through);
  }

  flushArms(): Promise<UnarmedTask[]> {
    return this.writer.flushArms();
  }

  clearStall(appKey: string, id: string, stalledSince: number): Promise<void> {
    return this.writer.clearStall(appKey, id, stalledSince);
  }

  quarantine(entry: QuarantineEntry): Promise<Capacity> {
    return this.writer.quarantine(entry);
  }

  getTaskPage(ref: TaskRef, page: PageRequest): Promise<TaskPage | null> {
    return this.reader.getTaskPage(ref, page);
  }

  listTasksPage(query: TaskQuery, page: PageRequest): Promise<Page<TaskSummary>> {
    return this.reader.listTasksPage(query, page);
  }

  listEventsPage(ref: TaskRef, page: PageRequest): Promise<EventsPage | null> {
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
    return this.writer.markQuarantineApplied(entry, applied);
  }
}
