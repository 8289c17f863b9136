// One task a DUE entry names, swept (docs/task-store.md, Deadlines): what is due of it now is claimed with one
// conditional write (its stall, its settle, and the sweep's lease), its files due are marked, the events are
// published, then the task is re-armed at its next deadline and the lease released. A sweep that stops after its
// claim leaves the lease to expire and the arm due: the next sweep publishes every fact the task holds again
// (same ids). A callback in between fails the conditional writes, and the task is read again. The task is read and
// written through the sweeper's port (lib/domain/sweeps.ts).
import {
  bucketOf,
  fileDue,
  lostFiles,
  nextDeadline,
  purgeAtOf,
  taskDue,
  type TaskClockView,
  type TimeSettings,
} from '../domain/deadlines.ts';
import type { EventPublisher } from '../domain/event-publisher.ts';
import type { SweepRef, SweptFile, SweptTask, TaskSweepsPort } from '../domain/sweeps.ts';
import type { TaskEvent } from '../domain/task-events.ts';
import { toSummary } from '../domain/task-parts.ts';
import type { Capacity } from '../domain/task-store.ts';
import { lostEvent, purgeWarningEvent, settledEvent, stalledEvent, type TimedTask } from '../domain/time-events.ts';

/** How long a sweep holds a task while it publishes: other sweeps skip it meanwhile. */
const LEASE_MS = 2 * 60_000;

/** Attempts at one task before the sweep leaves it for the next one (its arm stays due). */
const MAX_ATTEMPTS = 5;

export interface SweepDeps {
  sweeps: TaskSweepsPort;
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

/** One sweep of one task: its lease, the events it owes until they are out, what it did. */
interface Sweep {
  t: SweepRef;
  now: number;
  lease: number;
  owed: Map<string, TaskEvent>;
  result: TaskSweep;
  deps: SweepDeps;
  cap: Capacity;
}

/** What one attempt found of the task: what is due of it and of its failed files, and whether a sweep crashed. */
interface Found {
  task: SweptTask;
  view: TaskClockView;
  due: ReturnType<typeof taskDue>;
  files: SweptFile[];
  filesDue: { f: SweptFile; warn: boolean; lose: boolean }[];
  anyDue: boolean;
  /** A sweep that stopped after its claim: what it claimed may not be out. */
  crashed: boolean;
}

export async function sweepTask(t: SweepRef, now: number, deps: SweepDeps, cap: Capacity): Promise<TaskSweep> {
  // A lease of its own (two sweeps of one moment hold different ones).
  const lease = now + LEASE_MS + Math.floor(Math.random() * 60_000);
  // Events of what this sweep claimed, until they are out (a conflict after the claim reads the task again).
  const sweep: Sweep = { t, now, lease, owed: new Map(), result: none('contended'), deps, cap };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const found = await readDue(sweep);
    if (!('task' in found)) return { ...sweep.result, outcome: found.outcome };
    let task = found.task;
    if (found.anyDue || found.crashed) {
      const claimed = await claimDue(sweep, found);
      if (!claimed) continue;
      task = claimed;
    }
    const done = await publishAndRearm(sweep, found, task);
    if (done) return { ...sweep.result, outcome: done };
  }
  return sweep.result;
}

/** The task read, and what is due of it; or why it is not this sweep's. */
async function readDue(s: Sweep): Promise<Found | { outcome: 'stale' | 'leased' }> {
  const task = await s.deps.sweeps.read(s.t, s.cap);
  if (!task) return { outcome: 'stale' };
  const time = task.time;
  // Armed later, or nothing armed: an entry left behind by an arm that moved.
  if (time.armed === null || time.armed > bucketOf(s.now)) return { outcome: 'stale' };
  const held = task.lease;
  if (held !== null && held >= s.now && held !== s.lease) return { outcome: 'leased' };
  const view = clockViewOf(task);
  const due = taskDue(view, s.now, s.deps.time);
  const files = (task.parts.counts?.failed ?? 0) > 0 ? await s.deps.sweeps.failedFiles(s.t, s.cap) : [];
  const filesDue = files.map((f) => ({ f, ...fileDue(f.record, f.marks, s.now, s.deps.time) }));
  const anyDue = due.stall !== null || due.settle !== null || filesDue.some((d) => d.warn || d.lose);
  return { task, view, due, files, filesDue, anyDue, crashed: held !== null && held < s.now };
}

/**
 * Claims what is due (the task's stall and settle, and the lease), marks the files due, and owes their events;
 * the task as claimed, or null on a conflict (the task is read again).
 */
async function claimDue(s: Sweep, found: Found): Promise<SweptTask | null> {
  const { due, view, files, filesDue, crashed } = found;
  // The stall keeps the callback it is measured from: only a later one resumes the task.
  const stalledFrom = due.stall === null ? null : view.updatedAt;
  const set = { stalledSince: due.stall, stalledFrom, settledAt: due.settle };
  const claimed = await s.deps.sweeps.claim(found.task, set, { until: s.lease, now: s.now }, s.cap);
  if (!claimed) return null;
  const after = claimed.time;
  // The stall's and the settle's events, owed as soon as claimed (a conflict below reads the task again), and
  // made again once the files are marked: every event of one sweep shows one task under its sequence.
  const owedOfTime = (task: TimedTask) => {
    if (after.stalledSince !== null && (due.stall !== null || crashed)) {
      const stall = { stalledSince: after.stalledSince, stalledFrom: after.stalledFrom };
      owe(s.owed, stalledEvent(task, stall, s.deps.time));
    }
    if (after.settledAt !== null && (due.settle !== null || crashed))
      owe(s.owed, settledEvent(task, after.settledAt, claimed.changeKey));
  };
  owedOfTime(timedTask(claimed, lostCount(files)));
  if (after.stalledSince !== null && due.stall !== null) s.result.stalled += 1;
  if (after.settledAt !== null && due.settle !== null) s.result.settled += 1;
  const marked = await markFiles(filesDue, s.deps, s.cap);
  if (marked === null) return null;
  const counted = timedTask(claimed, lostCount(files));
  owedOfTime(counted);
  // Each mark's event as this sweep makes it (a loss does not bring its file's warning out again); after a
  // crash, every mark the task holds.
  for (const { f, warn, lose } of filesDue) {
    if (!marked.has(f) && !crashed) continue;
    if (f.marks.warnedAt !== null && (warn || crashed)) owe(s.owed, purgeWarningEvent(counted, f.record, s.deps.time));
    if (f.marks.lostAt !== null && (lose || crashed)) owe(s.owed, lostEvent(counted, f.record));
  }
  s.result.warned += filesDue.filter((d) => d.warn && marked.has(d.f)).length;
  s.result.lost += filesDue.filter((d) => d.lose && marked.has(d.f)).length;
  return claimed;
}

/**
 * The events owed, published before the lease is released (a failure here leaves the task to the next sweep), then
 * the task re-armed at its next deadline: the outcome, or null on a conflict (the task is read again).
 */
async function publishAndRearm(s: Sweep, found: Found, task: SweptTask): Promise<TaskSweep['outcome'] | null> {
  const { anyDue, crashed, files } = found;
  if (s.owed.size > 0 && s.deps.events) await s.deps.events.publish([...s.owed.values()]);
  s.result.published += s.owed.size;
  s.owed.clear();
  const next = nextArmBucket(task, files, s.now, s.deps.time);
  const lost = lostCount(files);
  const time = found.task.time;
  // Nothing claimed and nothing to change: the arm stands (a deadline later in the current bucket).
  if (!anyDue && !crashed && next === time.armed && lost === time.lost) return 'not_due';
  // The task as claimed keeps the arm it was read with: a claim, on condition of the version read, never moves it.
  if (!(await s.deps.sweeps.rearm(task, { next, lost }, s.cap))) return null;
  return anyDue || crashed ? 'swept' : 'not_due';
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

/** What the rules of lib/domain/deadlines.ts read of a task: its header's parts, status, latest callback, time. */
function clockViewOf(task: SweptTask): TaskClockView {
  return {
    header: task.parts.header,
    status: toSummary(task.parts).status,
    updatedAt: task.parts.tally.updatedAt,
    time: task.time,
  };
}

/** The bucket to arm a task at: its next deadline's, not before the current one; null when nothing can become due. */
function nextArmBucket(
  task: SweptTask,
  files: readonly Pick<SweptFile, 'record' | 'marks'>[],
  now: number,
  s: TimeSettings,
): number | null {
  const files_ = files.map((f) => ({ file: f.record, marks: f.marks }));
  const next = nextDeadline(clockViewOf(task), files_, s);
  return next === null ? null : Math.max(bucketOf(next), bucketOf(now));
}

/** The task as its events show it, with the lost files this sweep counts. */
function timedTask(task: SweptTask, lost: number): TimedTask {
  const summary = toSummary({ ...task.parts, time: { ...task.time, lost } });
  return { summary, header: task.parts.header, version: task.version };
}
