// The worker's logic: each SQS record is parsed in full and applied to its task exactly once. A record
// that can never be applied (bad body, forged signature, replay) is quarantined and acknowledged, so it
// is not retried forever; a record that failed for a transient reason is reported as a batch item
// failure and comes back after the visibility time-out (then the dead-letter queue, after maxReceiveCount),
// with the later records of its message group in the batch (failedInGroupOrder).
// Once every record of a task is applied, one update of its header counts them all (lib/domain/task-counts.ts)
// and returns the task its events are read off; when a record of a task fails, or that update does, every
// record of the task in the batch fails, so that the batch that comes again counts what they wrote. Task
// events are published once the writes are counted; a record whose events could not be published fails
// too, and its redelivery (a duplicate for the store) publishes them again from the stored state.
// Every line about a record names the ingest's request id (`requestId`, the API Gateway request that
// brought the callback), so that one search follows a callback from the door to its task.
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { applyRecord, logApplied, type Applied, type RecordOutcome } from './apply-record.ts';
import { DEFAULT_RECORD_CONCURRENCY, type WorkerDeps } from './deps.ts';
import { inParallel } from '../in-parallel.ts';
import { groupByItem, groupByTask, prepareRecord, taskKeyOf } from './prepare-record.ts';
import { countTask, countingOfTasks } from './task-counting.ts';
import { eventsOfTask, publishAll, type TaskEvents } from './task-events-of-batch.ts';
import { resumeOf, writeResumes, type Resume } from './resume.ts';

export type { RecordOutcome } from './apply-record.ts';

export async function processBatch(
  event: SQSEvent,
  deps: WorkerDeps,
): Promise<SQSBatchResponse & { outcomes: RecordOutcome[] }> {
  const records = event.Records ?? [];
  const concurrency = Math.max(1, deps.concurrency ?? DEFAULT_RECORD_CONCURRENCY);
  const started = (deps.now ?? Date.now)();
  const prepared = records.map(prepareRecord);
  const applied: Applied[] = new Array(records.length);
  // Records that write the same item (one file, or one task's header) are applied one after the other:
  // side by side they would only conflict. Everything else goes in parallel, callbacks of one task too,
  // the longest runs first. Once every record of a task is applied, one update of its header counts them
  // and gives the task the events of all of them are read off; the batch's events go out together at the end.
  const groups = [...groupByItem(prepared).values()].sort((a, b) => b.length - a.length);
  const tasks = groupByTask(prepared);
  const counting = await countingOfTasks(prepared, tasks, deps, concurrency);
  const groupsLeft = new Map<string, number>();
  const taskEvents: TaskEvents[] = [];
  const resumes: [string, Resume][] = [];
  for (const group of groups) {
    const task = taskKeyOf(prepared[group[0]!]!);
    if (task !== null) groupsLeft.set(task, (groupsLeft.get(task) ?? 0) + 1);
  }
  await inParallel(groups, concurrency, async (group) => {
    const task = taskKeyOf(prepared[group[0]!]!);
    for (const i of group) applied[i] = await applyRecord(prepared[i]!, deps, task ? counting.get(task) : undefined);
    const left = task === null ? 0 : groupsLeft.get(task)! - 1;
    if (task !== null) groupsLeft.set(task, left);
    if (left > 0 || task === null) return;
    const done = tasks.get(task)!;
    const parts = await countTask(
      done.map((i) => ({ p: prepared[i]!, a: applied[i]! })),
      counting.get(task)!,
      deps,
    );
    // A redelivery (its callbacks now duplicates) may be of the batch whose resume did not get out.
    const changed = done.some((i) => {
      const p = prepared[i]!;
      return applied[i]!.outcome === 'applied' || (p.kind === 'apply' && (p.msg.receiveCount ?? 1) > 1);
    });
    const resume = parts === undefined ? null : resumeOf(parts, changed, deps);
    if (resume) resumes.push([task, resume]);
    if (deps.events && parts !== undefined)
      taskEvents.push(
        await eventsOfTask(
          done.map((i) => applied[i]!),
          parts,
          counting.get(task)!.absorbed === null,
        ),
      );
    if (deps.events && resume) taskEvents.push({ writes: done.map((i) => applied[i]!), events: [resume.event] });
  });
  await flushArms(applied, deps);
  if (deps.events) await publishAll(taskEvents, deps.events);
  // Once out (a record that failed to publish comes again, and its task's header still says the stall).
  const out = resumes.filter(([task]) => !tasks.get(task)!.some((i) => applied[i]!.outcome === 'failed'));
  await writeResumes(
    out.map(([, r]) => r),
    deps,
  );
  for (const a of applied) logApplied(a, deps);
  const failed = failedInGroupOrder(
    records,
    applied.map((a) => a.outcome === 'failed'),
  );
  const failures = records.filter((_, i) => failed[i]).map((r) => ({ itemIdentifier: r.messageId }));
  deps.log.info('batch_done', {
    records: records.length,
    failed: failures.length,
    // Applied, yet reported failed behind a failed record of their group (they come back after it).
    heldBack: failed.filter((f, i) => f && applied[i]!.outcome !== 'failed').length,
    latencyMs: (deps.now ?? Date.now)() - started,
  });
  return { batchItemFailures: failures, outcomes: applied.map((a) => a.outcome) };
}

/**
 * The records to report failed on a FIFO queue: each failed record, and every later record of its message
 * group in the batch. Lambda deletes whatever the response does not name, so a later record reported done
 * would leave the queue before the failed one it follows: its group's order would be lost. On a standard
 * queue (no MessageGroupId) only the failed records themselves.
 */
export function failedInGroupOrder(records: readonly SQSRecord[], failed: readonly boolean[]): boolean[] {
  const failedGroups = new Set<string>();
  return records.map((record, i) => {
    const group = record.attributes?.MessageGroupId;
    const fails = failed[i]! || (group !== undefined && failedGroups.has(group));
    if (fails && group !== undefined) failedGroups.add(group);
    return fails;
  });
}

/**
 * The deadline entries of the tasks the batch created (one write for all of them). When they cannot be written,
 * every record of the batch fails: they come again, and their tasks, found created, are armed then.
 */
async function flushArms(applied: readonly Applied[], deps: WorkerDeps): Promise<void> {
  try {
    await deps.store.flushArms?.();
  } catch (err) {
    const error = err instanceof Error ? { name: err.name, message: err.message } : String(err);
    deps.log.error('task_arming_failed', { error });
    for (const a of applied) if (a.outcome === 'applied' || a.outcome === 'duplicate') a.outcome = 'failed';
  }
}
