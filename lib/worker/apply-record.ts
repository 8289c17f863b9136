// One record of a batch applied to its task, uncounted (lib/worker/task-counting.ts counts it), or kept
// aside in quarantine; and the line the worker logs about it once the batch is done.
import type { SQSRecord } from 'aws-lambda';
import type { Callback } from '../domain/callback.ts';
import {
  UnstorableCallbackError,
  type ApplyResult,
  type Capacity,
  type QuarantineReason,
} from '../domain/task-store.ts';
import { withFields, type Logger } from '../log.ts';
import { Attr, readSender, type QueuedCallback } from '../queue-message.ts';
import type { WorkerDeps } from './deps.ts';
import { toDelivered, type Prepared, type TaskCounting } from './prepare-record.ts';
import { errorSentence } from '../text.ts';

export type RecordOutcome = ApplyResult['outcome'] | 'failed';

/** A record once applied: what happened, and what its log line will say. */
export interface Applied {
  outcome: RecordOutcome;
  /** The record's logger: its lines carry the ingest's request id. */
  log: Logger;
  cb?: Callback;
  result?: Exclude<ApplyResult, { outcome: 'quarantined' }>;
  fields?: Record<string, unknown>;
  events?: number;
  /** Why it failed, in one sentence, when it did (the note of a message given up: lib/worker/message-notes.ts). */
  error?: string;
  /** Who sent its message again (`resentBy`), when someone says so. */
  resentBy?: string;
}

/** The request id the ingest gave the record's message, when it has one. */
function requestIdOf(p: Prepared): string | undefined {
  if (p.kind !== 'unreadable') return p.msg.requestId ?? undefined;
  return p.record.messageAttributes?.[Attr.requestId]?.stringValue || undefined;
}

/** Who sent the record's message again (`resentBy`: a redrive, a replay), when someone says so. */
function resentByOf(p: Prepared): string | undefined {
  if (p.kind !== 'unreadable') return p.msg.resentBy;
  return p.record.messageAttributes?.[Attr.resentBy]?.stringValue || undefined;
}

/** `hold`: another record of the batch writes the same file next (DeliveredCallback.hold). */
export async function applyRecord(
  p: Prepared,
  workerDeps: WorkerDeps,
  counting?: TaskCounting,
  hold = false,
): Promise<Applied> {
  // Each line of a copy sent again says who sent it (a replay out of the archive is logged as one).
  const resentBy = resentByOf(p);
  const log = withFields(workerDeps.log, { requestId: requestIdOf(p), ...(resentBy ? { resentBy } : {}) });
  const deps = { ...workerDeps, log };
  const started = (deps.now ?? Date.now)();
  if (p.kind === 'unreadable') return { log, ...(await quarantineUnparsed(p.record, deps, p.detail)) };
  if (p.kind === 'aside') {
    return { log, ...(await quarantine(p.msg, deps, p.reason, p.detail, p.named.appKey, p.named.id)) };
  }
  const { msg, cb } = p;
  if (counting?.unknown) return { log, outcome: 'failed', cb, error: "its task's header could not be read" };
  try {
    const sequencing =
      p.sequence && counting?.absorbed
        ? { sequence: p.sequence, absorbed: counting.absorbed, hold: hold && !!deps.store.writeHeld }
        : {};
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
    return { log, outcome: result.outcome, cb, result, fields, ...(resentBy ? { resentBy } : {}) };
  } catch (err) {
    // The store can never hold it: retried, it would fail the same way until the dead-letter queue. It may
    // have written part of itself first: its task is recounted.
    if (err instanceof UnstorableCallbackError) {
      if (counting) counting.recount = true;
      return { log, ...(await quarantine(msg, deps, 'invalid_callback', err.message, cb.appKey, cb.id)) };
    }
    const error = errorSentence(err);
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      service: cb.service,
      id: cb.id,
      type: cb.type,
      receiveCount: msg.receiveCount,
      error,
    });
    return { log, outcome: 'failed', error };
  }
}

export function logApplied(a: Applied, deps: WorkerDeps): void {
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
): Promise<Pick<Applied, 'outcome' | 'error'>> {
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
    return { outcome: 'quarantined' };
  } catch (err) {
    const error = errorSentence(err);
    deps.log.error('callback_failed', {
      messageId: msg.messageId,
      reason,
      error,
    });
    return { outcome: 'failed', error: `it could not be kept aside (${reason}): ${error}` };
  }
}

async function quarantineUnparsed(
  record: SQSRecord,
  deps: WorkerDeps,
  detail: string,
): Promise<Pick<Applied, 'outcome' | 'error'>> {
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
