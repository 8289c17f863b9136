// Checks the verifications of the files a run reported uploaded against what the sender emulator did to its
// storage (devkit/emulator/storage.ts): every faulted file flagged with its kind, no healthy file flagged. A
// check runs after the worker has applied the upload, so a file still `pending` (or not read yet) is read again
// until the time-out.
import type { Task } from '../../lib/domain/task.ts';
import type { CheckedState, VerifiedFileView } from '../../lib/domain/verification.ts';
import { inParallel } from '../../lib/in-parallel.ts';
import { errorSentence } from '../../lib/text.ts';
import type { TaskReader } from './verify.ts';

/** A file reported uploaded, the fault its storage was given (null: none), and the state its check must find. */
export interface ExpectedCheck {
  appKey: string;
  taskId: string;
  fileName: string;
  fault: string | null;
  state: CheckedState;
}

export interface VerifyChecksOptions {
  expected: readonly ExpectedCheck[];
  getTask: TaskReader['getTask'];
  timeoutMs: number;
  pollIntervalMs?: number;
  concurrency?: number;
}

export interface ChecksResult {
  ok: boolean;
  checked: number;
  matched: number;
  /** One line per file whose verification is not the one expected (at the time-out). */
  diffs: string[];
  /** How many files of each fault kind (and healthy) were expected, and how many were found so. */
  byFault: Record<string, { expected: number; found: number }>;
  timedOut: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What a task read says of one file's check: its state, or why there is none to compare. */
function stateOf(task: Task | null, fileName: string): string {
  if (!task) return 'no task';
  const file = task.files.find((f) => f.fileName === fileName) as VerifiedFileView | undefined;
  if (!file) return 'no such file';
  return file.verification?.state ?? `no verification (upload ${file.upload})`;
}

export async function verifyChecks(opts: VerifyChecksOptions): Promise<ChecksResult> {
  const deadline = Date.now() + Math.max(0, opts.timeoutMs);
  const byTask = new Map<string, ExpectedCheck[]>();
  for (const c of opts.expected) {
    const k = JSON.stringify([c.appKey, c.taskId]);
    byTask.set(k, [...(byTask.get(k) ?? []), c]);
  }
  let pending = [...byTask.values()];
  const found = new Map<ExpectedCheck, string>();
  let timedOut = false;
  for (;;) {
    const still: ExpectedCheck[][] = [];
    await inParallel(pending, Math.max(1, opts.concurrency ?? 16), async (checks) => {
      const first = checks[0]!;
      let task: Task | null = null;
      let error: string | null = null;
      try {
        task = await opts.getTask(first.taskId, first.appKey);
      } catch (err) {
        error = `could not be read (${errorSentence(err)})`;
      }
      for (const c of checks) found.set(c, error ?? stateOf(task, c.fileName));
      if (checks.some((c) => found.get(c) !== c.state)) still.push(checks);
    });
    pending = still;
    if (pending.length === 0) break;
    if (Date.now() >= deadline) {
      timedOut = true;
      break;
    }
    await sleep(Math.min(opts.pollIntervalMs ?? 500, Math.max(0, deadline - Date.now())));
  }
  const byFault: ChecksResult['byFault'] = {};
  const diffs: string[] = [];
  for (const c of opts.expected) {
    const kind = c.fault ?? 'none';
    byFault[kind] ??= { expected: 0, found: 0 };
    byFault[kind].expected += 1;
    const state = found.get(c);
    if (state === c.state) byFault[kind].found += 1;
    else
      diffs.push(
        `${c.taskId}: file ${c.fileName} (${c.fault ?? 'stored as reported'}): expected ${c.state}, got ${state}`,
      );
  }
  return {
    ok: diffs.length === 0,
    checked: opts.expected.length,
    matched: opts.expected.length - diffs.length,
    diffs,
    byFault,
    timedOut,
  };
}
