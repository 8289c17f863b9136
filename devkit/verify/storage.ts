// Checks the verifications of the files a run reported uploaded against what the sender emulator did to its
// storage (devkit/emulator/storage.ts): every faulted file flagged with its kind, no healthy file flagged. A
// check runs after the worker has applied the upload, so a file still `pending` (or not read yet) is read again
// until the time-out.
import type { StorageIncident } from '../../lib/domain/storage-incidents.ts';
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

/** A storage incident a run must have made (devkit/emulator/expect.ts ExpectedIncident). */
export interface IncidentExpectation {
  appKey: string;
  storage: string;
  id: string;
  firstFailure: { taskId: string; fileName: string; at: number };
  filesAffected: number;
  earliestPurgeAt: number;
  switchBy: number;
}

export interface IncidentsResult {
  ok: boolean;
  checked: number;
  /** One line per incident missing, open, of other facts, or made beside those expected. */
  diffs: string[];
  timedOut: boolean;
}

/**
 * Checks that each incident expected was opened with its facts (first failure, files affected, earliest purge,
 * switch-by exact) and resolved, and that no other incident of its storage began within the run's outage: one
 * incident per storage and outage. Read again until all hold or the time-out (the sweep runs on its schedule).
 */
export async function verifyIncidents(opts: {
  expected: readonly IncidentExpectation[];
  read: (appKey: string, storage: string) => Promise<StorageIncident[]>;
  /** The outage (platform time): an incident whose first failure lies within it is one of the run's. */
  outage: { from: number; to: number };
  timeoutMs: number;
  pollIntervalMs?: number;
}): Promise<IncidentsResult> {
  const deadline = Date.now() + Math.max(0, opts.timeoutMs);
  for (;;) {
    const diffs: string[] = [];
    for (const e of opts.expected) {
      const all = await opts.read(e.appKey, e.storage);
      const ofRun = all.filter((i) => i.firstFailure.at >= opts.outage.from && i.firstFailure.at < opts.outage.to);
      const found = ofRun.find((i) => i.id === e.id);
      const name = `incident of ${e.storage} (${e.appKey}) from ${new Date(e.firstFailure.at).toISOString()}`;
      if (!found) diffs.push(`${name}: not opened`);
      else {
        // The files affected are those whose failure the receiver had seen when it last swept the incident: in a
        // compressed run the last of them may come after it resolved. None it names lies outside the outage.
        if (found.filesAffected < 1 || found.filesAffected > e.filesAffected)
          diffs.push(`${name}: ${found.filesAffected} files affected, of the ${e.filesAffected} the outage failed`);
        const got = {
          firstFailure: {
            taskId: found.firstFailure.taskId,
            fileName: found.firstFailure.fileName,
            at: found.firstFailure.at,
          },
          earliestPurgeAt: found.earliestPurgeAt,
          switchBy: found.switchBy,
        };
        const want = { firstFailure: e.firstFailure, earliestPurgeAt: e.earliestPurgeAt, switchBy: e.switchBy };
        if (JSON.stringify(got) !== JSON.stringify(want))
          diffs.push(`${name}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
        if (found.resolvedAt === null) diffs.push(`${name}: still open`);
      }
      for (const other of ofRun.filter((i) => i.id !== e.id)) diffs.push(`${name}: another incident ${other.id} too`);
    }
    if (diffs.length === 0 || Date.now() >= deadline)
      return { ok: diffs.length === 0, checked: opts.expected.length, diffs, timedOut: diffs.length > 0 };
    await sleep(Math.min(opts.pollIntervalMs ?? 1000, Math.max(0, deadline - Date.now())));
  }
}
