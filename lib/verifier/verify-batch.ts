// The verifier's logic (docs/verification.md): for each `file.uploaded` event its queue delivers, the file is read as
// it stands (still uploaded? its URL, the size its slice or end reported), checked in its storage, judged
// (lib/domain/verification.ts), stored, and when the storage does not hold it as reported, announced (`file.missing`);
// and each `file.upload_failed` is kept as a failure of its storage, each success too while its storage has failures
// open, for the storage incidents (./incidents.ts). Off the worker's path: the worker publishes those events as it
// always does, and the topic's subscription brings them here. A storage that does not answer is asked again at the
// message's next receive; at its last receive the file is stored `unverifiable`, with the storage's silence as the
// reason. Anything that fails otherwise (the table, the topic) fails the record, which comes back, and after the
// queue's maxReceiveCount waits in the verifier's dead-letter queue.
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { CheckedAnswer } from '../aws/storage/storage-checks.ts';
import type { IncidentStore } from '../aws/dynamo/storage/storage-incidents.ts';
import type { VerifierStore } from '../aws/dynamo/storage/verifier-store.ts';
import type { EventPublisher } from '../domain/event-publisher.ts';
import { fileState, toFileView } from '../domain/task.ts';
import { type CheckedState, isMissingState, verdictOf, type VerificationState } from '../domain/verification.ts';
import { fileMissingEvent } from '../domain/verification-events.ts';
import { inParallel } from '../in-parallel.ts';
import { FILE_HOLD_MS } from '../platform/delivery.ts';
import type { Logger } from '../log.ts';
import { errorSentence } from '../text.ts';
import { type FileEvent, readFileEvent } from './message.ts';

/** Records of one batch checked at the same time. */
const DEFAULT_VERIFY_CONCURRENCY = 5;

export interface VerifierDeps {
  store: VerifierStore;
  incidents: IncidentStore;
  storage: {
    check(appKey: string, fileName: string, fileUrl: string | null): Promise<CheckedAnswer>;
    storageOfAppKey(appKey: string): string;
  };
  /** Where `file.missing` goes; absent, nothing is published. */
  events?: EventPublisher;
  log: Logger;
  /** The verify queue's maxReceiveCount: a storage still silent at the last receive makes the file unverifiable. */
  maxReceiveCount: number;
  concurrency?: number;
  now?: () => number;
}

/** What became of a record: the file's state, a failure of its storage kept, nothing to do, or a retry. */
export type VerifyOutcome = CheckedState | 'failure_kept' | 'skipped' | 'retry' | 'failed';

const receiveCountOf = (record: SQSRecord): number => Number(record.attributes?.ApproximateReceiveCount ?? 1) || 1;

export async function processVerifyBatch(
  event: SQSEvent,
  deps: VerifierDeps,
): Promise<SQSBatchResponse & { outcomes: VerifyOutcome[] }> {
  const records = event.Records ?? [];
  const outcomes = await inParallel(records, deps.concurrency ?? DEFAULT_VERIFY_CONCURRENCY, async (record) => {
    try {
      return await verifyRecord(record, deps);
    } catch (err) {
      deps.log.error('verification_failed', { messageId: record.messageId, error: errorSentence(err) });
      return 'failed' as const;
    }
  });
  const batchItemFailures = records
    .filter((_, i) => outcomes[i] === 'retry' || outcomes[i] === 'failed')
    .map((r) => ({ itemIdentifier: r.messageId }));
  return { batchItemFailures, outcomes };
}

async function verifyRecord(record: SQSRecord, deps: VerifierDeps): Promise<VerifyOutcome> {
  const read = readFileEvent(record.body);
  if (!read.ok) {
    deps.log.warn('verification_skipped', { messageId: record.messageId, reason: read.reason });
    return 'skipped';
  }
  const e = read.event;
  if (e.type === 'file.upload_failed') {
    if (e.file.purgeAt === null) return 'skipped';
    const storage = deps.storage.storageOfAppKey(e.task.appKey);
    const failure = { service: e.task.service, taskId: e.task.id, fileName: e.file.fileName, at: e.occurredAt };
    await deps.incidents.recordFailure(e.task.appKey, storage, { ...failure, purgeAt: e.file.purgeAt });
    deps.log.info('upload_failure_kept', {
      appKey: e.task.appKey,
      storage,
      taskId: e.task.id,
      fileName: failure.fileName,
    });
    return 'failure_kept';
  }
  if (e.type !== 'file.uploaded') return 'skipped';
  const outcome = await verifyFile(e, receiveCountOf(record) >= deps.maxReceiveCount, deps);
  // A success ends a storage's failures (a file checked or not: the platform uploaded it).
  if (outcome !== 'retry')
    await deps.incidents.recordSuccess(e.task.appKey, deps.storage.storageOfAppKey(e.task.appKey), e.occurredAt);
  return outcome;
}

/** Checks one uploaded file and stores what its storage holds. `last`: the message's last receive. */
async function verifyFile(e: FileEvent, last: boolean, deps: VerifierDeps): Promise<VerifyOutcome> {
  const { appKey, id, service } = e.task;
  const { fileName } = e.file;
  const fields = { appKey, taskId: id, service, fileName };
  const file = await deps.store.file(appKey, id, fileName);
  // A later failed upload (or none stored yet, which the event contradicts) leaves nothing to check.
  if (!file || fileState(file) !== 'uploaded') {
    deps.log.info('verification_skipped', { ...fields, reason: 'the file is not uploaded as it stands' });
    return 'skipped';
  }
  // A file that failed before its upload succeeded: its failure counts for its storage's incidents, also when its own
  // event never went out (a failure and its retry applied in one batch publish only the success).
  if (file.firstFailureAt !== null) {
    const failure = {
      service,
      taskId: id,
      fileName,
      at: file.firstFailureAt,
      purgeAt: file.firstFailureAt + FILE_HOLD_MS,
    };
    await deps.incidents.recordFailure(appKey, deps.storage.storageOfAppKey(appKey), failure);
  }
  const started = (deps.now ?? Date.now)();
  const answer = await deps.storage.check(appKey, fileName, file.upload!.url);
  if (!answer.found && answer.why === 'unreachable' && !last) {
    deps.log.warn('verification_retried', { ...fields, storage: answer.storage, reason: answer.message });
    return 'retry';
  }
  const verdict = verdictOf(answer, file.size, (deps.now ?? Date.now)());
  const stored = await deps.store.checks.record(
    { appKey, id, fileName },
    verdict as typeof verdict & { state: CheckedState },
    file.upload!.rank,
  );
  const state: VerificationState = stored.verification.state;
  deps.log.info('file_checked', {
    ...fields,
    state,
    storage: answer.storage,
    sizeMatches: stored.verification.sizeMatches,
    ...(stored.verification.reason ? { reason: stored.verification.reason } : {}),
    checkMs: (deps.now ?? Date.now)() - started,
  });
  if (isMissingState(state) && deps.events) {
    const task = await deps.store.summary(appKey, id);
    if (task) {
      // The attempts as the worker counted them when it published the upload, when it knew of more.
      const view = { ...toFileView(file), attempts: Math.max(file.attempts, e.file.attempts) };
      const missing = fileMissingEvent(task.summary, task.version, view, stored.verification, stored.missingSince!);
      await deps.events.publish([missing]);
    } else deps.log.warn('file_missing_unpublished', { ...fields, reason: 'the task keeps no counts to report' });
  }
  return state as CheckedState;
}
