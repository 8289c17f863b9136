// The read API's query parameters: which each route accepts, their forms and bounds. A parameter that is
// unknown, repeated, empty or malformed is refused with a message naming it (CONTRACT 5: invalid_query).
import { Buffer } from 'node:buffer';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { TASK_STATUSES, type TaskStatus } from '../domain/task.ts';
import { VERIFICATION_STATES, type VerificationState } from '../domain/verification.ts';
import type { TaskQuery } from '../domain/task-store.ts';
import { SERVICES, type Service } from '../platform/services.ts';
import { parseDuration, parseTimePoint, TimeOutOfRangeError } from '../time-point.ts';
import { ApiRoutes, type ApiRouteKey } from './routes.ts';
import { clip as clipText } from '../text.ts';

/** Page sizes: the default and the most a caller may ask for, per listing. */
export const PAGE_LIMITS = {
  /** A file is about 300 bytes of JSON: a full page is some 300 KB. */
  files: { default: 200, max: 1000 },
  /** A summary is about 400 bytes. */
  tasks: { default: 50, max: 200 },
  /** A stored callback is its raw body (1 to 2 KB, at most 64 KiB) and a few fields. */
  events: { default: 100, max: 500 },
} as const;

/**
 * A page also ends once its items reach this many bytes of JSON, whatever the limit: Lambda's response
 * limit is 6 MB for the whole result, body escaped once more inside it (quotes and backslashes double in
 * the worst case), and the task around a page of files holds a config and an extra of up to 64 KiB each.
 */
export const PAGE_MAX_BYTES = 2 * 1024 * 1024;

/** The longest window ahead of now a parameter may give (a purge is at most 24 hours away). */
const MAX_WINDOW_MS = 366 * 86_400_000;

/** Longest identifier accepted in a query or path, in UTF-8 bytes (DynamoDB keys hold 2048 with their prefix). */
export const MAX_IDENTIFIER_BYTES = 1024;

export const QUERY_PARAMETERS: Record<ApiRouteKey, readonly string[]> = {
  [ApiRoutes.task]: ['appKey', 'filesLimit', 'filesCursor'],
  [ApiRoutes.tasks]: [
    'room',
    'session',
    'status',
    'appKey',
    'service',
    'user',
    'since',
    'until',
    'lost',
    'stalled',
    'purgeBefore',
    'updatedSince',
    'endedSince',
    'verification',
    'limit',
    'cursor',
  ],
  [ApiRoutes.events]: ['appKey', 'limit', 'cursor'],
};

export interface TaskParams {
  appKey?: string;
  limit: number;
  cursor?: string;
}

export interface ListParams {
  query: TaskQuery;
  limit: number;
  cursor?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; parameter: string; message: string };

class QueryError extends Error {
  readonly parameter: string;
  constructor(parameter: string, message: string) {
    super(message);
    this.parameter = parameter;
  }
}

/** Longest parameter name or value an answer quotes. */
const clip = (text: string, max = 64) => clipText(text, max);

/**
 * The query parameters of a request, decoded, each at most once. The raw query string is read when there
 * is one, so that a repeated parameter is seen (API Gateway joins repeats with commas in
 * `queryStringParameters`).
 */
function readParameters(event: APIGatewayProxyEventV2): Map<string, string> {
  const params = new Map<string, string>();
  const entries: [string, string][] =
    typeof event.rawQueryString === 'string'
      ? [...new URLSearchParams(event.rawQueryString)]
      : Object.entries(event.queryStringParameters ?? {}).map(([k, v]) => [k, v ?? '']);
  for (const [name, value] of entries) {
    if (params.has(name)) throw new QueryError(name, `Query parameter "${clip(name)}" is given more than once.`);
    params.set(name, value);
  }
  return params;
}

function parseWith<T>(event: APIGatewayProxyEventV2, route: ApiRouteKey, read: (p: Reader) => T): Parsed<T> {
  try {
    const params = readParameters(event);
    const allowed = QUERY_PARAMETERS[route];
    for (const name of params.keys()) {
      if (!allowed.includes(name))
        throw new QueryError(
          name,
          `Query parameter "${clip(name)}" is not accepted by ${route}; it accepts ${allowed.join(', ')}.`,
        );
    }
    return { ok: true, value: read(new Reader(params)) };
  } catch (err) {
    if (err instanceof QueryError) return { ok: false, parameter: err.parameter, message: err.message };
    throw err;
  }
}

class Reader {
  private readonly params: Map<string, string>;
  constructor(params: Map<string, string>) {
    this.params = params;
  }

  /** A present parameter must have a value: an empty one is a mistake, not "no filter". */
  text(name: string): string | undefined {
    const value = this.params.get(name);
    if (value === undefined) return undefined;
    if (value === '') throw new QueryError(name, `Query parameter "${name}" is empty.`);
    return value;
  }

  identifier(name: string): string | undefined {
    const value = this.text(name);
    if (value !== undefined && Buffer.byteLength(value, 'utf8') > MAX_IDENTIFIER_BYTES)
      throw new QueryError(name, `Query parameter "${name}" is longer than ${MAX_IDENTIFIER_BYTES} bytes.`);
    return value;
  }

  oneOf<T extends string>(name: string, choices: readonly T[]): T | undefined {
    const value = this.text(name);
    if (value !== undefined && !choices.includes(value as T))
      throw new QueryError(
        name,
        `Query parameter "${name}" must be one of ${choices.join(', ')}, not "${clip(value)}".`,
      );
    return value as T | undefined;
  }

  limit(name: string, bounds: { default: number; max: number }): number {
    const value = this.text(name);
    if (value === undefined) return bounds.default;
    const n = /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
    if (!(n >= 1 && n <= bounds.max))
      throw new QueryError(
        name,
        `Query parameter "${name}" must be a whole number from 1 to ${bounds.max}, not "${clip(value)}".`,
      );
    return n;
  }

  /** `true` turns a filter on; absent leaves it off (`false` is refused: it filters nothing). */
  flag(name: string): true | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    if (value !== 'true') throw new QueryError(name, `Query parameter "${name}" must be "true", not "${clip(value)}".`);
    return true;
  }

  /** A duration ahead of now, as `30m`, `6h`, `2d`: at most a year. */
  duration(name: string): number | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    const ms = parseDuration(value);
    if (ms === null || ms > MAX_WINDOW_MS)
      throw new QueryError(
        name,
        `Query parameter "${name}" must be a duration of at most a year (30m, 6h, 2d), not "${clip(value)}".`,
      );
    return ms;
  }

  time(name: string, now: number): number | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    try {
      return parseTimePoint(value, now);
    } catch (err) {
      if (err instanceof TimeOutOfRangeError)
        throw new QueryError(
          name,
          `Query parameter "${name}" is out of range: "${clip(value)}"; times run from 1970-01-01 to 9999-12-31.`,
        );
      throw new QueryError(
        name,
        `Query parameter "${name}" is not a time: "${clip(value)}"; use a duration back from now (30m, 2h, 7d), ` +
          'an ISO date or time (2025-11-22, 2025-11-22T08:00:00Z) or epoch milliseconds.',
      );
    }
  }
}

/** `GET /tasks/{id}` and `GET /tasks/{id}/events`: which task, and which page of its files or callbacks. */
export function parseTaskParams(event: APIGatewayProxyEventV2, route: ApiRouteKey): Parsed<TaskParams> {
  const [limitName, cursorName, bounds] =
    route === ApiRoutes.task
      ? (['filesLimit', 'filesCursor', PAGE_LIMITS.files] as const)
      : (['limit', 'cursor', PAGE_LIMITS.events] as const);
  return parseWith(event, route, (p) => ({
    appKey: p.identifier('appKey'),
    limit: p.limit(limitName, bounds),
    cursor: p.text(cursorName),
  }));
}

/** `GET /tasks`: the filters of `callbacks tasks list`, and the page. */
export function parseListParams(event: APIGatewayProxyEventV2, now: number): Parsed<ListParams> {
  return parseWith(event, ApiRoutes.tasks, (p) => {
    const query: TaskQuery = {
      roomId: p.identifier('room'),
      sessionId: p.identifier('session'),
      status: p.oneOf<TaskStatus>('status', TASK_STATUSES),
      appKey: p.identifier('appKey'),
      service: p.oneOf<Service>('service', SERVICES),
      userId: p.identifier('user'),
      since: p.time('since', now),
      until: p.time('until', now),
      lost: p.flag('lost'),
      stalled: p.flag('stalled'),
      purgeWithinMs: p.duration('purgeBefore'),
      updatedSince: p.time('updatedSince', now),
      endedSince: p.time('endedSince', now),
      verification: p.oneOf<VerificationState>('verification', VERIFICATION_STATES),
    };
    if (query.since !== undefined && query.until !== undefined && query.since > query.until)
      throw new QueryError('since', 'Query parameter "since" is later than "until".');
    return { query, limit: p.limit('limit', PAGE_LIMITS.tasks), cursor: p.text('cursor') };
  });
}

/** The query parameter that carries the cursor of a route. */
export function cursorParameter(route: ApiRouteKey): string {
  return route === ApiRoutes.task ? 'filesCursor' : 'cursor';
}
