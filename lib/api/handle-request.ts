// The read API (CONTRACT 5) as a plain function of an API Gateway v2 event and its dependencies:
// `GET /tasks/{id}` (the task as `callbacks tasks get --json` prints it, its files one page at a time),
// `GET /tasks` (the listing of `callbacks tasks list`, newest first) and `GET /tasks/{id}/events` (the stored
// callbacks in timestamp order), each page with an opaque cursor to the next. It never throws: a store
// that cannot be read is a 503, the caller retries. One log line per request.
//
// A task id is a recordId or an imageId, chosen by the platform per appKey: two appKeys may use the same
// one. `appKey` then says which task is meant; without it such an id is refused with 409 `ambiguous_id`
// naming the appKeys, rather than answered with either task.
import { Buffer } from 'node:buffer';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { archivedCallbacks } from '../domain/archived-callbacks.ts';
import { eventView } from '../domain/event-view.ts';
import { AmbiguousTaskError, InvalidCursorError, type PageRequest, type TaskReader } from '../domain/task-store.ts';
import { errorResponse, jsonResponse, type ErrorCode, type JsonResponse } from '../http-responses.ts';
import type { Logger } from '../log.ts';
import {
  MAX_IDENTIFIER_BYTES,
  PAGE_MAX_BYTES,
  cursorParameter,
  parseListParams,
  parseTaskParams,
  type Parsed,
} from './query.ts';
import { API_ROUTE_KEYS, ApiRoutes, type ApiRouteKey } from './routes.ts';
import { clip as clipText, errorSentence } from '../text.ts';
import type { StorageIncident } from '../domain/storage-incidents.ts';

export interface ApiDependencies {
  store: TaskReader;
  log: Logger;
  now: () => number;
  /** The answer is a 503 once reading takes this long, so that it always comes before the function's time-out. */
  deadlineMs?: number;
  /**
   * How long the table keeps raw callbacks (RAW_EVENT_TTL_DAYS): a page of a task's callbacks that began before
   * says where the older ones are (`archived`); absent, none says so.
   */
  rawRetentionDays?: number;
  /**
   * The storage incidents open now, of an appKey or all (docs/verification.md): a listing and a task carry them, for
   * the console; absent, neither does.
   */
  openIncidents?: (appKey?: string) => Promise<StorageIncident[]>;
}

/** Reading gave up at the deadline: as transient as a store time-out. */
class DeadlineError extends Error {
  override name = 'TimeoutError';
}

function withDeadline<T>(work: Promise<T>, ms: number | undefined): Promise<T> {
  if (ms === undefined) return work;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no answer from the task store within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** The fields of the `api_request` log line: no query values beyond the task id, never a body. */
interface RequestLog {
  route: string;
  requestId: string | undefined;
  caller?: string;
  id?: string;
  status?: number;
  code?: ErrorCode;
  parameter?: string;
  items?: number;
  more?: boolean;
  reason?: string;
  latencyMs?: number;
}

type Level = 'info' | 'warn' | 'error';

/** Answers are read data that may change at the next callback: no cache may keep them. */
const noStore = { 'cache-control': 'no-store' };

/** Longest route, task id or name a log line or an answer quotes. */
const QUOTED_CHARS = 128;
const clip = (text: string, max = QUOTED_CHARS): string => clipText(text, max);

/**
 * Whether an error came from reading the table (an AWS service error, a time-out, a connection that
 * failed): transient, worth a retry. Anything else is a fault of this code.
 */
function isStoreFailure(error: unknown): boolean {
  const e = (error ?? {}) as { $metadata?: unknown; name?: unknown; code?: unknown };
  if (e.$metadata !== undefined) return true;
  if (e.name === 'TimeoutError' || e.name === 'ContentionError') return true;
  return typeof e.code === 'string' && /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(e.code);
}

/**
 * Whether DynamoDB refused the request itself as malformed (a key or number out of its bounds): the
 * parameters that built it were wrong, and the same request would be refused again. Parameters and
 * cursors are bounded before any request is built, so this is a last resort.
 */
function isRefusedRequest(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'ValidationException';
}

export async function handleApiRequest(event: APIGatewayProxyEventV2, deps: ApiDependencies): Promise<JsonResponse> {
  const started = performance.now();
  const context = event?.requestContext as
    | (APIGatewayProxyEventV2['requestContext'] & { authorizer?: { iam?: { userArn?: string } } })
    | undefined;
  const log: RequestLog = {
    route: clip(String(event?.routeKey ?? '')),
    requestId: context?.requestId || undefined,
    caller: context?.authorizer?.iam?.userArn || undefined,
  };
  const outcome = { level: 'info' as Level };
  let response: JsonResponse;
  try {
    response = await withDeadline(answer(event, deps, log), deps.deadlineMs);
  } catch (error) {
    log.reason = errorSentence(error);
    if (isRefusedRequest(error)) {
      outcome.level = 'warn';
      log.code = 'invalid_query';
      response = errorResponse(
        'invalid_query',
        'The task store refused the query as given: a query parameter or cursor is outside what it can read.',
        noStore,
      );
    } else {
      const transient = isStoreFailure(error);
      outcome.level = transient ? 'warn' : 'error';
      log.code = transient ? 'store_unavailable' : 'internal_error';
      response = transient
        ? errorResponse('store_unavailable', 'The task store could not be read; retry later.', { 'retry-after': '1' })
        : errorResponse('internal_error', 'An unexpected error occurred; retry later.');
    }
  }
  log.status = response.statusCode;
  log.latencyMs = Math.round((performance.now() - started) * 10) / 10;
  try {
    deps.log[outcome.level]('api_request', { ...log });
  } catch {
    // A failing log sink must not turn an answer into a failure.
  }
  return response;
}

/** The log line of an error answer: its code, and the query parameter at fault when one is. */
function fail(log: RequestLog, code: ErrorCode, message: string, parameter?: string): JsonResponse {
  log.code = code;
  if (parameter !== undefined) log.parameter = clip(parameter, 64);
  return errorResponse(code, message, noStore);
}

const refused = (log: RequestLog, parsed: Extract<Parsed<unknown>, { ok: false }>) =>
  fail(log, 'invalid_query', parsed.message, parsed.parameter);

async function answer(event: APIGatewayProxyEventV2, deps: ApiDependencies, log: RequestLog): Promise<JsonResponse> {
  const route = event?.routeKey as ApiRouteKey;
  if (!API_ROUTE_KEYS.includes(route))
    return fail(
      log,
      'not_found',
      'No such endpoint: the read API serves GET /tasks, /tasks/{id} and /tasks/{id}/events.',
    );

  try {
    if (route === ApiRoutes.tasks) return await answerListing(event, deps, log);
    return await answerOfTask(event, route, deps, log);
  } catch (error) {
    return failedRead(error, route, log);
  }
}

/** `GET /tasks`: one page of the listing, with the storage incidents open of its appKey (or all). */
async function answerListing(
  event: APIGatewayProxyEventV2,
  deps: ApiDependencies,
  log: RequestLog,
): Promise<JsonResponse> {
  const parsed = parseListParams(event, deps.now());
  if (!parsed.ok) return refused(log, parsed);
  const { query, limit, cursor } = parsed.value;
  const page = await deps.store.listTasksPage(query, { limit, cursor, maxBytes: PAGE_MAX_BYTES });
  log.items = page.items.length;
  log.more = page.next !== null;
  const incidents = deps.openIncidents ? { incidents: await deps.openIncidents(query.appKey) } : {};
  return jsonResponse({ tasks: page.items, nextCursor: page.next, ...incidents }, noStore);
}

/** The task a request names: its id, the appKey given if one is, and the page of its files or events asked. */
interface TaskAsked {
  id: string;
  appKey: string | undefined;
  page: PageRequest;
}

/** `GET /tasks/{id}` and `GET /tasks/{id}/events`: the task's id and query read, then the route's answer. */
async function answerOfTask(
  event: APIGatewayProxyEventV2,
  route: ApiRouteKey,
  deps: ApiDependencies,
  log: RequestLog,
): Promise<JsonResponse> {
  const id = event.pathParameters?.id ?? '';
  log.id = clip(id);
  const parsed = parseTaskParams(event, route);
  if (!parsed.ok) return refused(log, parsed);
  const { appKey, limit, cursor } = parsed.value;
  const asked: TaskAsked = { id, appKey, page: { limit, cursor, maxBytes: PAGE_MAX_BYTES } };
  // No stored task can have an id this long (its key would be over DynamoDB's limit).
  const storable = id !== '' && Buffer.byteLength(id, 'utf8') <= MAX_IDENTIFIER_BYTES;
  if (!storable) return noSuchTask(asked, log);
  if (route === ApiRoutes.task) return answerTask(asked, deps, log);
  return answerEvents(asked, deps, log);
}

function noSuchTask({ id, appKey }: TaskAsked, log: RequestLog): JsonResponse {
  const which = appKey === undefined ? `task ${id}` : `task ${id} of appKey ${appKey}`;
  return fail(log, 'not_found', `There is no ${clip(which)}.`);
}

/** `GET /tasks/{id}`: the task with one page of its files, and the storage incidents open of its appKey. */
async function answerTask(asked: TaskAsked, deps: ApiDependencies, log: RequestLog): Promise<JsonResponse> {
  const found = await deps.store.getTaskPage({ id: asked.id, appKey: asked.appKey }, asked.page);
  if (!found) return noSuchTask(asked, log);
  log.items = found.task.files.length;
  log.more = found.nextFilesCursor !== null;
  const incidents = deps.openIncidents ? { incidents: await deps.openIncidents(found.task.appKey) } : {};
  return jsonResponse({ task: found.task, nextFilesCursor: found.nextFilesCursor, ...incidents }, noStore);
}

/** `GET /tasks/{id}/events`: one page of the task's stored callbacks. */
async function answerEvents(asked: TaskAsked, deps: ApiDependencies, log: RequestLog): Promise<JsonResponse> {
  const found = await deps.store.listEventsPage({ id: asked.id, appKey: asked.appKey }, asked.page);
  if (!found) return noSuchTask(asked, log);
  log.items = found.items.length;
  log.more = found.next !== null;
  // A task begun before the table's retention: where its older callbacks are (the archive), never an empty page
  // as if there were none.
  const archived =
    deps.rawRetentionDays === undefined ? null : archivedCallbacks(found.task, deps.now(), deps.rawRetentionDays);
  const events = { events: found.items.map(eventView), nextCursor: found.next };
  return jsonResponse(archived ? { ...events, archived } : events, noStore);
}

/** A read the caller's query made impossible (a cursor of another query, an id several appKeys use); else thrown. */
function failedRead(error: unknown, route: ApiRouteKey, log: RequestLog): JsonResponse {
  if (error instanceof InvalidCursorError) {
    const name = cursorParameter(route);
    return fail(log, 'invalid_query', `Query parameter "${name}" is not valid here: ${error.message}.`, name);
  }
  if (error instanceof AmbiguousTaskError) {
    return fail(
      log,
      'ambiguous_id',
      `Task id ${clip(error.id)} is used by several appKeys (${error.appKeys.map((k) => clip(k, 64)).join(', ')}); ` +
        'name one with the appKey query parameter.',
    );
  }
  throw error;
}
