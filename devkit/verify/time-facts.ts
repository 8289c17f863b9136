// The facts of time a receiver must hold at a given moment (docs/contract.md §4), worked out here from the
// expected tasks (the fold of the callbacks a run sent) and the clock, on the contract's own terms and not by
// the code under test: a file whose upload failed for good is lost once its purgeAt has passed, and warned
// about PURGE_WARNING_BEFORE earlier; a task without an end (and no failed start) is stalled once its latest
// callback is older than its stall time; a completed task is settled SETTLE_AFTER after its last change, which
// is no later than the end of the run; a stall the task's later callbacks ended is resumed. The receiver finds
// each at most a sweep and a bucket (`lagMs`) after its moment, or after it received the task's callbacks when the
// moment came before (a run sent in the past, an outage replayed: no later than the end of the run): a fact found
// by then must be held, one whose moment is still to come must not be, and one in between may be either. A fact's
// id received more than once is listed, not a fault: delivery is at least once (docs/events.md), and a sweep that
// crashed or a publish retried sends it again, as a duplicated subscription would.
import { TIME_EVENT_TYPES } from '../../lib/domain/task-events.ts';
import type { Task } from '../../lib/domain/task.ts';
import { diffTask } from './diff.ts';

export interface ClockExpectation {
  /** The receiver's clock (epoch ms). */
  nowMs: number;
  /** How late the receiver may find a fact: its sweep interval, a bucket, and some slack. */
  lagMs: number;
  /** The stage's settings (docs/configuration.md): the defaults unless the stage was given others. */
  purgeWarningBeforeMs: number;
  stallFactor: number;
  stallMinMs: number;
  stallUnknownMs: number;
  settleAfterMs: number;
  /** When the run's last callback was acknowledged (the expect file's `generatedAt`): no change is later. */
  runEndedAt?: number;
}

export const DEFAULT_CLOCK_SETTINGS: Omit<ClockExpectation, 'nowMs'> = {
  lagMs: 10 * 60_000,
  settleAfterMs: 10 * 60_000,
  purgeWarningBeforeMs: 2 * 3_600_000,
  stallFactor: 3,
  stallMinMs: 15 * 60_000,
  stallUnknownMs: 6 * 3_600_000,
};

/** Whether a fact whose moment is `at` must be held (`held`), must not be (`not`), or may be either. */
type Certainty = 'held' | 'not' | 'either';

function certaintyOf(at: number, c: ClockExpectation): Certainty {
  if (at > c.nowMs) return 'not';
  // A fact due before the receiver had the task's callbacks is found a sweep after it had them, not after its moment.
  return Math.max(at, c.runEndedAt ?? at) + c.lagMs <= c.nowMs ? 'held' : 'either';
}

/** A task without its facts of time: its lost files as failed (none counted lost), no stall, no settle. */
function withoutTimeFacts(t: Task): Task {
  const files = t.files.map((f) => (f.upload === 'lost' ? { ...f, upload: 'failed' as const } : f));
  return { ...t, files, counts: { ...t.counts, lost: 0 }, stalledSince: null, settledAt: null };
}

/**
 * Whether the stored task differs from the expected one in its facts of time alone (lost files, a stall, a
 * settle): a difference that a sweep to come may still take away.
 */
export function differsInTimeOnly(expected: Task, actual: Task | null): boolean {
  return actual !== null && diffTask(withoutTimeFacts(expected), withoutTimeFacts(actual)).length === 0;
}

/** The expected interval between a task's callbacks, from its start's config; null when it says none. */
function intervalMs(task: Task): number | null {
  const [key, unit] = task.service === 'recording' ? ['slicesMin', 60_000] : ['slicesSec', 1000];
  const raw = task.config?.[key as string];
  const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value * (unit as number) : null;
}

/** When the task stalls, if it can: its latest callback + 3 × its interval (at least 15 min; 6 h unknown). */
function stallMomentOf(task: Task, c: ClockExpectation): number | null {
  if (task.endedAt !== null || task.status === 'failed' || task.updatedAt === null) return null;
  const interval = intervalMs(task);
  const stall = interval === null ? c.stallUnknownMs : Math.max(c.stallMinMs, c.stallFactor * interval);
  return task.updatedAt + stall;
}

/**
 * The expected task as the clock makes it: its failed files lost and its stall where they must be; where the
 * receiver may not have found a fact yet, as the receiver holds it (`actual`). `settledAt` depends on the
 * receiver's own time of the task's last change, which a run does not know: as held, on a completed task only.
 */
export function atClock(expected: Task, actual: Task | null, c: ClockExpectation): Task {
  const held = new Map((actual?.files ?? []).map((f) => [f.fileName, f]));
  const files = expected.files.map((f) => {
    if (f.upload !== 'failed' || f.purgeAt === null) return f;
    const certainty = certaintyOf(f.purgeAt, c);
    if (certainty === 'held') return { ...f, upload: 'lost' as const };
    const theirs = held.get(f.fileName)?.upload;
    return certainty === 'either' && theirs === 'lost' ? { ...f, upload: 'lost' as const } : f;
  });
  const moment = stallMomentOf(expected, c);
  let stalledSince: number | null = null;
  if (moment !== null) {
    const certainty = certaintyOf(moment, c);
    if (certainty === 'held' || (certainty === 'either' && actual?.stalledSince === moment)) stalledSince = moment;
  }
  // Its value is the receiver's own (its time of the task's last change); when it must be settled, it must be there.
  const settle = settleMomentOf(expected, c);
  const mustSettle = settle !== null && certaintyOf(settle, c) === 'held';
  const settledAt = expected.status === 'completed' ? (actual?.settledAt ?? (mustSettle ? settle : null)) : null;
  const counts = { ...expected.counts, lost: files.filter((f) => f.upload === 'lost').length };
  return { ...expected, counts, files, stalledSince, settledAt };
}

/** The latest a completed task settles: the end of the run (its last change is no later) + SETTLE_AFTER. */
function settleMomentOf(task: Task, c: ClockExpectation): number | null {
  if (task.status !== 'completed' || c.runEndedAt === undefined) return null;
  return c.runEndedAt + c.settleAfterMs;
}

/** A task event as read off the topic, with what the facts of time name. */
export interface PublishedTimeEvent {
  id: string;
  type: string;
  occurredAt?: number;
  task?: { id?: string };
  file?: { fileName?: string; purgeAt?: number | null };
  stall?: { stalledSince?: number; lastCallbackAt?: number };
  settledAt?: number;
}

export interface TimeEventCheck {
  ok: boolean;
  /** `<type> of <task>[ file <name>| at <moment>]`: a fact that must have been published and was not. */
  missing: string[];
  /** Events of a fact the clock says cannot be true yet, or of a file or task the run does not have. */
  unexpected: string[];
  /** Facts received more than once (allowed, listed): `<type> of <task> (<id>) ×<n>`. */
  doubled: string[];
}

const LOST = 'file.lost';
const WARNED = 'file.purge_warning';
const STALLED = 'task.stalled';
const RESUMED = 'task.resumed';
const SETTLED = 'task.settled';

/**
 * Checks the facts-of-time events among `published` (other types are left to the event check of the
 * callbacks): each fact that must be held by now published once, none before its moment; a resume for each
 * stall the task's later callbacks ended, of a stall published; a settle carrying its `settledAt`.
 */
export function checkTimeEvents(
  tasks: readonly Task[],
  published: readonly PublishedTimeEvent[],
  c: ClockExpectation,
): TimeEventCheck {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const seen = new Set<string>();
  const unexpected: string[] = [];
  const times = new Map<string, { what: string; n: number }>();
  const stalls = new Map<string, Set<number>>();
  const resumes: PublishedTimeEvent[] = [];
  for (const e of published) {
    const task = e.task?.id === undefined ? undefined : byId.get(e.task.id);
    if (!task || !isTimeEvent(e.type)) continue;
    const what = `${e.type} of ${task.id} (${e.id})`;
    times.set(e.id, { what, n: (times.get(e.id)?.n ?? 0) + 1 });
    if (e.type === RESUMED) {
      resumes.push(e);
      continue;
    }
    if (e.type === SETTLED) {
      // Only a completed task settles, at a moment that has come.
      const at = e.settledAt;
      if (task.status !== 'completed' || typeof at !== 'number' || at > c.nowMs) unexpected.push(what);
      else seen.add(`${e.type} of ${task.id}`);
      continue;
    }
    if (e.type === STALLED) {
      const since = e.stall?.stalledSince;
      // A task may stall while its callbacks are still on the way (then resume): any moment up to now.
      if (typeof since !== 'number' || since > c.nowMs) unexpected.push(what);
      else {
        seen.add(`${e.type} of ${task.id} at ${since}`);
        stalls.set(task.id, (stalls.get(task.id) ?? new Set()).add(since));
      }
      continue;
    }
    const name = e.file?.fileName;
    const file = task.files.find((f) => f.fileName === name);
    const purgeAt = e.file?.purgeAt ?? null;
    const moment = purgeAt === null ? null : e.type === LOST ? purgeAt : purgeAt - c.purgeWarningBeforeMs;
    if (!file || moment === null || moment > c.nowMs) unexpected.push(`${e.type} of ${task.id} file ${name} (${e.id})`);
    else seen.add(`${e.type} of ${task.id} file ${name}`);
  }
  // A resume names a stall published, which the task's later callbacks ended: not the one it is in.
  for (const e of resumes) {
    const task = byId.get(e.task!.id!)!;
    const since = e.stall?.stalledSince;
    const current = stallMomentOf(task, c);
    if (typeof since !== 'number' || !stalls.get(task.id)?.has(since) || since === current)
      unexpected.push(`${e.type} of ${task.id} (${e.id})`);
    else seen.add(`${e.type} of ${task.id} at ${since}`);
  }
  const missing: string[] = [];
  for (const task of tasks) {
    for (const f of task.files) {
      if (f.upload !== 'failed' || f.purgeAt === null) continue;
      for (const [type, at] of [
        [WARNED, f.purgeAt - c.purgeWarningBeforeMs],
        [LOST, f.purgeAt],
      ] as const) {
        const key = `${type} of ${task.id} file ${f.fileName}`;
        if (certaintyOf(at, c) === 'held' && !seen.has(key)) missing.push(key);
      }
    }
    const moment = stallMomentOf(task, c);
    if (moment !== null && certaintyOf(moment, c) === 'held' && !seen.has(`${STALLED} of ${task.id} at ${moment}`))
      missing.push(`${STALLED} of ${task.id} at ${moment}`);
    // Every stall published other than the one the task is in was ended by a later callback.
    for (const since of stalls.get(task.id) ?? []) {
      const key = `${RESUMED} of ${task.id} at ${since}`;
      if (since !== moment && !seen.has(key)) missing.push(key);
    }
    const settle = settleMomentOf(task, c);
    if (settle !== null && certaintyOf(settle, c) === 'held' && !seen.has(`${SETTLED} of ${task.id}`))
      missing.push(`${SETTLED} of ${task.id}`);
  }
  const doubled = [...times.values()].filter((t) => t.n > 1).map((t) => `${t.what} ×${t.n}`);
  const ok = missing.length === 0 && unexpected.length === 0;
  return { ok, missing, unexpected, doubled };
}

/** Whether an event is one of the facts of time (checked by checkTimeEvents, not by the callbacks' check). */
export const isTimeEvent = (type: string): boolean => (TIME_EVENT_TYPES as readonly string[]).includes(type);
