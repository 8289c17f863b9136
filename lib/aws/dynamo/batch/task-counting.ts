// How the records of one task in a batch are counted into its header: the sequence number the header had
// absorbed as the batch began, and the one header update once all of them are applied
// (lib/domain/task-counts.ts).
import { type BatchContext, type BatchRecord, failStored, isLastReceive } from '../../../domain/batch.ts';
import { sequenceBefore } from '../../../domain/task-counts.ts';
import type { TaskParts } from '../../../domain/task-parts.ts';
import { inParallel } from '../../../in-parallel.ts';
import { errorSentence } from '../../../text.ts';
import type { TaskOfBatch } from './batch-plan.ts';
import type { BatchSteps } from './steps.ts';

/** How the records of one task are counted: their header's absorbed sequence number, or null without one. */
export interface TaskCounting {
  absorbed: string | null;
  /** Its records carry sequence numbers but the header's could not be read: they fail, and come again. */
  unknown: boolean;
  /** A record was kept aside after it may have written part of itself: the task is recounted. */
  recount: boolean;
}

const sequenceOf = (r: BatchRecord) => (r.parsed.kind === 'apply' ? r.parsed.sequence : null);

/**
 * For each task, the last sequence number its header absorbed as the batch begins: the one before the
 * first of its records (a queue of ordered groups delivers a task's messages only once the earlier ones are
 * done), or, when one of them comes again, as its header says (one read). Null when a record has none.
 */
export async function countingOfTasks(
  tasks: readonly TaskOfBatch[],
  steps: BatchSteps,
  ctx: BatchContext,
): Promise<Map<TaskOfBatch, TaskCounting>> {
  const out = new Map<TaskOfBatch, TaskCounting>();
  const reads: TaskOfBatch[] = [];
  for (const task of tasks) {
    const seqs = task.records.map(sequenceOf);
    if (seqs.some((s) => s === null)) {
      out.set(task, { absorbed: null, unknown: false, recount: false });
      continue;
    }
    const first = (seqs as string[]).reduce((a, b) => (b < a ? b : a));
    out.set(task, { absorbed: sequenceBefore(first), unknown: false, recount: false });
    if (task.records.some((r) => (r.receiveCount ?? 1) > 1)) reads.push(task);
  }
  await inParallel(reads, ctx.concurrency, async (task) => {
    const counting = out.get(task)!;
    try {
      counting.absorbed = await steps.absorbedSequence(task.appKey, task.id);
    } catch (err) {
      // Unknown: the task's records fail and come again.
      ctx.log.error('task_sequence_unread', { appKey: task.appKey, id: task.id, error: errorSentence(err) });
      counting.absorbed = null;
      counting.unknown = true;
    }
  });
  return out;
}

/**
 * Counts the writes of one task into its header, once all of its records are applied: the task as the
 * header then says (null: none), or undefined when its records fail (a record failed, or the update did;
 * they all come again, and that batch counts what these wrote). A record that fails at its last receive is
 * given up alone (the dead-letter queue): the task's other records are counted and published without it.
 * Whatever no batch will charge (a record given up or kept aside after a partial write, a copy sent again
 * with a new sequence number) is charged by a recount of the task through the batch's last sequence number.
 */
export async function countTask(
  task: TaskOfBatch,
  counting: TaskCounting,
  steps: BatchSteps,
  ctx: BatchContext,
): Promise<TaskParts | null | undefined> {
  const { appKey, id, records } = task;
  const seqs = records.map(sequenceOf);
  const through = seqs.every((s) => s !== null) ? (seqs as string[]).reduce((a, b) => (b > a ? b : a)) : null;
  /** The recount's error in one sentence, or null once done. */
  const recount = async (reason: string): Promise<string | null> => {
    try {
      await steps.recountTask(appKey, id, through);
      ctx.log.warn('task_recounted', { appKey, id, reason, through: through ?? undefined });
      return null;
    } catch (err) {
      ctx.log.error('task_recount_failed', { appKey, id, reason, error: errorSentence(err) });
      return errorSentence(err);
    }
  };
  const failed = records.filter((r) => r.outcome === 'failed');
  const givenUp = failed.filter((r) => isLastReceive(r, ctx.maxReceiveCount));
  if (failed.length > givenUp.length) {
    // A failure that comes again: every record of the task comes again with it, and its batch counts them all.
    failStored(records, 'another record of the task failed', 'record_failed_with_task');
    if (givenUp.length > 0) await recount('dead_letter');
    return undefined;
  }
  const why = givenUp.length > 0 ? 'dead_letter' : counting.recount ? 'quarantined_after_write' : null;
  const reason = why ?? (records.some((r) => r.resent) ? 'sent_again' : null);
  const writes = records.flatMap((r) => (r.result?.write && r.cb ? [{ callback: r.cb, write: r.result.write }] : []));
  if (writes.length === 0) {
    const error = reason ? await recount(reason) : null;
    if (error === null) return null;
    // Its records come again, and so does the recount.
    failStored(records, error, 'record_failed_with_task');
    return undefined;
  }
  try {
    const parts = await steps.countTask({
      appKey,
      id,
      writes,
      absorbed: counting.absorbed,
      changed: records.some((r) => r.outcome === 'applied'),
      redelivered: records.some((r) => r.receivedBefore),
      ...(reason ? { recountThrough: through } : {}),
    });
    if (reason) ctx.log.warn('task_recounted', { appKey, id, reason, through: through ?? undefined });
    return parts;
  } catch (err) {
    ctx.log.error('task_count_failed', { appKey, id, error: errorSentence(err) });
    // Those at their last receive go to the dead-letter queue; what they wrote is charged when they come back.
    failStored(records, errorSentence(err), 'record_failed_with_task');
    return undefined;
  }
}
