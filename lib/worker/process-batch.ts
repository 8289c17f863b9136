// The worker's logic: each SQS record is parsed in full and applied to its task exactly once. A record
// that can never be applied (bad body, forged signature, replay) is quarantined and acknowledged, so it
// is not retried forever; a record that failed for a transient reason is reported as a batch item
// failure and comes back after the visibility time-out (then the dead-letter queue, after maxReceiveCount).
// Task events are published once the write is durable; a record whose events could not be published fails
// too, and its redelivery (a duplicate for the store) publishes them again from the stored state.
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { EventPublisher } from '../aws/sns/task-events.ts';
import type { Callback } from '../domain/callback.ts';
import { eventsOfWrite, writeMayPublish, type TaskEvent } from '../domain/task-events.ts';
import {
  UnstorableCallbackError,
  type ApplyResult,
  type Capacity,
  type QuarantineReason,
  type TaskStore,
} from '../domain/task-store.ts';
import type { Logger } from '../log.ts';
import type { QueuedCallback } from '../queue-message.ts';
import { workerDefaults } from './config.ts';
import { groupByItem, prepareRecord, toDelivered, type Prepared } from './prepare-record.ts';

export interface WorkerDeps {
  store: TaskStore;
  log: Logger;
  /** Where task events go; absent, none are published. */
  events?: EventPublisher;
  /** Records applied at the same time within one batch (default: lib/worker/config.ts). */
  concurrency?: number;
  now?: () => number;
}

export type RecordOutcome = ApplyResult['outcome'] | 'failed';

/** A record once applied: what happened, and what its log line will say. */
interface Applied {
  outcome: RecordOutcome;
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
  // side by side they would only conflict. Everything else goes in parallel, callbacks of one task too.
  const groups = [...groupByItem(prepared).values()];
  await inParallel(groups, concurrency, async (group) => {
    for (const i of group) {
      const a = await applyRecord(prepared[i]!, deps);
      if (deps.events && a.result) await publishEvents(a, deps.events, deps.log);
      logApplied(a, deps);
      applied[i] = a;
    }
  });
  const failures = records
    .filter((_, i) => applied[i]!.outcome === 'failed')
    .map((r) => ({ itemIdentifier: r.messageId }));
  deps.log.info('batch_done', {
    records: records.length,
    failed: failures.length,
    latencyMs: (deps.now ?? Date.now)() - started,
  });
  return { batchItemFailures: failures, outcomes: applied.map((a) => a.outcome) };
}

async function inParallel<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}

async function applyRecord(p: Prepared, deps: WorkerDeps): Promise<Applied> {
  const started = (deps.now ?? Date.now)();
  if (p.kind === 'unreadable') return { outcome: await quarantineUnparsed(p.record, deps, p.detail) };
  if (p.kind === 'aside') {
    return { outcome: await quarantine(p.msg, deps, p.reason, p.detail, p.named.appKey, p.named.id) };
  }
  const { msg, cb } = p;
  try {
    const result = await deps.store.applyCallback(toDelivered(msg, cb));
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
      return { outcome: 'quarantined' };
    }
    return { outcome: result.outcome, cb, result, fields };
  } catch (err) {
    // The store can never hold it: retried, it would fail the same way until the dead-letter queue.
    if (err instanceof UnstorableCallbackError)
      return { outcome: await quarantine(msg, deps, 'invalid_callback', err.message, cb.appKey, cb.id) };
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      service: cb.service,
      id: cb.id,
      type: cb.type,
      receiveCount: msg.receiveCount,
      error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
    });
    return { outcome: 'failed' };
  }
}

/**
 * The task events of one write (lib/domain/task-events.ts), published once the write is durable. The
 * task's status and counts are read right after the write. When they cannot be read or published, the
 * record fails: its redelivery publishes them again from what is stored.
 */
async function publishEvents(a: Applied, publisher: EventPublisher, log: Logger): Promise<void> {
  const write = a.result!.write;
  let events: TaskEvent[] = [];
  if (!write || !writeMayPublish(a.cb!, a.outcome === 'applied', write.file)) {
    a.events = 0;
    return;
  }
  try {
    const stored = await write.readTask();
    events = stored ? eventsOfWrite(a.cb!, stored) : [];
    a.events = events.length;
    if (events.length > 0) await publisher.publish(events);
  } catch (err) {
    // The write is durable; the events are not out.
    log.error('events_publish_failed', {
      ...a.fields,
      outcome: a.outcome,
      events: events.length,
      error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
    });
    a.outcome = 'failed';
  }
}

function logApplied(a: Applied, deps: WorkerDeps): void {
  if (!a.cb || !a.result || a.outcome === 'failed') return;
  const { cb, result } = a;
  deps.log.info('callback_applied', {
    ...a.fields,
    outcome: result.outcome,
    file: result.outcome === 'applied' && result.transition ? result.transition.to : undefined,
    events: deps.events ? (a.events ?? 0) : undefined,
  });
  if (result.outcome === 'applied' && result.transition?.to === 'failed' && result.transition.from !== 'failed') {
    deps.log.warn('upload_failed', {
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
      requestId: null,
      verdict: 'unverified',
      mode: 'enforce',
      replayKey: null,
      heldSignature: null,
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
