// The worker's logic: each SQS record is read and parsed in full, the batch is applied to its tasks by the store
// in one call (lib/domain/batch.ts: each record applied exactly once, or kept aside, and each task counted once),
// the task events go out together once every write is durable (and every stored callback to the archive, when there
// is one), and the batch is reported to SQS. A record that can never be applied (bad body, forged signature, replay)
// is quarantined and acknowledged, so it is not retried forever; a record that failed for a transient reason is
// reported as a batch item failure and comes back after the visibility time-out (then the dead-letter queue, after
// maxReceiveCount), with the later records of its message group in the batch (failedInGroupOrder). A record whose
// events could not be published fails too, and its redelivery (a duplicate for the store) publishes them again from
// the stored state. Every line about a record names the ingest's request id (`requestId`, the API Gateway request
// that brought the callback), so that one search follows a callback from the door to its task.
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { BatchContext, RecordOutcome } from '../domain/batch.ts';
import { DEFAULT_MAX_RECEIVE_COUNT, DEFAULT_RECORD_CONCURRENCY, type WorkerDeps } from './deps.ts';
import { archiveBatch } from './archive-batch.ts';
import { prepareRecord } from './prepare-record.ts';
import { publishBatch } from './publish-batch.ts';
import { reportBatch } from './report-batch.ts';

export type { RecordOutcome } from '../domain/batch.ts';
export { failedInGroupOrder } from './report-batch.ts';

export async function processBatch(
  event: SQSEvent,
  deps: WorkerDeps,
): Promise<SQSBatchResponse & { outcomes: RecordOutcome[] }> {
  const messages = event.Records ?? [];
  const ctx = batchContext(deps);
  const started = ctx.now();
  const records = messages.map((m) => prepareRecord(m, deps.log, started));
  const applied = await deps.store.applyBatch(records, ctx);
  // Once the writes are done, every stored record's line goes to the archive while the task events go out: neither
  // waits on the other (a record that fails either way comes again, and its line, archived twice, is one delivery
  // of `raw`).
  await Promise.all([archiveBatch(records, deps), deps.events ? publishBatch(applied.events, deps.events) : null]);
  await applied.finish();
  return reportBatch(messages, records, { ...ctx, started }, deps);
}

function batchContext(deps: WorkerDeps): BatchContext {
  return {
    log: deps.log,
    concurrency: Math.max(1, deps.concurrency ?? DEFAULT_RECORD_CONCURRENCY),
    maxReceiveCount: deps.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT,
    now: deps.now ?? Date.now,
    ...(deps.time ? { time: deps.time } : {}),
    publishing: deps.events !== undefined,
  };
}
