// The end of a batch: a line for each record applied, the records given up at their last receive (alone: the
// dead-letter queue), the notes an operator reads of them, and the answer to SQS, the records to retry.
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { type BatchContext, type BatchRecord, isGivenUp, type RecordOutcome } from '../domain/batch.ts';
import type { WorkerDeps } from './deps.ts';
import { noteMessages } from './message-notes.ts';

export async function reportBatch(
  messages: readonly SQSRecord[],
  records: readonly BatchRecord[],
  ctx: BatchContext & { started: number },
  deps: WorkerDeps,
): Promise<SQSBatchResponse & { outcomes: RecordOutcome[] }> {
  for (const r of records) logApplied(r, ctx.publishing);
  const givenUp = records.map((r) => isGivenUp(r, ctx.maxReceiveCount));
  for (const [i, up] of givenUp.entries())
    if (up)
      records[i]!.log.error('callback_given_up', {
        messageId: records[i]!.messageId,
        receiveCount: ctx.maxReceiveCount,
      });
  // What `dlq list` and `dlq redrive --wait` read of the messages given up and of those sent again (no others).
  await noteMessages(messages, records, givenUp, deps);
  const failed = failedInGroupOrder(
    messages,
    records.map((r) => r.outcome === 'failed'),
    givenUp,
  );
  const failures = messages.filter((_, i) => failed[i]).map((m) => ({ itemIdentifier: m.messageId }));
  deps.log.info('batch_done', {
    records: records.length,
    failed: failures.length,
    // Applied, yet reported failed behind a failed record of their group (they come back after it).
    heldBack: failed.filter((f, i) => f && records[i]!.outcome !== 'failed').length,
    latencyMs: ctx.now() - ctx.started,
  });
  return { batchItemFailures: failures, outcomes: records.map((r) => r.outcome) };
}

/** The record's `callback_applied` line, and `upload_failed` for an upload that failed first. */
function logApplied(r: BatchRecord, publishing: boolean): void {
  if (!r.cb || !r.result || r.outcome === 'failed') return;
  const { cb, result } = r;
  r.log.info('callback_applied', {
    ...r.fields,
    outcome: result.outcome,
    file: result.outcome === 'applied' && result.transition ? result.transition.to : undefined,
    events: publishing ? (r.events ?? 0) : undefined,
  });
  if (result.outcome === 'applied' && result.transition?.to === 'failed' && result.transition.from !== 'failed') {
    r.log.warn('upload_failed', {
      service: cb.service,
      appKey: cb.appKey,
      id: cb.id,
      fileName: cb.upload?.fileName,
      code: cb.upload?.code,
    });
  }
}

/**
 * The records to report failed on a FIFO queue: each failed record, and every later record of its message
 * group in the batch. Lambda deletes whatever the response does not name, so a later record reported done
 * would leave the queue before the failed one it follows: its group's order would be lost. On a standard
 * queue (no MessageGroupId) only the failed records themselves. A record given up (`givenUp`: it failed at
 * its last receive, and goes to the dead-letter queue) holds nothing back: SQS returns a group's later
 * messages with it on every receive, so they would reach their last receive with it and be dead-lettered for
 * its failure; the worker applied them without it, and they are reported done.
 */
export function failedInGroupOrder(
  records: readonly SQSRecord[],
  failed: readonly boolean[],
  givenUp: readonly boolean[] = [],
): boolean[] {
  const failedGroups = new Set<string>();
  return records.map((record, i) => {
    const group = record.attributes?.MessageGroupId;
    const fails = failed[i]! || (group !== undefined && failedGroups.has(group));
    if (fails && !givenUp[i] && group !== undefined) failedGroups.add(group);
    return fails;
  });
}
