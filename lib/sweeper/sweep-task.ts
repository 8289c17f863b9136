// One task a DUE entry names, swept (docs/task-store.md, Deadlines): what is due of it now is claimed with one
// conditional write (its stall, its settle, and the sweep's lease), its files due are marked, the events are
// published, then the task is re-armed at its next deadline and the lease released. A sweep that stops after its
// claim leaves the lease to expire and the arm due: the next sweep publishes every fact the task holds again
// (same ids). A callback in between fails the conditional writes, and the task is read again.
import { headerParts } from '../aws/dynamo/items.ts';
import { TIME_ATTRS, timeOf } from '../aws/dynamo/time-items.ts';
import { clockViewOf, nextArmBucket, type SweptFile, type TaskSweeps } from '../aws/dynamo/task-sweeps.ts';
import type { TaskRef } from '../aws/dynamo/time-buckets.ts';
import type { EventPublisher } from '../domain/event-publisher.ts';
import { bucketOf, fileDue, lostFiles, purgeAtOf, taskDue, type TimeSettings } from '../domain/deadlines.ts';
import type { TaskEvent } from '../domain/task-events.ts';
import { toSummary } from '../domain/task-parts.ts';
import type { Capacity } from '../domain/task-store.ts';
import { lostEvent, purgeWarningEvent, settledEvent, stalledEvent, type TimedTask } from '../domain/time-events.ts';
import type { Item } from '../aws/dynamo/table-client.ts';

/** How long a sweep holds a task while it publishes: other sweeps skip it meanwhile. */
const LEASE_MS = 2 * 60_000;

/** Attempts at one task before the sweep leaves it for the next one (its arm stays due). */
const MAX_ATTEMPTS = 5;

export interface SweepDeps {
  sweeps: TaskSweeps;
  events?: EventPublisher;
  time: TimeSettings;
}

/** What sweeping one task did. */
export interface TaskSweep {
  outcome: 'swept' | 'not_due' | 'stale' | 'leased' | 'contended';
  stalled: number;
  settled: number;
  warned: number;
  lost: number;
  /** Events published (republished after a crash included). */
  published: number;
}

const none = (outcome: TaskSweep['outcome']): TaskSweep => ({
  outcome,
  stalled: 0,
  settled: 0,
  warned: 0,
  lost: 0,
  published: 0,
});

export async function sweepTask(t: TaskRef, now: number, deps: SweepDeps, cap: Capacity): Promise<TaskSweep> {
  const result = none('contended');
  // A lease of its own (two sweeps of one moment hold different ones).
  const lease = now + LEASE_MS + Math.floor(Math.random() * 60_000);
  // Events of what this sweep claimed, until they are out (a conflict after the claim reads the task again).
  const owed = new Map<string, TaskEvent>();
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let header = await deps.sweeps.header(t, cap);
    const parts = header && headerParts(header);
    if (!header || !parts) return { ...result, outcome: 'stale' };
    const time = timeOf(header);
    // Armed later, or nothing armed: an entry left behind by an arm that moved.
    if (time.armed === null || time.armed > bucketOf(now)) return { ...result, outcome: 'stale' };
    const held = header[TIME_ATTRS.lease] as number | undefined;
    if (held !== undefined && held >= now && held !== lease) return { ...result, outcome: 'leased' };
    // A sweep that stopped after its claim: what it claimed may not be out.
    const crashed = held !== undefined && held < now;
    const view = clockViewOf(header, parts);
    const due = taskDue(view, now, deps.time);
    const files = (parts.counts?.failed ?? 0) > 0 ? await deps.sweeps.failedFiles(t, cap) : [];
    const filesDue = files.map((f) => ({ f, ...fileDue(f.record, f.marks, now, deps.time) }));
    const anyDue = due.stall !== null || due.settle !== null || filesDue.some((d) => d.warn || d.lose);
    let version = header.ver as number;
    if (anyDue || crashed) {
      // The stall keeps the callback it is measured from: only a later one resumes the task (lib/worker/resume.ts).
      const stalledFrom = due.stall === null ? null : view.updatedAt;
      const set = { stalledSince: due.stall, stalledFrom, settledAt: due.settle };
      const claimed = await deps.sweeps.claim(t, version, set, lease, now, cap);
      if (!claimed) continue;
      header = claimed;
      version = claimed.ver as number;
      const after = timeOf(claimed);
      // The stall's and the settle's events, owed as soon as claimed (a conflict below reads the task again), and
      // made again once the files are marked: every event of one sweep shows one task under its sequence.
      const owedOfTime = (task: ReturnType<typeof timedTask>) => {
        if (after.stalledSince !== null && (due.stall !== null || crashed)) {
          const stall = { stalledSince: after.stalledSince, stalledFrom: after.stalledFrom };
          owe(owed, stalledEvent(task, stall, deps.time));
        }
        if (after.settledAt !== null && (due.settle !== null || crashed))
          owe(owed, settledEvent(task, after.settledAt, String(claimed.seq ?? claimed[TIME_ATTRS.changedAt])));
      };
      owedOfTime(timedTask(claimed, lostCount(files)));
      if (after.stalledSince !== null && due.stall !== null) result.stalled += 1;
      if (after.settledAt !== null && due.settle !== null) result.settled += 1;
      const marked = await markFiles(filesDue, deps, cap);
      if (marked === null) continue;
      const counted = timedTask(claimed, lostCount(files));
      owedOfTime(counted);
      // Each mark's event as this sweep makes it (a loss does not bring its file's warning out again); after a
      // crash, every mark the task holds.
      for (const { f, warn, lose } of filesDue) {
        if (!marked.has(f) && !crashed) continue;
        if (f.marks.warnedAt !== null && (warn || crashed)) owe(owed, purgeWarningEvent(counted, f.record, deps.time));
        if (f.marks.lostAt !== null && (lose || crashed)) owe(owed, lostEvent(counted, f.record));
      }
      result.warned += filesDue.filter((d) => d.warn && marked.has(d.f)).length;
      result.lost += filesDue.filter((d) => d.lose && marked.has(d.f)).length;
    }
    // Published before the lease is released: a failure here leaves the task to the next sweep.
    if (owed.size > 0 && deps.events) await deps.events.publish([...owed.values()]);
    result.published += owed.size;
    owed.clear();
    const next = nextArmBucket(header, files, now, deps.time);
    const lost = lostCount(files);
    // Nothing claimed and nothing to change: the arm stands (a deadline later in the current bucket).
    if (!anyDue && !crashed && next === time.armed && lost === time.lost) return { ...result, outcome: 'not_due' };
    const rearmed = await deps.sweeps.rearm(t, version, next, lost, time.armed, cap);
    if (!rearmed) continue;
    return { ...result, outcome: anyDue || crashed ? 'swept' : 'not_due' };
  }
  return result;
}

/** Marks the files due (their records' marks updated in place); the ones this sweep marked, or null on a conflict. */
async function markFiles(
  filesDue: readonly { f: SweptFile; warn: boolean; lose: boolean }[],
  deps: SweepDeps,
  cap: Capacity,
): Promise<Set<SweptFile> | null> {
  const marked = new Set<SweptFile>();
  for (const { f, warn, lose } of filesDue) {
    if (!warn && !lose) continue;
    const purgeAt = purgeAtOf(f.record)!;
    const marks = {
      ...(warn ? { warnedAt: purgeAt - deps.time.purgeWarningBeforeMs } : {}),
      ...(lose ? { lostAt: purgeAt } : {}),
    };
    // A callback changed the file meanwhile: the task is read again.
    if (!(await deps.sweeps.markFile(f, marks, cap))) return null;
    if (warn) f.marks.warnedAt = marks.warnedAt!;
    if (lose) f.marks.lostAt = marks.lostAt!;
    if (warn) f.record.warnedAt = marks.warnedAt!;
    if (lose) f.record.lostAt = marks.lostAt!;
    marked.add(f);
  }
  return marked;
}

const owe = (owed: Map<string, TaskEvent>, e: TaskEvent | null) => {
  if (e) owed.set(e.id, e);
};

const lostCount = (files: readonly SweptFile[]) => lostFiles(files.map((f) => f.record));

/** The task as its events show it, with the lost files this sweep counts. */
function timedTask(header: Item, lost: number): TimedTask {
  const parts = headerParts(header)!;
  const summary = toSummary({ ...parts, time: { ...timeOf(header), lost } });
  return { summary, header: parts.header, version: header.ver as number };
}
