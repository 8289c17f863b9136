// The read API, called on the console's own origin: the local stack serves it beside the console, and
// `callbacks console` signs and forwards the same paths to a deployed stage. Answers are the API's JSON
// (docs/api.md); a refusal becomes an ApiError with the contract's code and message.
import type { ArchivedCallbacks } from '../../lib/domain/archived-callbacks.ts';
import type { EventView } from '../../lib/domain/event-view.ts';
import type { Task } from '../../lib/domain/task.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import type { StorageIncident } from '../../lib/domain/storage-incidents.ts';

export type { EventView, Task, TaskSummary };

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' }, ...(signal ? { signal } : {}) });
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const message =
      typeof error?.message === 'string'
        ? error.message
        : typeof (body as { message?: unknown } | null)?.message === 'string'
          ? String((body as { message: string }).message)
          : `The read API answered ${res.status}.`;
    throw new ApiError(res.status, typeof error?.code === 'string' ? error.code : `http_${res.status}`, message);
  }
  return body as T;
}

const query = (params: Record<string, string | undefined>) => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const text = q.toString();
  return text ? `?${text}` : '';
};

const taskPath = (id: string) => `/tasks/${encodeURIComponent(id)}`;

export function listTasks(params: URLSearchParams, signal?: AbortSignal) {
  const text = params.toString();
  return getJson<{ tasks: TaskSummary[]; nextCursor: string | null; incidents?: StorageIncident[] }>(
    `/tasks${text ? `?${text}` : ''}`,
    signal,
  );
}

export function getTask(
  id: string,
  opts: { appKey?: string | undefined; filesCursor?: string | undefined; filesLimit?: number },
  signal?: AbortSignal,
) {
  const q = query({ appKey: opts.appKey, filesCursor: opts.filesCursor, filesLimit: opts.filesLimit?.toString() });
  return getJson<{ task: Task; nextFilesCursor: string | null; incidents?: StorageIncident[] }>(
    `${taskPath(id)}${q}`,
    signal,
  );
}

export function getEvents(
  id: string,
  opts: { appKey?: string | undefined; cursor?: string | undefined; limit?: number },
  signal?: AbortSignal,
) {
  const q = query({ appKey: opts.appKey, cursor: opts.cursor, limit: opts.limit?.toString() });
  return getJson<{ events: EventView[]; nextCursor: string | null; archived?: ArchivedCallbacks }>(
    `${taskPath(id)}/events${q}`,
    signal,
  );
}

/** A failed read in one sentence: the API's own, or why it could not be reached. */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code})`;
  return `The read API could not be reached: ${err instanceof Error ? err.message : String(err)}`;
}
