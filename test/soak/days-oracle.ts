// The brute force the days part (./days.ts) checks the receiver against: from the callbacks each task was given
// (with the receiver's time of the batch that applied them) and the clock, the facts of time on the contract's
// own terms (docs/contract.md §4), worked out by replaying each task's states one change after the other:
//
// - a stall holds from `updatedAt` + its stall time until a change moves that moment (or ends the task): a late
//   callback older than the task's latest leaves the task as stalled as it was;
// - a settle holds from a change of a completed task (its minute, rounded up) + SETTLE_AFTER until the next change;
// - a file's purge warning is due from purgeAt − PURGE_WARNING_BEFORE, its loss from purgeAt, while it is failed.
//
// The receiver finds a fact at the first sweep after its moment, a sweep later if a sweep crashed: a fact that
// held at least `lagMs` (counted from the end of a sweeper outage, if it began in one) must have been found (its
// event published exactly once), one that held less may have been (at most once), and one that never held must
// not have been. Nothing here reads the code under test but
// the fold of the callbacks into a task (`reduceTask`, the contract's fold) and the ids of the events.
import type { Callback } from '../../lib/domain/callback.ts';
import { reduceTask } from '../../lib/domain/reduce-task.ts';
import type { Task } from '../../lib/domain/task.ts';

const MINUTE = 60_000;

/** A callback applied to its task, at the receiver's time of its batch. */
export interface AppliedCallback {
  cb: Callback;
  at: number;
}

/** How late the receiver may find a fact: `lagMs` after its moment, or after the end of a sweeper outage. */
export interface Lag {
  lagMs: number;
  /** Spans of time with no sweep: a fact whose moment falls in one (or a lag before it) is found after it. */
  outages?: readonly FactWindow[];
}

export interface OracleSettings extends Lag {
  settleAfterMs: number;
  purgeWarningBeforeMs: number;
  stallFactor: number;
  stallMinMs: number;
  stallUnknownMs: number;
}

/** A fact that held from `from` until `to` (null: still at the clock). */
export interface FactWindow {
  from: number;
  to: number | null;
}

/** Whether a fact must have been found by `now`, may have been, or cannot have been. */
export type Certainty = 'must' | 'may' | 'not';

export function certaintyOf(w: FactWindow | undefined, now: number, lag: Lag): Certainty {
  if (!w || w.from > now) return 'not';
  const end = Math.min(w.to ?? now, now);
  const outage = lag.outages?.find((o) => w.from >= o.from - lag.lagMs && o.to !== null && w.from < o.to);
  if (end - Math.max(w.from, outage?.to ?? w.from) >= lag.lagMs) return 'must';
  return w.to !== null && w.to <= w.from ? 'not' : 'may';
}

/** The facts of time of one task up to a moment. */
export interface TaskFactsAt {
  /** The task as the callbacks applied by then fold into (no facts of time). */
  task: Task | null;
  /** Each stall by its moment (`stalledSince`), with the time of the change that ended it. */
  stalls: Map<number, FactWindow>;
  /** Each settle by its moment (`settledAt`). */
  settles: Map<number, FactWindow>;
  /** Per file, the windows in which its warning, and its loss, were due (merged when they touch). */
  warnings: Map<string, FactWindow[]>;
  losses: Map<string, FactWindow[]>;
}

/** The expected interval between a task's callbacks (from its start's config), or null. */
function intervalOf(task: Task): number | null {
  const [key, unit] = task.service === 'recording' ? ['slicesMin', MINUTE] : ['slicesSec', 1000];
  const raw = task.config?.[key];
  const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value * unit : null;
}

function stallMomentOf(task: Task, startFailed: boolean, s: OracleSettings): number | null {
  if (task.endedAt !== null || startFailed || task.updatedAt === null) return null;
  const interval = intervalOf(task);
  return task.updatedAt + (interval === null ? s.stallUnknownMs : Math.max(s.stallMinMs, s.stallFactor * interval));
}

function addWindow(windows: Map<string, FactWindow[]>, name: string, w: FactWindow): void {
  const list = windows.get(name) ?? [];
  windows.set(name, list);
  const last = list.at(-1);
  if (last && last.to !== null && last.to >= w.from) last.to = w.to;
  else list.push(w);
}

/** Replays one task's callbacks applied by `now`, change after change. */
export function taskFactsAt(applied: readonly AppliedCallback[], now: number, s: OracleSettings): TaskFactsAt {
  const upTo = applied.filter((a) => a.at <= now);
  const changes = [...new Set(upTo.map((a) => a.at))].sort((a, b) => a - b);
  const facts: TaskFactsAt = {
    task: null,
    stalls: new Map(),
    settles: new Map(),
    warnings: new Map(),
    losses: new Map(),
  };
  const callbacks: Callback[] = [];
  let next = 0;
  const byTime = [...upTo].sort((a, b) => a.at - b.at);
  let openStall: number | null = null;
  changes.forEach((at, i) => {
    while (next < byTime.length && byTime[next]!.at === at) callbacks.push(byTime[next++]!.cb);
    const until = changes[i + 1] ?? null;
    const task = reduceTask(callbacks);
    facts.task = task;
    if (!task) return;
    const startFailed = callbacks.some((cb) => cb.type === 1 && cb.code !== 200);
    // A stall: one moment from change to change; a change that leaves the moment where it was goes on with it.
    const moment = stallMomentOf(task, startFailed, s);
    const holds = moment !== null && (until === null || moment < until);
    if (moment !== null && openStall === moment) facts.stalls.get(moment)!.to = until;
    else if (holds) facts.stalls.set(moment, { from: Math.max(moment, at), to: until });
    openStall = holds ? moment : null;
    if (task.status === 'completed') {
      const settledAt = Math.ceil(at / MINUTE) * MINUTE + s.settleAfterMs;
      if (until === null || settledAt < until) facts.settles.set(settledAt, { from: settledAt, to: until });
    }
    for (const f of task.files) {
      if (f.upload !== 'failed' || f.purgeAt === null) continue;
      for (const [windows, moment] of [
        [facts.warnings, f.purgeAt - s.purgeWarningBeforeMs],
        [facts.losses, f.purgeAt],
      ] as const) {
        const from = Math.max(at, moment);
        if (until === null || from < until) addWindow(windows, f.fileName, { from, to: until });
      }
    }
  });
  return facts;
}

/** The strongest certainty among windows. */
export function strongest(windows: readonly FactWindow[] | undefined, now: number, lag: Lag): Certainty {
  let best: Certainty = 'not';
  for (const w of windows ?? []) {
    const c = certaintyOf(w, now, lag);
    if (c === 'must') return 'must';
    if (c === 'may') best = 'may';
  }
  return best;
}

/** The window that holds at `now`, if one does. */
export function holdingAt(windows: Iterable<FactWindow> | undefined, now: number): FactWindow | undefined {
  for (const w of windows ?? []) if (w.from <= now && (w.to === null || w.to > now)) return w;
  return undefined;
}

/**
 * The expected task at `now` where the facts of time are certain; where one may or may not have been found, as
 * the receiver holds it if that is one of the two. Null when the callbacks make no task.
 */
export function expectedTaskAt(facts: TaskFactsAt, actual: Task | null, now: number, lag: Lag): Task | null {
  const task = facts.task;
  if (!task) return null;
  const held = new Map((actual?.files ?? []).map((f) => [f.fileName, f.upload]));
  const files = task.files.map((f) => {
    if (f.upload !== 'failed') return f;
    const c = certaintyOf(holdingAt(facts.losses.get(f.fileName), now), now, lag);
    if (c === 'must' || (c === 'may' && held.get(f.fileName) === 'lost')) return { ...f, upload: 'lost' as const };
    return f;
  });
  const pick = (windows: Map<number, FactWindow>, theirs: number | null | undefined): number | null => {
    for (const [moment, w] of windows) {
      if (w.to !== null) continue;
      const c = certaintyOf(w, now, lag);
      if (c === 'must' || (c === 'may' && theirs === moment)) return moment;
    }
    return null;
  };
  return {
    ...task,
    counts: { ...task.counts, lost: files.filter((f) => f.upload === 'lost').length },
    files,
    stalledSince: pick(facts.stalls, actual?.stalledSince),
    settledAt: pick(facts.settles, actual?.settledAt),
  };
}
