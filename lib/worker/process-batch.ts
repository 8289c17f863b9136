// The worker's logic: each SQS record is parsed in full and applied to its task exactly once. A record
// that can never be applied (bad body, forged signature, replay) is quarantined and acknowledged, so it
// is not retried forever; a record that failed for a transient reason is reported as a batch item
// failure and comes back after the visibility time-out (then the dead-letter queue, after maxReceiveCount).
// Task events are published once the write is durable; a record whose events could not be published fails
// too, and its redelivery (a duplicate for the store) publishes them again from the stored state.
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { parseCallback, type Callback } from '../domain/callback.ts';
import { namedTask } from '../domain/minimal-check.ts';
import { eventsOfWrite } from '../domain/task-events.ts';
import type { EventPublisher } from '../aws/sns/task-events.ts';
import type { ApplyResult, Capacity, DeliveredCallback, QuarantineReason, TaskStore } from '../domain/task-store.ts';
import { UnstorableCallbackError } from '../domain/task-store.ts';
import type { Logger } from '../log.ts';
import type { Service } from '../domain/services.ts';
import {
  isSetAside,
  type QueuedCallback,
  readRecord,
  type SignatureMode,
  type SignatureVerdict,
} from '../queue-message.ts';
import { workerDefaults } from './config.ts';

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

export async function processBatch(
  event: SQSEvent,
  deps: WorkerDeps,
): Promise<SQSBatchResponse & { outcomes: RecordOutcome[] }> {
  const records = event.Records ?? [];
  const outcomes: RecordOutcome[] = new Array(records.length);
  const failures: { itemIdentifier: string }[] = [];
  const concurrency = Math.max(1, deps.concurrency ?? workerDefaults.recordConcurrency);
  const started = (deps.now ?? Date.now)();
  // Records of one task are applied one after the other: run side by side they would only contend for
  // the same header item. Different tasks go in parallel.
  const groups = [...groupByTask(records).values()];
  let next = 0;
  const runGroups = async () => {
    while (next < groups.length) {
      for (const i of groups[next++]!) {
        const record = records[i]!;
        outcomes[i] = await processRecord(record, deps);
        if (outcomes[i] === 'failed') failures.push({ itemIdentifier: record.messageId });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, groups.length) }, runGroups));
  deps.log.info('batch_done', {
    records: records.length,
    tasks: groups.length,
    failed: failures.length,
    latencyMs: (deps.now ?? Date.now)() - started,
  });
  return { batchItemFailures: failures, outcomes };
}

/** Record indexes grouped by the task their body names (a record that names none is a group alone). */
function groupByTask(records: readonly SQSRecord[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  records.forEach((record, i) => {
    let key = `#${i}`;
    try {
      const body = JSON.parse(record.body) as Record<string, unknown> | null;
      const id = body?.recordId ?? body?.imageId;
      if (typeof id === 'string' && id) key = `task:${id}`;
    } catch {
      // Not JSON: processRecord quarantines it on its own.
    }
    const group = groups.get(key);
    if (group) group.push(i);
    else groups.set(key, [i]);
  });
  return groups;
}

export async function processRecord(record: SQSRecord, deps: WorkerDeps): Promise<RecordOutcome> {
  const started = (deps.now ?? Date.now)();
  const read = readRecord(record);
  if (!read.ok) {
    // Without its service the body cannot be parsed; keep it aside as a screenshot or recording
    // callback would be, rather than retrying it forever.
    return quarantineUnparsed(record, deps, read.reason);
  }
  const msg = read.message;
  const parsed = parseQueued(msg.service, msg.body);
  if (!parsed.ok) {
    const named = parsed.named;
    return quarantine(msg, deps, 'invalid_callback', parsed.detail, named.appKey, named.id);
  }
  const cb = parsed.callback;
  if (isSetAside(msg.mode, msg.verdict)) {
    const [reason, detail] = setAsideReason(msg.verdict, msg.mode);
    return quarantine(msg, deps, reason, detail, cb.appKey, cb.id);
  }
  try {
    const result = await deps.store.applyCallback(toDelivered(msg, cb));
    const common = {
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
      deps.log.warn('callback_quarantined', { ...common, reason: result.reason, detail: result.detail });
    } else {
      const events = deps.events ? eventsOfWrite(cb, result.stored) : [];
      if (events.length > 0) {
        try {
          await deps.events!.publish(events);
        } catch (err) {
          // The write is durable; the events are not out. Failing the record brings it back, and the
          // redelivery publishes them again (same ids) from what is stored.
          deps.log.error('events_publish_failed', {
            ...common,
            outcome: result.outcome,
            events: events.length,
            error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
          });
          return 'failed';
        }
      }
      deps.log.info('callback_applied', {
        ...common,
        outcome: result.outcome,
        status: result.outcome === 'applied' ? result.status : undefined,
        events: deps.events ? events.length : undefined,
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
    return result.outcome;
  } catch (err) {
    // The store can never hold it: retried, it would fail the same way until the dead-letter queue.
    if (err instanceof UnstorableCallbackError)
      return quarantine(msg, deps, 'invalid_callback', err.message, cb.appKey, cb.id);
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      service: cb.service,
      id: cb.id,
      type: cb.type,
      receiveCount: msg.receiveCount,
      error: err instanceof Error ? { name: err.name, message: err.message } : String(err),
    });
    return 'failed';
  }
}

/** Why each verdict other than valid keeps a callback from being applied (see isSetAside). */
const verdictsSetAside: Record<Exclude<SignatureVerdict, 'valid' | 'not_checked'>, [QuarantineReason, string]> = {
  invalid: [
    'invalid_signature',
    'the signature matches no configured secret of this appKey, or the request named another appKey',
  ],
  missing: ['missing_signature', 'the request carried no complete signature (nonce, timestamp and signature)'],
  stale: ['stale_timestamp', 'the signature timestamp was outside the accepted window'],
  unknown_app_key: ['unknown_app_key', 'no callback secret is configured for this appKey'],
  unverified: ['unverified', 'the callback secrets could not be read, so the signature was not checked'],
};

/** The quarantine reason of a verdict that isSetAside keeps from being applied, with a sentence. */
export function setAsideReason(verdict: SignatureVerdict, mode: SignatureMode): [QuarantineReason, string] {
  if (verdict === 'valid' || verdict === 'not_checked')
    return ['unverified', `the signature was not checked, in signature mode ${mode}`];
  return verdictsSetAside[verdict];
}

export type ParsedQueued =
  | { ok: true; callback: Callback }
  | { ok: false; detail: string; named: { appKey: string | null; id: string | null } };

/**
 * The full parse of a queued body, with today's code. A body that fails it still names its task when it
 * has an id (`type: 2` without `output`, say), so the quarantine can file it under that task.
 */
export function parseQueued(service: Service, body: string): ParsedQueued {
  const named = () => {
    try {
      return namedTask(service, JSON.parse(body));
    } catch {
      return { appKey: null, id: null };
    }
  };
  try {
    const parsed = parseCallback(service, body);
    if (parsed.ok) return { ok: true, callback: parsed.callback };
    return { ok: false, detail: parsed.errors.join('; '), named: named() };
  } catch (err) {
    // A body nested deeper than the parser can recurse (RangeError) passes the ingest's minimal check but
    // can never be read here: retrying it would only fail again, so it is kept aside.
    const detail =
      err instanceof RangeError
        ? 'the body is nested too deeply to be read'
        : `the body could not be read (${err instanceof Error ? err.name : 'error'})`;
    return { ok: false, detail, named: err instanceof RangeError ? { appKey: null, id: null } : named() };
  }
}

/** A queued message and its parsed callback, as the store applies them. */
export function toDelivered(msg: QueuedCallback, callback: Callback): DeliveredCallback {
  return {
    callback,
    raw: msg.body,
    receivedAt: msg.receivedAt,
    verdict: msg.verdict,
    mode: msg.mode,
    requestId: msg.requestId,
    messageId: msg.messageId,
    replayKey: msg.replayKey,
    heldSignature: msg.heldSignature,
  };
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
