// One record of a batch applied to its task, uncounted (./task-counting.ts counts it), or kept aside in the
// quarantine. The record is filled in: its outcome, and what its line will say.
import { type BatchContext, type BatchRecord, quarantineEntryOf } from '../../../domain/batch.ts';
import type { Callback } from '../../../domain/callback.ts';
import { type DeliveredCallback, type QuarantineEntry, UnstorableCallbackError } from '../../../domain/task-store.ts';
import { errorSentence } from '../../../text.ts';
import type { BatchSteps } from './steps.ts';
import type { TaskCounting } from './task-counting.ts';

/** `hold`: another record of the batch writes the same file next (DeliveredCallback.hold). */
export async function applyRecord(
  r: BatchRecord,
  steps: BatchSteps,
  ctx: BatchContext,
  counting: TaskCounting | undefined,
  hold: boolean,
): Promise<void> {
  if (r.parsed.kind === 'aside') return quarantine(r, r.parsed.entry, steps);
  const { callback: cb, delivered, sequence } = r.parsed;
  if (counting?.unknown) {
    Object.assign(r, { outcome: 'failed', cb, error: "its task's header could not be read" });
    return;
  }
  const started = ctx.now();
  try {
    const sequencing =
      sequence && counting?.absorbed ? { sequence, absorbed: counting.absorbed, hold: hold && !!steps.writeHeld } : {};
    const result = await steps.applyUncounted({ ...delivered, ...sequencing });
    const fields = {
      messageId: r.messageId,
      service: cb.service,
      appKey: cb.appKey,
      id: cb.id,
      type: cb.type,
      eventKey: cb.key,
      verdict: delivered.verdict,
      receiveCount: r.receiveCount,
      wcu: round(result.capacity.write),
      rcu: round(result.capacity.read),
      latencyMs: ctx.now() - started,
    };
    if (result.outcome === 'quarantined') {
      r.log.warn('callback_quarantined', { ...fields, reason: result.reason, detail: result.detail });
      r.outcome = 'quarantined';
      return;
    }
    Object.assign(r, { outcome: result.outcome, cb, result, fields });
  } catch (err) {
    // The store can never hold it: retried, it would fail the same way until the dead-letter queue. It may
    // have written part of itself first: its task is recounted.
    if (err instanceof UnstorableCallbackError) {
      if (counting) counting.recount = true;
      return quarantine(r, unstorableEntry(delivered, cb, err.message), steps);
    }
    const error = errorSentence(err);
    r.log.error('callback_failed', {
      messageId: r.messageId,
      service: cb.service,
      id: cb.id,
      type: cb.type,
      receiveCount: r.receiveCount,
      error,
    });
    Object.assign(r, { outcome: 'failed', error });
  }
}

async function quarantine(r: BatchRecord, entry: QuarantineEntry, steps: BatchSteps): Promise<void> {
  try {
    const capacity = await steps.quarantine(entry);
    r.log.warn('callback_quarantined', {
      messageId: entry.messageId,
      service: entry.service,
      appKey: entry.appKey ?? undefined,
      id: entry.taskId ?? undefined,
      reason: entry.reason,
      detail: entry.detail,
      wcu: round(capacity.write),
    });
    r.outcome = 'quarantined';
  } catch (err) {
    const error = errorSentence(err);
    r.log.error('callback_failed', { messageId: entry.messageId, reason: entry.reason, error });
    Object.assign(r, { outcome: 'failed', error: `it could not be kept aside (${entry.reason}): ${error}` });
  }
}

/** The quarantine entry of a callback the store can never hold. */
function unstorableEntry(delivered: DeliveredCallback, cb: Callback, detail: string): QuarantineEntry {
  // A queued callback's verdict is the ingest's; `accepted_unverified` is only written by `quarantine apply`.
  const verdict = delivered.verdict === 'accepted_unverified' ? 'unverified' : delivered.verdict;
  const kept = { ...delivered, service: cb.service, verdict };
  return quarantineEntryOf(kept, { reason: 'invalid_callback', detail }, { appKey: cb.appKey, taskId: cb.id });
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
