// How the records of one task in a batch are counted into its header: the sequence number the header had
// absorbed as the batch began, and the one header update once all of them are applied
// (lib/domain/task-counts.ts).
import { sequenceBefore } from '../domain/task-counts.ts';
import type { TaskParts } from '../domain/task-parts.ts';
import type { Applied } from './apply-record.ts';
import { inParallel } from '../in-parallel.ts';
import type { WorkerDeps } from './deps.ts';
import type { Prepared, TaskCounting } from './prepare-record.ts';
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
 * they all come again, and that batch counts what these wrote). A record kept aside after a partial write,
 * or one given up for the dead-letter queue, has its task recounted, through the batch's last sequence number.
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
      a.log.warn('record_failed_with_task', { ...a.fields, outcome: a.outcome, error: errorSentence(err) });
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
    const parts = await deps.store.countTask({
      appKey,
      id,
      writes,
      absorbed: counting.absorbed,
      changed: records.some(({ a }) => a.outcome === 'applied'),
      redelivered: records.some(({ p }) => p.kind === 'apply' && (p.msg.receiveCount ?? 1) > 1),
    });
    if (counting.recount) await recount('quarantined_after_write');
    return parts;
  } catch (err) {
    deps.log.error('task_count_failed', { appKey, id, error: errorSentence(err) });
    failRecords(err);
    return undefined;
  }
}
