// The write side of the DynamoDB task store: a callback applied to its task exactly once, a callback kept
// aside in the quarantine, and an entry of the quarantine marked as applied. Apart from the reads
// (../read/task-store.ts adds them) so that the worker, which builds only this, bundles no listing and no query
// of an index: its role is granted exactly the requests its bundle holds (infra/serverless.test.ts).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { FileRecord } from '../../../domain/task.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import type {
  ApplyResult,
  Capacity,
  DeliveredCallback,
  QuarantineApplied,
  QuarantineEntry,
} from '../../../domain/task-store.ts';
import type { AppliedBatch, BatchContext, BatchRecord, BatchWriter } from '../../../domain/batch.ts';
import { applyBatchWith } from '../batch/apply-batch.ts';
import type { BatchSteps, TaskBatch, UnarmedTask } from '../batch/steps.ts';
import { addCounts, laterMarksChange } from '../../../domain/task-counts.ts';
import { noCapacity as zeroCapacity } from '../table/table-client.ts';
import { WritePath } from './apply-callback.ts';
import { Deliveries } from './deliveries.ts';
import { HeaderCounts } from './header-counts.ts';
import { HeldPuts } from './held-puts.ts';
import { headerParts } from '../table/items.ts';
import { KnownItems } from './known-items.ts';
import { readAfterWrite } from '../read/queries.ts';
import { TableClient, toItem, type Item } from '../table/table-client.ts';
import { TIME_ATTRS } from '../time/time-items.ts';
import { NewTaskArms, armingClauses, armingMove, moveArm } from '../time/deadline-arming.ts';
import { Keys } from '../table/table.ts';
import { defaultTimeSettings, type TimeSettings } from '../../../domain/deadlines.ts';
import { DEFAULT_RAW_EVENT_TTL_DAYS } from '../table/table.ts';

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
  /** The stage's durations for the deadlines (default lib/domain/deadlines.ts defaultTimeSettings). */
  time?: TimeSettings;
}

export class DynamoTaskWriter implements BatchWriter, BatchSteps {
  private readonly writes: WritePath;
  private readonly deliveries: Deliveries;
  private readonly counts: HeaderCounts;
  private readonly table: TableClient;
  private readonly headers: KnownItems;
  private readonly now: () => number;
  /** The stage's durations: when a change arms a task, and how far a deadline may move (docs/task-store.md). */
  private readonly time: TimeSettings;
  /** The arms of the tasks created since the last flush. */
  private readonly arms: NewTaskArms;
  /** The table and the raw archive's retention it was built with. */
  readonly settings: { tableName: string; rawEventTtlDays: number };

  constructor(opts: DynamoTaskWriterOptions) {
    this.settings = {
      tableName: opts.tableName,
      rawEventTtlDays: opts.rawEventTtlDays ?? DEFAULT_RAW_EVENT_TTL_DAYS,
    };
    const table = new TableClient(opts.client, opts.tableName);
    this.table = table;
    this.now = opts.now ?? Date.now;
    this.time = opts.time ?? defaultTimeSettings;
    this.arms = new NewTaskArms(this.now, this.time);
    this.deliveries = new Deliveries(table, this.settings.rawEventTtlDays, opts.now ?? Date.now);
    const headers = new KnownItems(opts.knownHeaders ?? 10_000);
    this.headers = headers;
    const held = new HeldPuts();
    this.counts = new HeaderCounts(table, headers, held);
    this.writes = new WritePath(
      table,
      this.deliveries,
      headers,
      {
        maxAttempts: opts.maxAttempts ?? 16,
        inlineKeys: opts.inlineKeys ?? 4,
        knownFiles: opts.knownFiles ?? 5_000,
        readAfterWrite: (appKey, id, cap) => readAfterWrite(table, appKey, id, cap),
        arming: this.arms,
      },
      held,
    );
  }

  /** One callback applied and counted into its header at once (outside a batch: tests, recoveries). */
  async applyCallback(input: DeliveredCallback): Promise<ApplyResult> {
    const result = await this.writes.applyCallback({ ...input, sequence: null, absorbed: null });
    if (result.outcome === 'quarantined' || !result.write) return result;
    const cb = input.callback;
    // The header update's units count with the write's.
    const writes = [{ callback: cb, write: result.write }];
    const changed = result.outcome === 'applied';
    const redelivered = input.redelivered === true;
    await this.countTask(
      { appKey: cb.appKey, id: cb.id, writes, absorbed: null, changed, redelivered },
      result.capacity,
    );
    const [unarmed] = await this.flushArms(result.capacity);
    if (unarmed) throw unarmed.error;
    return result;
  }

  /** A batch of queued callbacks applied by the protocol of ../batch/apply-batch.ts. */
  applyBatch(records: readonly BatchRecord[], ctx: BatchContext): Promise<AppliedBatch> {
    return applyBatchWith(this, records, ctx);
  }

  applyUncounted(input: DeliveredCallback): Promise<ApplyResult> {
    return this.writes.applyCallback(input);
  }

  knowsHeader(appKey: string, id: string): boolean {
    return this.writes.knowsHeader(appKey, id);
  }

  dropHeld(appKey: string, id: string): void {
    this.counts.dropHeld(appKey, id);
  }

  forgetTask(appKey: string, id: string): void {
    this.writes.forgetTask(appKey, id);
  }

  writeHeld(appKey: string, id: string, fileName: string, capacity: Capacity = zeroCapacity()): Promise<void> {
    return this.writes.writeHeld(appKey, id, fileName, capacity);
  }

  absorbedSequence(appKey: string, id: string, capacity: Capacity = zeroCapacity()): Promise<string> {
    return this.counts.absorbed(appKey, id, capacity);
  }

  async countTask(batch: TaskBatch, capacity: Capacity = zeroCapacity()): Promise<TaskParts | null> {
    // The files as the writes left them, each once (the last write of a file knows it best); their
    // attempts are counted only where an event shows them (WriteOutcome.fileAfter).
    const byFile = new Map<string, FileRecord>();
    const changes = new Map<string, { before: FileRecord | null; after: FileRecord }>();
    for (const w of batch.writes) {
      if (!w.write.file) continue;
      const name = w.write.file.after.fileName;
      byFile.set(name, w.write.file.after);
      changes.set(name, { before: changes.get(name)?.before ?? w.write.file.before, after: w.write.file.after });
    }
    const files = [...byFile.values()];
    const charges = batch.writes.map((w) => w.write.charge);
    const now = this.now();
    const changed = batch.changed ?? true;
    const arming = armingClauses(changed, now);
    let header = await this.counts.count(
      {
        appKey: batch.appKey,
        id: batch.id,
        charges,
        callbacks: batch.writes.map((w) => w.callback),
        files,
        absorbed: batch.absorbed,
        extra: arming,
        changedAt: changed ? now : null,
        changeDeferred: changed && this.arms.deferChange(batch.appKey, batch.id, now),
      },
      capacity,
    );
    // A write without sequence number that cannot tell whether an earlier delivery was counted.
    if (header && charges.some((c) => c.uncertain))
      header = await this.counts.recount(batch.appKey, batch.id, null, capacity);
    if (header && batch.recountThrough !== undefined)
      header = await this.counts.recount(batch.appKey, batch.id, batch.recountThrough, capacity);
    if (header && batch.redelivered) this.arms.again(header);
    if (header) header = await this.arm(batch, header, [...changes.values()], now, capacity);
    // An end recorded ahead of the counts is, to the events too, not one that completes the task yet (headerParts).
    const parts = header ? headerParts(header) : null;
    if (!parts) return null;
    // The files left to later messages' batches (lib/domain/task-counts.ts) as they stand: the task's status
    // and the events read off it are those of the files, not of what the header counts for now.
    const recounted = batch.recountThrough ?? null;
    const counts = parts.counts && addCounts(parts.counts, laterMarksChange(charges, batch.absorbed, recounted));
    return { ...parts, ...(counts ? { counts } : {}), files };
  }

  /**
   * The DUE entry of an arm the count update made, or of a deadline before the armed one
   * (../time/deadline-arming.ts).
   */
  private async arm(
    batch: TaskBatch,
    header: Item,
    files: { before: FileRecord | null; after: FileRecord }[],
    now: number,
    cap: Capacity,
  ): Promise<Item> {
    const bucket = armingMove(header, files, now, this.time);
    if (bucket === null) return header;
    const key = { pk: header.pk, sk: header.sk };
    const moved = await moveArm(this.table, key, { appKey: batch.appKey, id: batch.id }, bucket, cap);
    if (!moved) return header;
    this.headers.remember(key, moved);
    return moved;
  }

  /**
   * Writes the DUE entries of the tasks created since the last flush (a batch's, once its writes are done); the tasks
   * whose entries could not be written.
   */
  flushArms(capacity: Capacity = zeroCapacity()): Promise<UnarmedTask[]> {
    return this.arms.flush(this.table, capacity);
  }

  async clearStall(appKey: string, id: string, stalledSince: number): Promise<void> {
    const key = { pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) };
    const res = await this.table.update(
      key,
      {
        update: `REMOVE ${TIME_ATTRS.stalledSince}, ${TIME_ATTRS.stalledFrom} SET ver = ver + :one`,
        condition: `${TIME_ATTRS.stalledSince} = :st`,
        values: toItem({ ':st': stalledSince, ':one': 1 }),
      },
      zeroCapacity(),
    );
    if (res.ok) this.headers.remember(key, res.item);
  }

  async recountTask(appKey: string, id: string, through: string | null): Promise<boolean> {
    return (await this.counts.recount(appKey, id, through, zeroCapacity())) !== null;
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
