// The batch protocol of the DynamoDB store, in one place (docs/task-store.md, "The batch protocol"): a batch's
// records applied in the order of ./batch-plan.ts, each uncounted; the puts a file's records held written; once
// every record of a task is applied, one update of its header counts them all and returns the task its events are
// read off; the deadline entries of the tasks it created; once the events are out, a stall removed and, of a task
// whose records failed, everything this writer remembers of it forgotten. When a record of a task fails, or its
// count does, every record of the task fails (but one given up at its last receive), so that the batch that
// comes again counts what they wrote.
import type { AppliedBatch, BatchContext, BatchRecord, BatchWriter, EventsToPublish } from '../../../domain/batch.ts';
import { inParallel } from '../../../in-parallel.ts';
import { applyRecord } from './apply-record.ts';
import { type ItemGroup, planBatch, type TaskOfBatch } from './batch-plan.ts';
import { failCarried, flushArms, writeHeld } from './held-puts.ts';
import { type Resume, resumeOf, writeResumes } from './resume.ts';
import type { BatchSteps } from './steps.ts';
import { countingOfTasks, countTask, type TaskCounting } from './task-counting.ts';
import { eventsOfTask } from './task-events.ts';

/** A task while its batch is applied. */
interface TaskInFlight {
  task: TaskOfBatch;
  counting: TaskCounting;
  groupsLeft: number;
  /** Released once the first record of its lead is applied; null when this writer knows the header already. */
  header: { known: Promise<void>; release: () => void } | null;
}

/** What the batch's tasks leave for the worker and for `finish`. */
interface BatchOut {
  events: EventsToPublish[];
  resumes: [TaskOfBatch, Resume][];
}

export async function applyBatchWith(
  steps: BatchSteps,
  records: readonly BatchRecord[],
  ctx: BatchContext,
): Promise<AppliedBatch> {
  const plan = planBatch(records);
  const counting = await countingOfTasks(plan.tasks, steps, ctx);
  const inFlight = new Map(plan.tasks.map((task) => [task, taskInFlight(task, counting.get(task)!, steps)]));
  const out: BatchOut = { events: [], resumes: [] };
  await inParallel(plan.groups, ctx.concurrency, async (group) => {
    const task = plan.taskOf.get(group);
    const flight = task && inFlight.get(task);
    await applyGroup(group, flight, steps, ctx);
    if (flight && --flight.groupsLeft === 0) await finishTask(flight, steps, ctx, out);
  });
  await flushArms(records, steps, ctx);
  return { events: out.events, finish: () => finishBatch(plan.tasks, out.resumes, steps, ctx) };
}

function taskInFlight(task: TaskOfBatch, counting: TaskCounting, steps: BatchSteps): TaskInFlight {
  // A header this writer knows needs neither a read nor a creation: nothing to wait for.
  if (steps.knowsHeader?.(task.appKey, task.id))
    return { task, counting, groupsLeft: task.groups.length, header: null };
  let release = () => {};
  const known = new Promise<void>((resolve) => (release = resolve));
  return { task, counting, groupsLeft: task.groups.length, header: { known, release } };
}

/** The records of one item, one after the other; each but the last may leave its put for the next to carry. */
async function applyGroup(
  group: ItemGroup,
  flight: TaskInFlight | undefined,
  steps: BatchSteps,
  ctx: BatchContext,
): Promise<void> {
  const lead = flight?.task.lead === group;
  if (flight?.header && !lead) await flight.header.known;
  try {
    for (const [k, r] of group.entries()) {
      try {
        await applyRecord(r, steps, ctx, flight?.counting, k < group.length - 1);
      } finally {
        if (lead) flight?.header?.release();
      }
    }
  } finally {
    if (group.length > 1) {
      failCarried(group);
      await writeHeld(group, steps);
    }
  }
}

/** Once every record of a task is applied: its count, its events, and a resume of its stall. */
async function finishTask(flight: TaskInFlight, steps: BatchSteps, ctx: BatchContext, out: BatchOut): Promise<void> {
  const { task, counting } = flight;
  const parts = await countTask(task, counting, steps, ctx);
  // A redelivery (its callbacks now duplicates) may be of the batch whose resume did not get out.
  const changed = task.records.some((r) => r.outcome === 'applied' || r.receivedBefore);
  const resume = parts === undefined ? null : resumeOf(parts, changed, ctx);
  if (resume) out.resumes.push([task, resume]);
  if (!ctx.publishing) return;
  if (parts !== undefined) out.events.push(await eventsOfTask(task.records, parts, counting.absorbed === null));
  if (resume) out.events.push({ records: task.records, events: [resume.event] });
}

/**
 * Once the events are out (a record that failed to publish comes again, and its task's header still says the
 * stall): the stalls published are removed. A header put held for a count that did not write it is dropped; of a
 * task whose records failed, nothing the batch's writes made known is kept (they come again, and must find the
 * table).
 */
async function finishBatch(
  tasks: readonly TaskOfBatch[],
  resumes: readonly [TaskOfBatch, Resume][],
  steps: BatchSteps,
  ctx: BatchContext,
): Promise<void> {
  const failed = (task: TaskOfBatch) => task.records.some((r) => r.outcome === 'failed');
  const published = resumes.filter(([task]) => !failed(task)).map(([, r]) => r);
  await writeResumes(published, steps, ctx);
  for (const task of tasks) {
    if (failed(task)) steps.forgetTask?.(task.appKey, task.id);
    else steps.dropHeld?.(task.appKey, task.id);
  }
}

/** A batch writer over steps given one by one (a test's faults, a store wrapped): the protocol above over them. */
export function batchWriterOf<S extends BatchSteps>(steps: S): S & BatchWriter {
  return { ...steps, applyBatch: (records, ctx) => applyBatchWith(steps, records, ctx) };
}
