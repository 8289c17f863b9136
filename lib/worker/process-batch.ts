// The worker's logic: each SQS record is parsed in full and applied to its task exactly once. A record
// that can never be applied (bad body, forged signature, replay) is quarantined and acknowledged, so it
// is not retried forever; a record that failed for a transient reason is reported as a batch item
// failure and comes back after the visibility time-out (then the dead-letter queue, after maxReceiveCount),
// with the later records of its message group in the batch (failedInGroupOrder).
// Once every record of a task is applied, one update of its header counts them all (lib/domain/task-counts.ts)
// and returns the task its events are read off; when a record of a task fails, or that update does, every
// record of the task in the batch fails, so that the batch that comes again counts what they wrote. Task
// events are published once the writes are counted; a record whose events could not be published fails
// too, and its redelivery (a duplicate for the store) publishes them again from the stored state.
// Every line about a record names the ingest's request id (`requestId`, the API Gateway request that
// brought the callback), so that one search follows a callback from the door to its task.
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { EventPublisher } from '../aws/sns/task-events.ts';
import type { Callback } from '../domain/callback.ts';
import { eventsOfWrite, writeMayPublish, type TaskEvent } from '../domain/task-events.ts';
import { sequenceBefore } from '../domain/task-counts.ts';
import type { TaskParts } from '../domain/task-parts.ts';
import type { FileRecord } from '../domain/task.ts';
import {
  UnstorableCallbackError,
  type ApplyResult,
  type Capacity,
  type QuarantineReason,
  type TaskWriter,
} from '../domain/task-store.ts';
import { withFields, type Logger } from '../log.ts';
import { Attr, readSender, type QueuedCallback } from '../queue-message.ts';
import { workerDefaults } from './config.ts';
import { groupByItem, groupByTask, prepareRecord, taskKeyOf, toDelivered, type Prepared } from './prepare-record.ts';

export interface WorkerDeps {
  store: TaskWriter;
  log: Logger;
  /** Where task events go; absent, none are published. */
  events?: EventPublisher;
  /** Records applied at the same time within one batch (default: lib/worker/config.ts). */
  concurrency?: number;
  /** The queue's maxReceiveCount: a record failing its last receive goes to the dead-letter queue (default 5). */
  maxReceiveCount?: number;
  now?: () => number;
}

export type RecordOutcome = ApplyResult['outcome'] | 'failed';

/** A record once applied: what happened, and what its log line will say. */
interface Applied {
  outcome: RecordOutcome;
  /** The record's logger: its lines carry the ingest's request id. */
  log: Logger;
  cb?: Callback;
  result?: Exclude<ApplyResult, { outcome: 'quarantined' }>;
  fields?: Record<string, unknown>;
  events?: number;
}

export async function processBatch(
  event: SQSEvent,
  deps: WorkerDeps,
): Promise<SQSBatchResponse & { outcomes: RecordOutcome[] }> {
  const records = event.Records ?? [];
  const concurrency = Math.max(1, deps.concurrency ?? workerDefaults.recordConcurrency);
  const started = (deps.now ?? Date.now)();
  const prepared = records.map(prepareRecord);
  const applied: Applied[] = new Array(records.length);
  // Records that write the same item (one file, or one task's header) are applied one after the other:
  // side by side they would only conflict. Everything else goes in parallel, callbacks of one task too,
  // the longest runs first. Once every record of a task is applied, one update of its header counts them
  // and gives the task the events of all of them are read off; the batch's events go out together at the end.
  const groups = [...groupByItem(prepared).values()].sort((a, b) => b.length - a.length);
  const tasks = groupByTask(prepared);
  const counting = await countingOfTasks(prepared, tasks, deps, concurrency);
  const groupsLeft = new Map<string, number>();
  const taskEvents: TaskEvents[] = [];
  for (const group of groups) {
    const task = taskKeyOf(prepared[group[0]!]!);
    if (task !== null) groupsLeft.set(task, (groupsLeft.get(task) ?? 0) + 1);
  }
  await inParallel(groups, concurrency, async (group) => {
    const task = taskKeyOf(prepared[group[0]!]!);
    for (const i of group) applied[i] = await applyRecord(prepared[i]!, deps, task ? counting.get(task) : undefined);
    const left = task === null ? 0 : groupsLeft.get(task)! - 1;
    if (task !== null) groupsLeft.set(task, left);
    if (left > 0 || task === null) return;
    const done = tasks.get(task)!;
    const parts = await countTask(
      done.map((i) => ({ p: prepared[i]!, a: applied[i]! })),
      counting.get(task)!,
      deps,
    );
    if (deps.events && parts !== undefined)
      taskEvents.push(
        await eventsOfTask(
          done.map((i) => applied[i]!),
          parts,
          counting.get(task)!.absorbed === null,
          deps.log,
        ),
      );
  });
  if (deps.events) await publishAll(taskEvents, deps.events);
  for (const a of applied) logApplied(a, deps);
  const failed = failedInGroupOrder(
    records,
    applied.map((a) => a.outcome === 'failed'),
  );
  const failures = records.filter((_, i) => failed[i]).map((r) => ({ itemIdentifier: r.messageId }));
  deps.log.info('batch_done', {
    records: records.length,
    failed: failures.length,
    // Applied, yet reported failed behind a failed record of their group (they come back after it).
    heldBack: failed.filter((f, i) => f && applied[i]!.outcome !== 'failed').length,
    latencyMs: (deps.now ?? Date.now)() - started,
  });
  return { batchItemFailures: failures, outcomes: applied.map((a) => a.outcome) };
}

/**
 * The records to report failed on a FIFO queue: each failed record, and every later record of its message
 * group in the batch. Lambda deletes whatever the response does not name, so a later record reported done
 * would leave the queue before the failed one it follows: its group's order would be lost. On a standard
 * queue (no MessageGroupId) only the failed records themselves.
 */
export function failedInGroupOrder(records: readonly SQSRecord[], failed: readonly boolean[]): boolean[] {
  const failedGroups = new Set<string>();
  return records.map((record, i) => {
    const group = record.attributes?.MessageGroupId;
    const fails = failed[i]! || (group !== undefined && failedGroups.has(group));
    if (fails && group !== undefined) failedGroups.add(group);
    return fails;
  });
}

async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

/** How the records of one task are counted: their header's absorbed sequence number, or null without one. */
interface TaskCounting {
  absorbed: string | null;
  /** Its records carry sequence numbers but the header's could not be read: they fail, and come again. */
  unknown: boolean;
  /** A record was kept aside after it may have written part of itself: the task is recounted. */
  recount: boolean;
}

/**
 * For each task, the last sequence number its header absorbed as the batch begins: the one before the
 * first of its records (a queue of ordered groups delivers a task's messages only once the earlier ones are
 * done), or, when one of them comes again, as its header says (one read). Null when a record has none.
 */
async function countingOfTasks(
  prepared: readonly Prepared[],
  tasks: Map<string, number[]>,
  deps: WorkerDeps,
  concurrency: number,
): Promise<Map<string, TaskCounting>> {
  const out = new Map<string, TaskCounting>();
  const reads: [string, Extract<Prepared, { kind: 'apply' }>][] = [];
  for (const [task, indexes] of tasks) {
    const records = indexes.map((i) => prepared[i] as Extract<Prepared, { kind: 'apply' }>);
    const seqs = records.map((r) => r.sequence);
    if (seqs.some((s) => s === null)) {
      out.set(task, { absorbed: null, unknown: false, recount: false });
      continue;
    }
    const first = (seqs as string[]).reduce((a, b) => (b < a ? b : a));
    out.set(task, { absorbed: sequenceBefore(first), unknown: false, recount: false });
    if (records.some((r) => (r.msg.receiveCount ?? 1) > 1)) reads.push([task, records[0]!]);
  }
  await inParallel(reads, concurrency, async ([task, r]) => {
    try {
      out.get(task)!.absorbed = await deps.store.absorbedSequence(r.cb.appKey, r.cb.id);
    } catch (err) {
      // Unknown: the task's records fail and come again.
      deps.log.error('task_sequence_unread', { appKey: r.cb.appKey, id: r.cb.id, error: describeError(err) });
      out.get(task)!.absorbed = null;
      out.get(task)!.unknown = true;
    }
  });
  return out;
}

/** The request id the ingest gave the record's message, when it has one. */
function requestIdOf(p: Prepared): string | undefined {
  if (p.kind !== 'unreadable') return p.msg.requestId ?? undefined;
  return p.record.messageAttributes?.[Attr.requestId]?.stringValue || undefined;
}

async function applyRecord(p: Prepared, workerDeps: WorkerDeps, counting?: TaskCounting): Promise<Applied> {
  const log = withFields(workerDeps.log, { requestId: requestIdOf(p) });
  const deps = { ...workerDeps, log };
  const started = (deps.now ?? Date.now)();
  if (p.kind === 'unreadable') return { log, outcome: await quarantineUnparsed(p.record, deps, p.detail) };
  if (p.kind === 'aside') {
    return { log, outcome: await quarantine(p.msg, deps, p.reason, p.detail, p.named.appKey, p.named.id) };
  }
  const { msg, cb } = p;
  if (counting?.unknown) return { log, outcome: 'failed', cb };
  try {
    const sequencing = p.sequence && counting?.absorbed ? { sequence: p.sequence, absorbed: counting.absorbed } : {};
    const result = await deps.store.applyUncounted({ ...toDelivered(msg, cb), ...sequencing });
    const fields = {
      messageId: msg.messageId,
      service: cb.service,
      appKey: cb.appKey,
      id: cb.id,
      type: cb.type,
      eventKey: cb.key,
      verdict: msg.verdict,
      receiveCount: msg.receiveCount,
      wcu: round(result.capacity.write),
      rcu: round(result.capacity.read),
      latencyMs: (deps.now ?? Date.now)() - started,
    };
    if (result.outcome === 'quarantined') {
      deps.log.warn('callback_quarantined', { ...fields, reason: result.reason, detail: result.detail });
      return { log, outcome: 'quarantined' };
    }
    return { log, outcome: result.outcome, cb, result, fields };
  } catch (err) {
    // The store can never hold it: retried, it would fail the same way until the dead-letter queue. It may
    // have written part of itself first: its task is recounted.
    if (err instanceof UnstorableCallbackError) {
      if (counting) counting.recount = true;
      return { log, outcome: await quarantine(msg, deps, 'invalid_callback', err.message, cb.appKey, cb.id) };
    }
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      service: cb.service,
      id: cb.id,
      type: cb.type,
      receiveCount: msg.receiveCount,
      error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
    });
    return { log, outcome: 'failed' };
  }
}

/** The task events of one task's writes in a batch, and the writes that have some. */
interface TaskEvents {
  writes: Applied[];
  events: TaskEvent[];
}

/** Logs why the events of some writes are not out, and fails their records: redelivered, they publish again. */
function failPublishing(failed: readonly Applied[], err: unknown): void {
  // The writes are durable; their events are not out.
  for (const a of failed) {
    a.log.error('events_publish_failed', {
      ...a.fields,
      outcome: a.outcome,
      events: a.events ?? 0,
      error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
    });
    a.outcome = 'failed';
  }
}

/**
 * Counts the writes of one task into its header, once all of its records are applied: the task as the
 * header then says (null: none), or undefined when its records fail (a record failed, or the update did;
 * they all come again, and that batch counts what these wrote). A record kept aside after a partial write,
 * or one given up for the dead-letter queue, has its task recounted, through the batch's last sequence number.
 */
async function countTask(
  records: readonly { p: Prepared; a: Applied }[],
  counting: TaskCounting,
  deps: WorkerDeps,
): Promise<TaskParts | null | undefined> {
  const first = records[0]!.p as Extract<Prepared, { kind: 'apply' }>;
  const { appKey, id } = first.cb;
  const seqs = records.map((r) => (r.p.kind === 'apply' ? r.p.sequence : null));
  const through = seqs.every((s) => s !== null) ? (seqs as string[]).reduce((a, b) => (b > a ? b : a)) : null;
  const recount = async (reason: string) => {
    try {
      await deps.store.recountTask(appKey, id, through);
      deps.log.warn('task_recounted', { appKey, id, reason, through: through ?? undefined });
    } catch (err) {
      deps.log.error('task_recount_failed', { appKey, id, reason, error: describeError(err) });
    }
  };
  const failRecords = (err: unknown) => {
    for (const { a } of records) {
      if (a.outcome !== 'applied' && a.outcome !== 'duplicate') continue;
      a.log.warn('record_failed_with_task', { ...a.fields, outcome: a.outcome, error: describeError(err) });
      a.outcome = 'failed';
    }
  };
  const failed = records.filter(({ a }) => a.outcome === 'failed');
  if (failed.length > 0) {
    failRecords(new Error('another record of the task failed'));
    const max = deps.maxReceiveCount ?? 5;
    const givenUp = failed.some(({ p }) => p.kind === 'apply' && (p.msg.receiveCount ?? 1) >= max);
    if (givenUp) await recount('dead_letter');
    return undefined;
  }
  const writes = records.flatMap(({ a }) =>
    a.result?.write && a.cb ? [{ callback: a.cb, write: a.result.write }] : [],
  );
  if (writes.length === 0) {
    if (counting.recount) await recount('quarantined_after_write');
    return null;
  }
  try {
    const parts = await deps.store.countTask({ appKey, id, writes, absorbed: counting.absorbed });
    if (counting.recount) await recount('quarantined_after_write');
    return parts;
  } catch (err) {
    deps.log.error('task_count_failed', { appKey, id, error: describeError(err) });
    failRecords(err);
    return undefined;
  }
}

const describeError = (err: unknown) =>
  err instanceof Error ? { name: err.name, message: err.message } : { name: 'Error', message: String(err) };

/**
 * The task events of the writes to one task (lib/domain/task-events.ts), read off the task as its header
 * update returned it, with the files the writes left: no read of the task. Records without sequence numbers
 * (several batches of a task may be applied at once) read the task whole after the update instead, as a
 * header can then say an end before another batch has counted the file it names.
 */
async function eventsOfTask(
  writes: Applied[],
  counted: TaskParts | null,
  unordered: boolean,
  log: Logger,
): Promise<TaskEvents> {
  const publishing = writes.filter((a) => {
    const write = a.result?.write;
    const may = !!write && writeMayPublish(a.cb!, a.outcome === 'applied', write.file);
    if (a.result) a.events = 0;
    return may && a.outcome !== 'failed';
  });
  if (publishing.length === 0) return { writes: [], events: [] };
  let parts = counted;
  try {
    parts = unordered
      ? await publishing[0]!.result!.write!.readParts()
      : counted && (await withAttempts(counted, publishing));
  } catch (err) {
    failPublishing(publishing, err);
    return { writes: [], events: [] };
  }
  const events = new Map<string, TaskEvent>();
  for (const a of publishing) {
    const stored = a.result!.write!.storedWith(parts);
    const own = stored ? eventsOfWrite(a.cb!, stored) : [];
    a.events = own.length;
    // Two writes that make the same event true publish it once: the same id, and the same time, read off
    // the same stored task (lib/domain/task-events.ts).
    for (const event of own) if (!events.has(event.id)) events.set(event.id, event);
  }
  return { writes: publishing.filter((a) => (a.events ?? 0) > 0), events: [...events.values()] };
}

/** The task's files that uploads publish events of, their attempts counted (a file event shows them). */
async function withAttempts(parts: TaskParts, publishing: readonly Applied[]): Promise<TaskParts> {
  const counted = new Map<string, FileRecord>();
  for (const a of publishing) {
    const write = a.result!.write!;
    if (!a.cb!.upload || !write.file || counted.has(write.file.after.fileName)) continue;
    const file = await write.fileAfter();
    if (file) counted.set(file.fileName, file);
  }
  return { ...parts, files: parts.files.map((f) => counted.get(f.fileName) ?? f) };
}

/**
 * The batch's task events, published together (SNS takes ten a call) once every write is durable. When
 * they cannot all be published, every record that had events fails: its redelivery publishes them again
 * from what is stored.
 */
async function publishAll(tasks: readonly TaskEvents[], publisher: EventPublisher): Promise<void> {
  const events = tasks.flatMap((t) => t.events);
  if (events.length === 0) return;
  try {
    await publisher.publish(events);
  } catch (err) {
    failPublishing(
      tasks.flatMap((t) => t.writes),
      err,
    );
  }
}

function logApplied(a: Applied, deps: WorkerDeps): void {
  if (!a.cb || !a.result || a.outcome === 'failed') return;
  const { cb, result } = a;
  a.log.info('callback_applied', {
    ...a.fields,
    outcome: result.outcome,
    file: result.outcome === 'applied' && result.transition ? result.transition.to : undefined,
    events: deps.events ? (a.events ?? 0) : undefined,
  });
  if (result.outcome === 'applied' && result.transition?.to === 'failed' && result.transition.from !== 'failed') {
    a.log.warn('upload_failed', {
      service: cb.service,
      appKey: cb.appKey,
      id: cb.id,
      fileName: cb.upload?.fileName,
      code: cb.upload?.code,
    });
  }
}

async function quarantine(
  msg: QueuedCallback,
  deps: WorkerDeps,
  reason: QuarantineReason,
  detail: string,
  appKey: string | null,
  taskId: string | null,
): Promise<RecordOutcome> {
  try {
    const capacity: Capacity = await deps.store.quarantine({
      reason,
      detail,
      service: msg.service,
      raw: msg.body,
      receivedAt: msg.receivedAt,
      verdict: msg.verdict,
      requestId: msg.requestId,
      messageId: msg.messageId,
      appKey: appKey ?? (msg.appKey || null),
      taskId,
      mode: msg.mode,
      signature: msg.heldSignature,
      sourceIp: msg.sender?.sourceIp ?? null,
      userAgent: msg.sender?.userAgent ?? null,
    });
    deps.log.warn('callback_quarantined', {
      messageId: msg.messageId,
      service: msg.service,
      appKey: appKey ?? msg.appKey,
      id: taskId ?? undefined,
      reason,
      detail,
      wcu: round(capacity.write),
    });
    return 'quarantined';
  } catch (err) {
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      reason,
      error: err instanceof Error ? err.message : String(err),
    });
    return 'failed';
  }
}

async function quarantineUnparsed(record: SQSRecord, deps: WorkerDeps, detail: string): Promise<RecordOutcome> {
  return quarantine(
    {
      messageId: record.messageId,
      body: record.body ?? '',
      service: 'recording',
      appKey: '',
      receivedAt: Number(record.attributes?.SentTimestamp) || (deps.now ?? Date.now)(),
      requestId: record.messageAttributes?.[Attr.requestId]?.stringValue || null,
      verdict: 'unverified',
      mode: 'enforce',
      replayKey: null,
      heldSignature: null,
      // Unreadable as a callback message, but who sent it may still be known.
      sender: readSender(record.messageAttributes?.[Attr.sender]?.stringValue),
    },
    deps,
    'invalid_callback',
    detail,
    null,
    null,
  );
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
