// What the receiver should hold after a run: the domain's pure fold over every distinct body that was
// acknowledged. A callback never acknowledged with a 2xx after all retries is not counted: the receiver
// promised nothing about it.
import { readFile, writeFile } from 'node:fs/promises';
import type { Service } from '../../lib/platform/services.ts';
import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import { reduceTasks } from '../../lib/domain/reduce-task.ts';
import type { Task } from '../../lib/domain/task.ts';
import { expectedEvents, type ExpectedEvents } from '../../lib/domain/expected-events.ts';

export interface DeliveryOutcome {
  service: Service;
  body: unknown;
  delivered: boolean;
}

export interface ExpectFile {
  generatedAt: string;
  tasks: Task[];
  /** The task events the run must and may publish (absent in files written before task events existed). */
  events?: ExpectedEvents;
}

export function expectedTasks(outcomes: readonly DeliveryOutcome[]): Task[] {
  return reduceTasks(acknowledgedCallbacks(outcomes));
}

/** The task events a receiver publishes for the acknowledged callbacks (lib/domain/task-events.ts). */
export function expectedTaskEventsOf(outcomes: readonly DeliveryOutcome[]): ExpectedEvents {
  return expectedEvents(acknowledgedCallbacks(outcomes));
}

function acknowledgedCallbacks(outcomes: readonly DeliveryOutcome[]): Callback[] {
  const callbacks: Callback[] = [];
  for (const outcome of outcomes) {
    if (!outcome.delivered) continue;
    const parsed = parseCallback(outcome.service, outcome.body);
    if (!parsed.ok) {
      // The emulator only sends bodies the domain accepts; anything else is a bug in the emulator.
      throw new Error(`emulated ${outcome.service} callback does not parse: ${parsed.errors.join('; ')}`);
    }
    callbacks.push(parsed.callback);
  }
  // The folds keep one callback per event key, so duplicates and reordered keys count once.
  return callbacks;
}

export async function writeExpectFile(
  path: string,
  tasks: readonly Task[],
  generatedAt = new Date(),
  events?: ExpectedEvents,
): Promise<void> {
  const file: ExpectFile = { generatedAt: generatedAt.toISOString(), tasks: [...tasks], ...(events ? { events } : {}) };
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, 'utf8');
}

export async function readExpectFile(path: string): Promise<ExpectFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT' ? `expect file ${path} does not exist` : `cannot read expect file ${path}: ${code ?? err}`,
    );
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(`expect file ${path} is not valid JSON`);
  }
  const file = data as Partial<ExpectFile> | null;
  const valid =
    file !== null &&
    typeof file === 'object' &&
    Array.isArray(file.tasks) &&
    file.tasks.every(
      (t) => t !== null && typeof t === 'object' && typeof t.id === 'string' && typeof t.service === 'string',
    );
  if (!valid)
    throw new Error(
      `expect file ${path} must hold {"generatedAt": ..., "tasks": [...]}, each task with an id and a service`,
    );
  const events = file.events;
  const eventsValid =
    events === undefined ||
    (events !== null &&
      typeof events === 'object' &&
      Array.isArray(events.tasks) &&
      Array.isArray(events.must) &&
      Array.isArray(events.may));
  if (!eventsValid)
    throw new Error(`expect file ${path}: "events" must hold {"tasks": [...], "must": [...], "may": [...]}`);
  return {
    generatedAt: typeof file.generatedAt === 'string' ? file.generatedAt : '',
    tasks: file.tasks as Task[],
    ...(events ? { events } : {}),
  };
}
