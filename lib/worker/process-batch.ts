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
import { DEFAULT_MAX_RECEIVE_COUNT, DEFAULT_RECORD_CONCURRENCY, type WorkerDeps } from './deps.ts';
import { inParallel } from '../in-parallel.ts';
import { compositeKey, errorSentence } from '../text.ts';
import { fileNameOf, isHeaderEvent } from '../domain/task.ts';
import {
  groupByItem,
  groupByTask,
  isLastReceive,
  prepareRecord,
  receivedBefore,
  taskKeyOf,
  type Prepared,
} from './prepare-record.ts';
import { countTask, countingOfTasks } from './task-counting.ts';
import { eventsOfTask, publishAll, type TaskEvents } from './task-events-of-batch.ts';
import { resumeOf, writeResumes, type Resume } from './resume.ts';
import { archiveBatch } from './archive-batch.ts';
import type { UnarmedTask } from '../domain/task-store.ts';
import { noteMessages } from './message-notes.ts';

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
  // the longest runs first, except that each task's lead group goes first (leadGroups). Once every record
  // of a task is applied, one update of its header counts them and gives the task the events of all of
  // them are read off; the batch's events go out together at the end.
  const { groups, leadOf } = leadGroups(prepared);
  const headerSettled = new Map<string, { done: Promise<void>; settle: () => void }>();
  for (const [task, lead] of leadOf) {
    // A header this worker knows needs neither a read nor a creation: nothing to wait for.
    const p = prepared[lead[0]!]!;
    if (p.kind === 'apply' && deps.store.knowsHeader?.(p.cb.appKey, p.cb.id)) continue;
    let settle = () => {};
    const done = new Promise<void>((resolve) => (settle = resolve));
    headerSettled.set(task, { done, settle });
  }
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
    const settled = task === null ? undefined : headerSettled.get(task);
    const lead = task !== null && leadOf.get(task) === group;
    if (settled && !lead) await settled.done;
    try {
      for (const [k, i] of group.entries()) {
        try {
          // The records of one file: each but the last may leave its put for the next to carry.
          const hold = k < group.length - 1;
          applied[i] = await applyRecord(prepared[i]!, deps, task ? counting.get(task) : undefined, hold);
        } finally {
          if (lead) settled?.settle();
        }
      }
    } finally {
      if (group.length > 1) {
        failCarried(group.map((i) => applied[i]!));
        await writeHeld(
          group.map((i) => applied[i]!),
          deps,
        );
      }
    }
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
      return applied[i]!.outcome === 'applied' || (p.kind === 'apply' && receivedBefore(p.msg));
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
  // Every stored record archived, in one call; one that is not fails, and comes again (archive-batch.ts). The task
  // events go out meanwhile: neither waits on the other (a record that fails either way comes again, and its line,
  // archived twice, is one delivery of `raw`).
  await Promise.all([
    archiveBatch(prepared, applied, deps),
    deps.events ? publishAll(taskEvents, deps.events) : undefined,
  ]);
  // Once out (a record that failed to publish comes again, and its task's header still says the stall).
  const out = resumes.filter(([task]) => !tasks.get(task)!.some((i) => applied[i]!.outcome === 'failed'));
  await writeResumes(
    out.map(([, r]) => r),
    deps,
  );
  // A header put held for a count that did not write it (its task's records failed) is dropped; of a task whose
  // records failed, nothing the batch's writes made known is kept (they come again, and must find the table).
  for (const indexes of tasks.values()) {
    const p = prepared[indexes[0]!]!;
    if (p.kind !== 'apply') continue;
    if (indexes.some((i) => applied[i]!.outcome === 'failed')) deps.store.forgetTask?.(p.cb.appKey, p.cb.id);
    else deps.store.dropHeld?.(p.cb.appKey, p.cb.id);
  }
  for (const a of applied) logApplied(a, deps);
  const max = deps.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT;
  const givenUp = prepared.map(
    (p, i) => applied[i]!.outcome === 'failed' && p.kind !== 'unreadable' && isLastReceive(p.msg, max),
  );
  for (const [i, up] of givenUp.entries())
    if (up) applied[i]!.log.error('callback_given_up', { messageId: records[i]!.messageId, receiveCount: max });
  // What `dlq list` and `dlq redrive --wait` read of the messages given up and of those sent again (no others).
  await noteMessages(records, prepared, applied, givenUp, deps);
  const failed = failedInGroupOrder(
    records,
    applied.map((a) => a.outcome === 'failed'),
    givenUp,
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
 * The records of one file before a record that failed: each left its put held for the next to carry, and a put
 * that failed carrying them lost them. They fail with it (and come again, or, at their last receive, go to the
 * dead-letter queue with it): reported done, they would be callbacks the queue dropped and no item recorded.
 */
function failCarried(group: readonly Applied[]): void {
  const failedAt = group.findIndex((a) => a.outcome === 'failed');
  for (const a of group.slice(0, Math.max(0, failedAt))) {
    if (a.outcome !== 'applied' && a.outcome !== 'duplicate') continue;
    a.log.warn('record_failed_with_file', { ...a.fields, outcome: a.outcome });
    a.outcome = 'failed';
  }
}

/**
 * Writes the put a file's records left held, when the last of them wrote none (a duplicate, a refusal, a
 * failure). When that fails, the file's callbacks are not stored: their records fail, and come again.
 */
async function writeHeld(group: readonly Applied[], deps: WorkerDeps): Promise<void> {
  const cb = group.find((a) => a?.cb)?.cb;
  const fileName = cb ? fileNameOf(cb) : null;
  if (!cb || !fileName || !deps.store.writeHeld) return;
  try {
    await deps.store.writeHeld(cb.appKey, cb.id, fileName);
  } catch (err) {
    for (const a of group) {
      if (a.outcome !== 'applied' && a.outcome !== 'duplicate') continue;
      a.error = errorSentence(err);
      a.log.error('callback_failed', {
        ...a.fields,
        outcome: a.outcome,
        error: a.error,
      });
      a.outcome = 'failed';
    }
  }
}

/**
 * The batch's item groups in the order they are started: each task's lead group first, the one that writes
 * its header (a start or an end) or else the one holding its first record, then the others, the longest
 * first. The other groups of a task wait for the first record of its lead: that record creates the header,
 * or reads it, and the others then know it, where side by side each would read it, or race to create it
 * (and move its index keys when an identity comes second). Leads are started before any group that waits,
 * so a wait never holds a slot a lead needs.
 */
function leadGroups(prepared: readonly Prepared[]): { groups: number[][]; leadOf: Map<string, number[]> } {
  const all = [...groupByItem(prepared).values()];
  const writesHeader = (group: number[]) =>
    group.some((i) => {
      const p = prepared[i]!;
      return p.kind === 'apply' && isHeaderEvent(p.cb);
    });
  const leadOf = new Map<string, number[]>();
  for (const group of all) {
    const task = taskKeyOf(prepared[group[0]!]!);
    if (task === null) continue;
    const lead = leadOf.get(task);
    if (!lead || (!writesHeader(lead) && (writesHeader(group) || group[0]! < lead[0]!))) leadOf.set(task, group);
  }
  const leads = new Set(leadOf.values());
  const longestFirst = (a: number[], b: number[]) => b.length - a.length;
  const groups = [
    ...all.filter((g) => leads.has(g)).sort(longestFirst),
    ...all.filter((g) => !leads.has(g)).sort(longestFirst),
  ];
  return { groups, leadOf };
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

/**
 * The deadline entries of the tasks the batch created (one write for all of them). The records of a task whose
 * entries cannot be written fail, and only those: they come again, and their task, found created, is armed then.
 */
async function flushArms(applied: readonly Applied[], deps: WorkerDeps): Promise<void> {
  let unarmed: UnarmedTask[];
  try {
    unarmed = (await deps.store.flushArms?.()) ?? [];
  } catch (error) {
    // Which tasks it did not say: every task of the batch.
    unarmed = applied.flatMap((a) => (a.cb ? [{ appKey: a.cb.appKey, id: a.cb.id, error }] : []));
  }
  const failing = new Map<string, string>();
  for (const { appKey, id, error } of unarmed) {
    const task = compositeKey(appKey, id);
    if (failing.has(task)) continue;
    failing.set(task, errorSentence(error));
    deps.log.error('task_arming_failed', { appKey, id, error: errorSentence(error) });
  }
  for (const a of applied) {
    const ok = a.outcome === 'applied' || a.outcome === 'duplicate';
    const error = ok && a.cb ? failing.get(compositeKey(a.cb.appKey, a.cb.id)) : undefined;
    if (error === undefined) continue;
    a.outcome = 'failed';
    a.error = `its task's deadline could not be written: ${error}`;
  }
}
