// The kill part's judgement of what the stack holds once idle, from what the sender sent and was told, on the
// contract's terms (docs/contract.md §1 and §4): every callback acknowledged with a 200 is applied once, exactly;
// one never acknowledged may have been applied (its answer lost as the stack died, after its enqueue) and is then
// applied once too, and owed from there on; each task's counts say what its files say. The task itself is judged
// against the fold of its owed callbacks (devkit/verify), its events against MUST and MAY and the stored task
// (lib/domain/expected-events.ts, test/reliability/support/counts-chaos.ts).
import type { DeliveryOutcome } from '../../devkit/emulator/expect.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { FileView, Task } from '../../lib/domain/task.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { factsNotStored } from '../reliability/support/counts-chaos.ts';

/** A callback as the sender sent it and what it was told. */
export interface SentCallback extends DeliveryOutcome {
  taskId: string;
  body: Record<string, unknown>;
}

/** A task's files by upload state, as the contract counts them: a lost file is a failed one, and counted lost too. */
export interface FileCounts {
  total: number;
  pending: number;
  uploaded: number;
  failed: number;
  lost: number;
}

/** The callbacks the stack owes: those acknowledged, and those it applied though their answer was lost. */
export function owedCallbacks<T extends DeliveryOutcome>(sent: readonly T[], stored: ReadonlySet<string>): T[] {
  return sent.flatMap((s) => (s.delivered ? [s] : stored.has(eventKey(s.body)) ? [{ ...s, delivered: true }] : []));
}

/**
 * Each callback of a task acknowledged applied once, exactly (its raw callback stored once, under its event key);
 * one not acknowledged at most once; nothing stored that was never sent.
 */
export function ledgerProblems(taskId: string, sent: readonly SentCallback[], storedKeys: readonly string[]): string[] {
  const times = new Map<string, number>();
  for (const key of storedKeys) times.set(key, (times.get(key) ?? 0) + 1);
  const acknowledged = new Map<string, SentCallback>();
  const unacknowledged = new Set<string>();
  for (const s of sent) {
    const key = eventKey(s.body);
    if (s.delivered) acknowledged.set(key, s);
    else unacknowledged.add(key);
  }
  const problems: string[] = [];
  const what = (s: SentCallback) => {
    const output = s.body.output as Record<string, unknown> | undefined;
    const file = output?.fileName ? ` file ${String(output.fileName)}` : '';
    return `type ${String(s.body.type)} at ${String(s.body.timestamp)}${file}`;
  };
  for (const [key, s] of acknowledged) {
    const n = times.get(key) ?? 0;
    if (n === 0) problems.push(`task ${taskId}: acknowledged callback ${what(s)} never applied (${key})`);
    else if (n > 1) problems.push(`task ${taskId}: callback ${what(s)} applied ${n} times (${key})`);
  }
  for (const [key, n] of times) {
    if (acknowledged.has(key)) continue;
    if (!unacknowledged.has(key)) problems.push(`task ${taskId}: a callback never sent is stored (${key})`);
    else if (n > 1) problems.push(`task ${taskId}: an unacknowledged callback applied ${n} times (${key})`);
  }
  return problems;
}

export function fileCountsOf(files: readonly FileView[]): FileCounts {
  const n = (upload: FileView['upload']) => files.filter((f) => f.upload === upload).length;
  const lost = n('lost');
  return { total: files.length, pending: n('pending'), uploaded: n('uploaded'), failed: n('failed') + lost, lost };
}

/**
 * A stored task's counts against its files: the `counts` its JSON carries (when it does), and its row in a listing
 * (`fileCount`, `pendingFiles`, `failedFiles`, `lostFiles`, `eventCount`).
 */
export function countProblems(task: Task, row: TaskSummary | undefined): string[] {
  const files = fileCountsOf(task.files);
  const show = (v: unknown) => JSON.stringify(v);
  const problems: string[] = [];
  const counts = (task as Task & { counts?: unknown }).counts;
  if (counts !== undefined && show(counts) !== show(files))
    problems.push(`task ${task.id}: counts ${show(counts)} on its JSON, its files make ${show(files)}`);
  if (!row) return [...problems, `task ${task.id}: not listed`];
  const listed = {
    total: row.fileCount,
    pending: row.pendingFiles,
    uploaded: row.fileCount - row.pendingFiles - row.failedFiles,
    failed: row.failedFiles,
    lost: row.lostFiles,
  };
  if (show(listed) !== show(files))
    problems.push(`task ${task.id}: listed with counts ${show(listed)}, its files make ${show(files)}`);
  if (row.eventCount !== task.eventCount)
    problems.push(`task ${task.id}: listed with eventCount ${row.eventCount}, its JSON says ${task.eventCount}`);
  return problems;
}

/**
 * What the events published report that the stored tasks (as the fold of their owed callbacks makes them) do not
 * hold, task by task (counts-chaos.ts's factsNotStored), and events of tasks the run never sent.
 */
export function eventFactProblems(events: readonly TaskEvent[], expected: readonly Task[]): string[] {
  const tasks = new Map(expected.map((t) => [t.id, t]));
  const byTask = new Map<string, TaskEvent[]>();
  for (const e of events) byTask.set(e.task.id, [...(byTask.get(e.task.id) ?? []), e]);
  const problems: string[] = [];
  for (const [id, own] of byTask) {
    const task = tasks.get(id);
    if (!task) problems.push(`${own.length} events of task ${id}, which the run never sent (${own[0]!.type} first)`);
    else problems.push(...factsNotStored(id, own, task));
  }
  return problems;
}

/** The first task of the run a problem names (`task <id>: ...`, or `<id>: ...` as devkit/verify says it), if any. */
export function taskOfProblem(problem: string, ids: ReadonlySet<string>): string | null {
  return problem.split(/[\s:,()]+/).find((word) => ids.has(word)) ?? null;
}
