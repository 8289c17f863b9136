// Checks that a receiver holds the expected tasks. Processing is asynchronous (queue, then worker), so a
// mismatch is only final once the queue has drained and stayed drained for a moment, or at the time-out;
// until then mismatching tasks are read again. The store and the queue are passed in as functions, so
// this module works against any target (local stack, deployed stack, an in-memory double).
import type { Task } from '../../lib/domain/task.ts';
import { diffTask } from './diff.ts';
import { errorSentence } from '../../lib/text.ts';
import { inParallel } from '../../lib/in-parallel.ts';

export interface TaskReader {
  /** The task with this id of this appKey (a task belongs to one appKey; two may share an id). */
  getTask(id: string, appKey: string): Promise<Task | null>;
}

export interface VerifyRound {
  round: number;
  checked: number;
  matched: number;
  /** null when no drain probe was given. */
  drained: boolean | null;
}

export interface VerifyOptions {
  expected: readonly Task[];
  getTask: TaskReader['getTask'];
  /** One probe: resolves true when the queue holds nothing (visible, in flight or delayed). */
  waitForDrain?: () => Promise<boolean>;
  timeoutMs: number;
  pollIntervalMs?: number;
  /** How long mismatches may persist after the queue drained before they are taken as final. */
  settleMs?: number;
  /** Reads in flight at once. */
  concurrency?: number;
  /** The expected task as a given moment makes it (devkit/verify/time-facts.ts), given what the receiver holds. */
  expectAt?: (expected: Task, actual: Task | null) => Task;
  /**
   * Whether a difference may still go away with time (the facts of time, which the receiver finds a sweep late):
   * such differences are waited for until the time-out, not only while the queue drains.
   */
  differsInTimeOnly?: (expected: Task, actual: Task | null) => boolean;
  onRound?: (round: VerifyRound) => void;
}

export interface TaskDiff {
  id: string;
  service: string;
  lines: string[];
  /** The task differs in its facts of time only (VerifyOptions.differsInTimeOnly). */
  timeOnly: boolean;
}

export interface VerifyResult {
  ok: boolean;
  checked: number;
  matched: number;
  diffs: TaskDiff[];
  /** Whether the queue was seen empty at the end; null when no drain probe was given. */
  drained: boolean | null;
  timedOut: boolean;
  rounds: number;
}

const VERIFY_DEFAULTS = { pollIntervalMs: 500, settleMs: 3000, concurrency: 16 } as const;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function verifyTasks(opts: VerifyOptions): Promise<VerifyResult> {
  const pollIntervalMs = opts.pollIntervalMs ?? VERIFY_DEFAULTS.pollIntervalMs;
  const settleMs = opts.settleMs ?? VERIFY_DEFAULTS.settleMs;
  const concurrency = Math.max(1, opts.concurrency ?? VERIFY_DEFAULTS.concurrency);
  const deadline = Date.now() + Math.max(0, opts.timeoutMs);

  let pending = [...opts.expected];
  const diffs = new Map<Task, { lines: string[]; timeOnly: boolean }>();
  let drained: boolean | null = opts.waitForDrain ? false : null;
  let drainedSince: number | null = null;
  let rounds = 0;
  let timedOut = false;

  for (;;) {
    rounds += 1;
    if (opts.waitForDrain) {
      // A probe that fails (queue unreachable for a moment) counts as "not drained yet".
      drained = await opts.waitForDrain().catch(() => false);
      drainedSince = drained ? (drainedSince ?? Date.now()) : null;
    }
    const verdicts = await inParallel(pending, concurrency, async (task) => {
      try {
        const actual = await opts.getTask(task.id, task.appKey);
        const lines = diffTask(opts.expectAt ? opts.expectAt(task, actual) : task, actual);
        return { lines, timeOnly: lines.length > 0 && (opts.differsInTimeOnly?.(task, actual) ?? false) };
      } catch (err) {
        return { lines: [`${task.id}: could not be read (${errorSentence(err)})`], timeOnly: false };
      }
    });
    const stillPending: Task[] = [];
    pending.forEach((task, i) => {
      const verdict = verdicts[i]!;
      if (verdict.lines.length === 0) diffs.delete(task);
      else {
        diffs.set(task, verdict);
        stillPending.push(task);
      }
    });
    pending = stillPending;
    opts.onRound?.({
      round: rounds,
      checked: opts.expected.length,
      matched: opts.expected.length - pending.length,
      drained,
    });

    if (pending.length === 0) break;
    const now = Date.now();
    if (now >= deadline) {
      timedOut = true;
      break;
    }
    // Differences of the facts of time alone are waited for until the time-out: a sweep may still find them.
    const timeOnly = pending.every((task) => diffs.get(task)!.timeOnly);
    if (drainedSince !== null && now - drainedSince >= settleMs && !timeOnly) break;
    await sleep(Math.min(pollIntervalMs, deadline - now));
  }

  const unmatched = opts.expected.filter((t) => diffs.has(t));
  return {
    ok: pending.length === 0,
    checked: opts.expected.length,
    matched: opts.expected.length - pending.length,
    diffs: unmatched.map((t) => ({ id: t.id, service: t.service, ...diffs.get(t)! })),
    drained,
    timedOut,
    rounds,
  };
}
