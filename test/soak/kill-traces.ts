// What the kill part keeps of a run for a reader: the log events of every start of the stack counted by name, and a
// trace per task with a problem, to follow what happened to it across the kills.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SendResult } from '../../devkit/emulator/sender.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { Task } from '../../lib/domain/task.ts';
import { taskOfProblem } from './kill-oracle.ts';

/** The log events of every run of the stack in the folder, by name (`fault_injected` by kind too). */
export function countLogEvents(cwd: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const file of readdirSync(cwd).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(cwd, file), 'utf8').split('\n')) {
      const event = /"event":"([^"]+)"/.exec(line)?.[1];
      if (!event) continue;
      const kind = event === 'fault_injected' ? /"kind":"([^"]+)"/.exec(line)?.[1] : undefined;
      const name = kind ? `${event} ${kind}` : event;
      counts[name] = (counts[name] ?? 0) + 1;
    }
  }
  return counts;
}

/** The tasks of a trace: as the fold of their owed callbacks makes them, and as the stack holds them. */
export interface TracedTasks {
  expected: readonly Task[];
  stored(id: string): Promise<Task | null>;
}

/**
 * A trace per task a problem names (the first 20), under `<cwd>/traces/`: the task expected and the task stored, its
 * callbacks as sent (in the order sent, with what the sender was told), every log line of every start of the stack
 * that names it, and the events published about it.
 */
export async function writeTraces(
  cwd: string,
  problems: readonly string[],
  results: readonly SendResult[],
  events: readonly TaskEvent[],
  tasks: TracedTasks,
): Promise<void> {
  const ids = new Set(results.map((r) => r.taskId));
  const named = [...new Set(problems.map((p) => taskOfProblem(p, ids)).filter((id) => id !== null))];
  const logs = readdirSync(cwd)
    .filter((f) => f.endsWith('.log'))
    .sort((a, b) => Number(a.replace(/\D/g, '')) - Number(b.replace(/\D/g, '')))
    .map((f) => ({ f, lines: readFileSync(join(cwd, f), 'utf8').split('\n') }));
  mkdirSync(join(cwd, 'traces'), { recursive: true });
  for (const id of named.slice(0, 20)) {
    const out = ['problems:', ...problems.filter((p) => taskOfProblem(p, ids) === id)];
    out.push('', `expected: ${JSON.stringify(tasks.expected.find((t) => t.id === id) ?? null)}`);
    out.push('', `stored: ${JSON.stringify(await tasks.stored(id))}`, '', 'sent:');
    for (const r of results.filter((x) => x.taskId === id)) {
      const o = r.body.output as Record<string, unknown> | undefined;
      out.push(
        `  type ${String(r.body.type)} code ${String(r.body.code)} at ${String(r.body.timestamp)} ` +
          `file ${String(o?.fileName ?? '-')} state ${String(o?.fileState ?? '-')}` +
          `${r.duplicate ? ' (duplicate)' : ''} -> ${r.delivered ? 'acknowledged' : `not acknowledged (${r.error})`}` +
          ` after ${r.attempts} attempts, key ${eventKey(r.body)}`,
      );
    }
    out.push('', 'log lines:');
    for (const { f, lines } of logs) for (const line of lines) if (line.includes(id)) out.push(`  ${f}: ${line}`);
    out.push('', 'events, as read off the queue:');
    for (const e of events) if (e.task.id === id) out.push(`  ${JSON.stringify(e)}`);
    writeFileSync(join(cwd, 'traces', `${id}.txt`), `${out.join('\n')}\n`);
  }
}
