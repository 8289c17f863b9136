// How the records of one task in a batch are counted into its header: the sequence number the header had
// absorbed as the batch began, and the one header update once all of them are applied
// (lib/domain/task-counts.ts).
import { sequenceBefore } from '../domain/task-counts.ts';
import type { TaskParts } from '../domain/task-parts.ts';
import type { Applied } from './apply-record.ts';
import { inParallel } from '../in-parallel.ts';
import { DEFAULT_MAX_RECEIVE_COUNT, type WorkerDeps } from './deps.ts';
import { isLastReceive, receivedBefore, type Prepared, type TaskCounting } from './prepare-record.ts';
import { errorSentence } from '../text.ts';

/**
 * For each task, the last sequence number its header absorbed as the batch begins: the one before the
 * first of its records (a queue of ordered groups delivers a task's messages only once the earlier ones are
 * done), or, when one of them comes again, as its header says (one read). Null when a record has none.
 */
export async function countingOfTasks(
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
      deps.log.error('task_sequence_unread', { appKey: r.cb.appKey, id: r.cb.id, error: errorSentence(err) });
      out.get(task)!.absorbed = null;
      out.get(task)!.unknown = true;
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
      deps.log.error('task_recount_failed', { appKey, id, reason, error: errorSentence(err) });
    }
  };
  const failRecords = (err: unknown) => {
    for (const { a } of records) {
      if (a.outcome !== 'applied' && a.outcome !== 'duplicate') continue;
      a.error = errorSentence(err);
      a.log.warn('record_failed_with_task', { ...a.fields, outcome: a.outcome, error: a.error });
      a.outcome = 'failed';
    }
  };
  const failed = records.filter(({ a }) => a.outcome === 'failed');
  const max = deps.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT;
  const givenUp = failed.filter(({ p }) => p.kind === 'apply' && isLastReceive(p.msg, max));
  if (failed.length > givenUp.length) {
    // A failure that comes again: every record of the task comes again with it, and its batch counts them all.
    failRecords(new Error('another record of the task failed'));
    if (givenUp.length > 0) await recount('dead_letter');
    return undefined;
  }
  const why = givenUp.length > 0 ? 'dead_letter' : counting.recount ? 'quarantined_after_write' : null;
  const resent = records.some(({ p }) => p.kind === 'apply' && p.msg.resent === true);
  const reason = why ?? (resent ? 'sent_again' : null);
  const writes = records.flatMap(({ a }) =>
    a.result?.write && a.cb ? [{ callback: a.cb, write: a.result.write }] : [],
  );
  if (writes.length === 0) {
    if (!reason) return null;
    try {
      await deps.store.recountTask(appKey, id, through);
      deps.log.warn('task_recounted', { appKey, id, reason, through: through ?? undefined });
    } catch (err) {
      // Its records come again, and so does the recount.
      deps.log.error('task_recount_failed', { appKey, id, reason, error: errorSentence(err) });
      failRecords(err);
      return undefined;
    }
    return null;
  }
  try {
    const parts = await deps.store.countTask({
      appKey,
      id,
      writes,
      absorbed: counting.absorbed,
      changed: records.some(({ a }) => a.outcome === 'applied'),
      redelivered: records.some(({ p }) => p.kind === 'apply' && receivedBefore(p.msg)),
      ...(reason ? { recountThrough: through } : {}),
    });
    if (reason) deps.log.warn('task_recounted', { appKey, id, reason, through: through ?? undefined });
    return parts;
  } catch (err) {
    deps.log.error('task_count_failed', { appKey, id, error: errorSentence(err) });
    failRecords(err);
    // Those at their last receive go to the dead-letter queue; what they wrote is charged when they come back.
    return undefined;
  }
}
