// What the receiver should hold after a run: the domain's pure fold over every distinct body that was
// acknowledged. A callback never acknowledged with a 2xx after all retries is not counted: the receiver
// promised nothing about it.
import { readFile, writeFile } from 'node:fs/promises';
import type { Service } from '../../lib/platform/services.ts';
import { parseCallback, type Callback } from '../../lib/domain/callback.ts';
import { reduceTasks } from '../../lib/domain/reduce-task.ts';
import type { Task } from '../../lib/domain/task.ts';
import { expectedEvents, type ExpectedEvents } from '../../lib/domain/expected-events.ts';
import { taskEventId, type TaskEventRef } from '../../lib/domain/task-events.ts';
import { type CheckedState, isMissingState } from '../../lib/domain/verification.ts';
import { isSuccessfulUpload, type StorageFaultKind, type StoredFile } from './storage.ts';
import { type StorageSettings, storageOfAppKey } from '../../lib/config/storage-settings.ts';
import { type FailedUpload, incidentFacts, incidentIdOf, switchByOf } from '../../lib/domain/storage-incidents.ts';
import { FILE_HOLD_MS } from '../../lib/platform/delivery.ts';

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
  /**
   * What the check of each file reported uploaded must find in its storage (absent: the run stored no files), and the
   * storage incidents of the run's storage outage.
   */
  storage?: { files: ExpectedCheck[]; incidents?: ExpectedIncident[]; outage?: { from: number; to: number } };
}

/** A storage incident a run's outage must make: one per storage, with its facts (lib/domain/storage-incidents.ts). */
export interface ExpectedIncident {
  appKey: string;
  storage: string;
  /** `<storage>@<first failure>`, as the receiver names it. */
  id: string;
  firstFailure: { taskId: string; fileName: string; at: number };
  filesAffected: number;
  earliestPurgeAt: number;
  switchBy: number;
}

/**
 * The incidents of the failed uploads the receiver acknowledged whose first failure lies within the outage (platform
 * time, `from` included, `to` not): one per appKey and storage.
 */
export function expectedIncidentsOf(
  outcomes: readonly DeliveryOutcome[],
  settings: StorageSettings,
  outage: { from: number; to: number },
): ExpectedIncident[] {
  const first = new Map<string, FailedUpload & { appKey: string; storage: string }>();
  for (const o of outcomes) {
    const body = o.body as Record<string, unknown> & { output?: { fileName?: string; fileUrl?: string } };
    if (!o.delivered || body.type !== 4 || isSuccessfulUpload(body) || !body.output?.fileName) continue;
    const at = Number(body.timestamp);
    if (at < outage.from || at >= outage.to) continue;
    const appKey = String(body.appKey);
    const taskId = String(body.recordId ?? body.imageId);
    const key = JSON.stringify([appKey, taskId, body.output.fileName]);
    const known = first.get(key);
    if (known && known.at <= at) continue;
    const storage = storageOfAppKey(settings, appKey);
    first.set(key, {
      appKey,
      storage,
      service: o.service,
      taskId,
      fileName: body.output.fileName,
      at,
      purgeAt: at + FILE_HOLD_MS,
    });
  }
  const byStorage = new Map<string, (FailedUpload & { appKey: string; storage: string })[]>();
  for (const f of first.values()) {
    const k = JSON.stringify([f.appKey, f.storage]);
    byStorage.set(k, [...(byStorage.get(k) ?? []), f]);
  }
  return [...byStorage.values()].map((failures) => {
    const facts = incidentFacts(failures)!;
    const { appKey, storage } = failures[0]!;
    const { taskId, fileName, at } = facts.firstFailure;
    return {
      appKey,
      storage,
      id: incidentIdOf(storage, at),
      firstFailure: { taskId, fileName, at },
      filesAffected: facts.filesAffected,
      earliestPurgeAt: facts.earliestPurgeAt,
      switchBy: switchByOf(facts.earliestPurgeAt),
    };
  });
}

/** A file reported uploaded, the fault its storage was given, and the state its check must end in. */
export interface ExpectedCheck {
  service: Service;
  appKey: string;
  taskId: string;
  fileName: string;
  fault: StorageFaultKind | null;
  state: CheckedState;
}

/** The checks of the stored files whose successful upload the receiver acknowledged (it knows of no other). */
export function expectedChecksOf(files: readonly StoredFile[], outcomes: readonly DeliveryOutcome[]): ExpectedCheck[] {
  const reported = new Set<string>();
  for (const o of outcomes) {
    const body = o.body as { appKey?: unknown; output?: { fileName?: unknown } } & Record<string, unknown>;
    if (o.delivered && isSuccessfulUpload(body)) reported.add(JSON.stringify([body.appKey, body.output?.fileName]));
  }
  return files
    .filter((f) => reported.has(JSON.stringify([f.appKey, f.fileName])))
    .map((f) => ({
      service: f.service,
      appKey: f.appKey,
      taskId: f.taskId,
      fileName: f.fileName,
      fault: f.fault,
      state: f.expected,
    }));
}

/** The events with `file.missing` for each file its check must find missing, empty or of another size (MUST). */
export function withMissingEvents(events: ExpectedEvents, checks: readonly ExpectedCheck[]): ExpectedEvents {
  const missing: TaskEventRef[] = checks
    .filter((c) => isMissingState(c.state))
    .map((c) => ({
      id: taskEventId(c.appKey, c.service, c.taskId, 'file.missing', c.fileName),
      type: 'file.missing',
      service: c.service,
      taskId: c.taskId,
      fileName: c.fileName,
    }));
  return { tasks: events.tasks, must: [...events.must, ...missing], may: [...events.may, ...missing] };
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
  checks?: readonly ExpectedCheck[],
  incidents?: { expected: readonly ExpectedIncident[]; outage: { from: number; to: number } },
): Promise<void> {
  const file: ExpectFile = {
    generatedAt: generatedAt.toISOString(),
    tasks: [...tasks],
    ...(events ? { events } : {}),
    ...(checks
      ? {
          storage: {
            files: [...checks],
            ...(incidents ? { incidents: [...incidents.expected], outage: incidents.outage } : {}),
          },
        }
      : {}),
  };
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
  const storage = file.storage;
  const storageValid =
    storage === undefined ||
    (storage !== null &&
      typeof storage === 'object' &&
      Array.isArray(storage.files) &&
      storage.files.every((f) => f !== null && typeof f === 'object' && typeof f.fileName === 'string'));
  if (!storageValid) throw new Error(`expect file ${path}: "storage" must hold {"files": [...]}`);
  return {
    generatedAt: typeof file.generatedAt === 'string' ? file.generatedAt : '',
    tasks: file.tasks as Task[],
    ...(events ? { events } : {}),
    ...(storage ? { storage } : {}),
  };
}
