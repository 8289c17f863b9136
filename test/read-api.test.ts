// The read API through the local stack, as `curl localhost:3000/tasks/<id>` reaches it: the gateway's
// routes, the deployed handler (functions/api.ts) and the DynamoDB task store on dynalite. The tasks were
// written by the worker's own logic (and a few by signed callbacks through the whole stack); what every
// route must answer comes from the domain's oracle (reduceTask) and from the seeding plan, not from the
// store. Every answer is also checked against docs/openapi.yaml.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_ROUTE_KEYS, ApiRoutes, type ApiRouteKey } from '../lib/api/routes.ts';
import { PAGE_LIMITS, QUERY_PARAMETERS } from '../lib/api/query.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { IncidentStore } from '../lib/aws/dynamo/storage/storage-incidents.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { STORAGE_CHANGE_DELAY_MS } from '../lib/domain/deadlines.ts';
import type { StorageIncident } from '../lib/domain/storage-incidents.ts';
import type { EventView } from '../lib/domain/event-view.ts';
import type { TaskQuery } from '../lib/domain/task-store.ts';
import type { TaskSummary } from '../lib/domain/task-summary.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import type { Task, TaskStatus } from '../lib/domain/task.ts';
import { VERIFICATION_STATES, type VerifiedFileView } from '../lib/domain/verification.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { errorStatus } from '../lib/http-responses.ts';
import { setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import type { Service } from '../lib/platform/services.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import {
  compileAllSchemas,
  conformance,
  documentedQueryParameters,
  documentedRoutes,
  openapi,
} from './support/openapi.ts';
import {
  applyTasks,
  expectedTask,
  recordingTask,
  screenshotTask,
  type Outcome,
  type SeedTask,
} from '../devkit/seeds/seed-tasks.ts';
import { eventually } from './support/eventually.ts';

const MINUTE = 60_000;
const DAY = 86_400_000;
const now = Date.now();
const root = new URL('..', import.meta.url).pathname;
const fixturesDir = join(root, 'test/fixtures');
const fixtureNames = readdirSync(fixturesDir).filter((f) => f.endsWith('.json'));
const fixture = (name: string) => readFileSync(join(fixturesDir, name), 'utf8').trim();
const serviceOf = (name: string): Service => (name.startsWith('recording') ? 'recording' : 'screenshot');

let dir: string;
let stack: LocalStack;
let store: DynamoTaskStore;
let restoreSink: ReturnType<typeof setLogSink>;

// ---------------------------------------------------------------------------------------------------
// The data: 250 tasks over the last nine days, one screenshot task of 600 images, three tasks older
// than the default 30-day window, and the fixtures' tasks, sent as signed callbacks.

const OUTCOMES: Outcome[] = ['running', 'ended', 'failed', 'completed', 'upload_failed'];
const APP_KEYS = ['app-a', 'app-b', 'app-c'];

function listingTask(i: number, at: number): SeedTask {
  const appKey = APP_KEYS[i % 3]!;
  const roomId = `room-${i % 7}`;
  const sessionId = `s-${i % 25}`;
  if (i % 5 === 4) {
    return screenshotTask({ id: `img-${i}`, appKey, roomId, sessionId, at, images: i % 3, ended: i % 2 === 0 });
  }
  return recordingTask({
    id: `rec-${i}`,
    appKey,
    roomId,
    sessionId,
    userId: i % 4 === 0 ? '' : `user-${i % 6}`,
    at,
    outcome: OUTCOMES[Math.floor(i / 5) % 5]!,
  });
}

const listing = Array.from({ length: 250 }, (_, i) => listingTask(i, now - 9 * DAY + i * 50 * MINUTE));
const big = screenshotTask({
  id: 'img-big',
  appKey: 'app-a',
  roomId: 'room-big',
  sessionId: 's-big',
  at: now - 2 * DAY - 7 * MINUTE,
  images: 600,
  failEvery: 7,
  ended: true,
});
const old = [0, 1, 2].map((i) => listingTask(1000 + i, now - 40 * DAY + i * MINUTE));
const seeded = [...listing, big, ...old];

/** What the fixtures' callbacks make, by the oracle. */
const fixtureTasks: Task[] = (() => {
  const callbacks = fixtureNames.map((f) => {
    const parsed = parseCallback(serviceOf(f), fixture(f));
    if (!parsed.ok) throw new Error(parsed.errors.join());
    return parsed.callback;
  });
  const ids = [...new Set(callbacks.map((c) => c.id))];
  return ids.map((id) => reduceTask(callbacks.filter((c) => c.id === id))!);
})();

/** Every task the store holds, as the oracle says it must read. */
const everyTask: Task[] = [...seeded.map(expectedTask), ...fixtureTasks];
/** A task's first callback time: what listings sort and filter by. */
const firstAt = new Map<string, number>(
  seeded.map((t) => [t.id, Math.min(...t.bodies.map((b) => b.timestamp as number))]),
);
for (const f of fixtureNames) {
  const body = JSON.parse(fixture(f));
  const id = body.recordId ?? body.imageId;
  firstAt.set(id, Math.min(firstAt.get(id) ?? Number.POSITIVE_INFINITY, body.timestamp));
}

async function postSigned(service: Service, body: string): Promise<Response> {
  const nonce = `n${Math.random().toString(36).slice(2)}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  return fetch(`${stack.url}/callbacks/${service}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'RC-Nonce': nonce,
      'RC-Timestamp': timestamp,
      'RC-Signature': computeSignature('demo-secret', nonce, timestamp),
    },
    body,
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-read-api-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true, retryDelaySeconds: 1 });
  store = new DynamoTaskStore({ client: stack.tableClient(), tableName: stack.info.tableName, verifications: true });
  // The fixtures go the whole way: signed POST, queue, worker.
  for (const f of fixtureNames) expect((await postSigned(serviceOf(f), fixture(f))).status).toBe(200);
  await applyTasks(store, seeded);
  await eventually(
    'the fixtures applied',
    () => Promise.all(fixtureTasks.map((t) => store.getTask(t.id))),
    (held) => held.every((t, k) => t?.eventCount === fixtureTasks[k]!.eventCount),
  );
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------

interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** The route a path is for, read off the path here rather than by the code under test. */
function routeOf(path: string): ApiRouteKey {
  const p = path.split('?')[0]!;
  if (p === '/tasks') return ApiRoutes.tasks;
  return p.endsWith('/events') ? ApiRoutes.events : ApiRoutes.task;
}

/** GET through the local stack; the answer must be one docs/openapi.yaml documents. */
async function get<T = any>(path: string): Promise<Answer<T>> {
  const res = await fetch(`${stack.url}${path}`);
  const body = await res.json();
  expect({ path, errors: conformance(routeOf(path), res.status, body) }).toEqual({ path, errors: [] });
  expect(res.headers.get('content-type')).toBe('application/json');
  return { status: res.status, headers: res.headers, body: body as T };
}

async function allPages<T>(
  path: string,
  key: 'tasks' | 'events',
  limit: number,
): Promise<{ items: T[]; pages: number[] }> {
  const items: T[] = [];
  const pages: number[] = [];
  const sep = path.includes('?') ? '&' : '?';
  let cursor: string | null = null;
  do {
    const res: Answer = await get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    expect(res.body[key].length).toBeLessThanOrEqual(limit);
    items.push(...res.body[key]);
    pages.push(res.body[key].length);
    cursor = res.body.nextCursor;
    expect(pages.length).toBeLessThan(100);
  } while (cursor);
  return { items, pages };
}

/**
 * A task as read, its files' verifications taken apart (docs/verification.md): each file reported uploaded carries
 * one (pending until the verifier has checked it, then what it found), every other file null.
 */
function withoutVerifications(task: Task): Task {
  return {
    ...task,
    files: task.files.map((file) => {
      const { verification, ...rest } = file as VerifiedFileView;
      if (file.upload === 'uploaded') expect(VERIFICATION_STATES).toContain(verification?.state);
      else expect(verification).toBeNull();
      return rest;
    }),
  };
}

function expectInvalid(res: Answer, parameter: string) {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('invalid_query');
  expect(res.body.error.message).toContain(`"${parameter}"`);
}

// ---------------------------------------------------------------------------------------------------

describe('GET /tasks/{id}', () => {
  test(
    'a task as `callbacks tasks get --json` prints it: recording and screenshot, through the whole ' + 'stack',
    async () => {
      for (const expected of [...fixtureTasks, ...listing.slice(0, 10).map(expectedTask)]) {
        const res = await get(`/tasks/${encodeURIComponent(expected.id)}`);
        expect(res.status).toBe(200);
        expect(res.headers.get('cache-control')).toBe('no-store');
        // The storage incidents open for its appKey (the fixtures' failed upload may have opened one).
        const { incidents, ...page } = res.body;
        expect(Array.isArray(incidents)).toBe(true);
        expect({ ...page, task: withoutVerifications(page.task) }).toEqual({ task: expected, nextFilesCursor: null });
        // The CLI reads the same store method.
        expect(withoutVerifications(res.body.task)).toEqual(withoutVerifications((await store.getTask(expected.id))!));
      }
    },
  );

  test('the files of a 600-image task, one page at a time, in file-name order', async () => {
    const expected = expectedTask(big);
    expect(expected.files).toHaveLength(600);
    const { files: expectedFiles, ...expectedRest } = expected;
    for (const [query, sizes] of [
      ['', [200, 200, 200]],
      ['?filesLimit=250', [250, 250, 100]],
      ['?filesLimit=599', [599, 1]],
      [`?filesLimit=${PAGE_LIMITS.files.max}`, [600]],
    ] as const) {
      const files: unknown[] = [];
      const pages: number[] = [];
      let cursor: string | null = null;
      do {
        const sep = query ? '&' : '?';
        const res: Answer = await get(`/tasks/img-big${query}${cursor ? `${sep}filesCursor=${cursor}` : ''}`);
        expect(res.status).toBe(200);
        const { files: page, ...rest } = withoutVerifications(res.body.task);
        expect(rest).toEqual(expectedRest);
        files.push(...page);
        pages.push(page.length);
        cursor = res.body.nextFilesCursor;
      } while (cursor);
      expect({ query, pages }).toEqual({ query, pages: sizes });
      expect(files).toEqual(expectedFiles);
    }
  });

  test('the task JSON lacked its counts: every page carries them, as its files and its list row say', async () => {
    // The files' own tally, page after page: what the counts must say.
    const files: Task['files'] = [];
    const pages: Task[] = [];
    let cursor: string | null = null;
    do {
      const res: Answer = await get(`/tasks/img-big?filesLimit=250${cursor ? `&filesCursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      pages.push(res.body.task);
      files.push(...res.body.task.files);
      cursor = res.body.nextFilesCursor;
    } while (cursor);
    const count = (upload: string) => files.filter((f) => f.upload === upload).length;
    const fromFiles = {
      total: files.length,
      pending: count('pending'),
      uploaded: count('uploaded'),
      failed: count('failed') + count('lost'),
      lost: count('lost'),
    };
    expect(fromFiles).toMatchObject({ total: 600, failed: expect.any(Number) });
    expect(fromFiles.failed).toBeGreaterThan(0);
    expect(fromFiles.uploaded).toBeGreaterThan(0);
    expect(pages).toHaveLength(3);
    for (const page of pages) expect(page.counts).toEqual(fromFiles);
    // The row of the same task in a listing says the same.
    const rows = await allPages<TaskSummary>('/tasks?appKey=app-a&room=room-big', 'tasks', 50);
    const row = rows.items.find((t) => t.id === 'img-big')!;
    expect({
      total: row.fileCount,
      pending: row.pendingFiles,
      uploaded: row.fileCount - row.pendingFiles - row.failedFiles,
      failed: row.failedFiles,
      lost: row.lostFiles,
    }).toEqual(fromFiles);
  });

  test('appKey names the task of that appKey; another appKey finds none', async () => {
    expect((await get('/tasks/img-big?appKey=app-a&filesLimit=1')).status).toBe(200);
    const other = await get('/tasks/img-big?appKey=app-b');
    expect(other.status).toBe(404);
    expect(other.body).toEqual({
      error: { code: 'not_found', message: 'There is no task img-big of appKey app-b.' },
    });
  });

  test('unknown ids are 404 not_found, whatever their characters or length', async () => {
    for (const [path, id] of [
      ['/tasks/rec-nowhere', 'rec-nowhere'],
      ['/tasks/rec%20with%20spaces', 'rec with spaces'],
      ['/tasks/%E5%BD%95%E5%88%B6', '录制'],
      [`/tasks/${'x'.repeat(1025)}`, null],
    ] as const) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
      if (id) expect(res.body.error.message).toBe(`There is no task ${id}.`);
      const events = await get(`${path}/events`);
      expect(events.status).toBe(404);
      expect(events.body.error.code).toBe('not_found');
    }
  });
});

// ---------------------------------------------------------------------------------------------------

/** The tasks a listing must return, newest first, by the documented rules, from the seeding plan. */
function expectedListing(q: TaskQuery): string[] {
  // Rooms and sessions are indexed under their appKey: without one, a listing goes day by day.
  const byIndex = q.appKey !== undefined;
  const until = q.until ?? now + 366 * DAY;
  const since = q.since ?? (byIndex ? 0 : Math.min(until, now + DAY) - 30 * DAY);
  return everyTask
    .filter((t) => {
      const at = firstAt.get(t.id)!;
      return (
        at >= since &&
        at <= until &&
        (q.roomId === undefined || t.roomId === q.roomId) &&
        (q.sessionId === undefined || t.sessionId === q.sessionId) &&
        (q.appKey === undefined || t.appKey === q.appKey) &&
        (q.status === undefined || t.status === q.status) &&
        (q.service === undefined || t.service === q.service) &&
        (q.userId === undefined || t.userId === q.userId)
      );
    })
    .sort((a, b) => firstAt.get(b.id)! - firstAt.get(a.id)!)
    .map((t) => t.id);
}

describe('GET /tasks', () => {
  test('250 tasks, newest first, in pages of 100 with an opaque cursor', async () => {
    const { items, pages } = await allPages<TaskSummary>('/tasks', 'tasks', 100);
    const expected = expectedListing({});
    expect(expected).toHaveLength(251);
    expect(pages).toEqual([100, 100, 51]);
    expect(items.map((s) => s.id)).toEqual(expected);
    // Each summary as `callbacks tasks list --json` prints it.
    const cli: TaskSummary[] = [];
    for await (const s of store.listTasks({ limit: 1000 })) cli.push(s);
    expect(items).toEqual(cli);
    const task = everyTask.find((t) => t.id === items[0]!.id)!;
    expect(items[0]).toMatchObject({
      service: task.service,
      appKey: task.appKey,
      status: task.status,
      eventCount: task.eventCount,
      fileCount: task.files.length,
      sortAt: firstAt.get(task.id),
    });
  });

  test('each filter of `callbacks tasks list`, alone and combined, paginated', async () => {
    const cases: [string, TaskQuery][] = [
      ['room=room-3', { roomId: 'room-3' }],
      ['session=s-7', { sessionId: 's-7' }],
      ['appKey=app-b', { appKey: 'app-b' }],
      ['service=screenshot', { service: 'screenshot' }],
      ['service=recording', { service: 'recording' }],
      ['user=user-1', { userId: 'user-1' }],
      ['appKey=app-a&status=completed', { appKey: 'app-a', status: 'completed' }],
      ['room=room-2&status=failed', { roomId: 'room-2', status: 'failed' }],
      ['session=s-4&service=screenshot', { sessionId: 's-4', service: 'screenshot' }],
      ['appKey=app-c&user=user-5', { appKey: 'app-c', userId: 'user-5' }],
      ['room=room-1024', { roomId: 'room-1024' }],
      ['room=room-1024&appKey=demo-app', { roomId: 'room-1024', appKey: 'demo-app' }],
      ['session=s-7&appKey=app-c', { sessionId: 's-7', appKey: 'app-c' }],
      ['room=room-3&appKey=app-a&status=completed', { roomId: 'room-3', appKey: 'app-a', status: 'completed' }],
      ['appKey=demo-app&status=upload_failed', { appKey: 'demo-app', status: 'upload_failed' }],
      [`since=${now - 3 * DAY}`, { since: now - 3 * DAY }],
      [`since=${now - 5 * DAY}&until=${now - 2 * DAY}`, { since: now - 5 * DAY, until: now - 2 * DAY }],
      [`until=${now - 39 * DAY}`, { until: now - 39 * DAY }],
      [`since=${now - 50 * DAY}&service=recording`, { since: now - 50 * DAY, service: 'recording' }],
      ['since=2025-11-22&until=2025-11-23', { since: Date.parse('2025-11-22'), until: Date.parse('2025-11-23') }],
      ...(['recording', 'capturing', 'ended', 'completed', 'upload_failed', 'failed'] as TaskStatus[]).map(
        (status): [string, TaskQuery] => [`status=${status}`, { status }],
      ),
    ];
    for (const [query, q] of cases) {
      const expected = expectedListing(q);
      const { items } = await allPages<TaskSummary>(`/tasks?${query}`, 'tasks', 40);
      expect({ query, ids: items.map((s) => s.id) }).toEqual({ query, ids: expected });
      // The same as the CLI's listing.
      const cli: string[] = [];
      for await (const s of store.listTasks({ ...q, limit: 1000 })) cli.push(s.id);
      expect({ query, ids: cli }).toEqual({ query, ids: expected });
    }
    // The filters are not trivially empty or all-matching.
    expect(expectedListing({ userId: 'user-1' }).length).toBeGreaterThan(5);
    expect(expectedListing({ status: 'upload_failed' }).length).toBeGreaterThan(5);
  });

  test('a relative since keeps the window of the first page; the cursor alone goes on the same way', async () => {
    // The handler reads the clock a moment later: no task is within minutes of this boundary.
    const expected = expectedListing({ since: Date.now() - 3 * DAY });
    const first = await get('/tasks?since=3d&limit=30');
    expect(first.body.tasks.map((s: TaskSummary) => s.id)).toEqual(expected.slice(0, 30));
    const withFilters = await get(`/tasks?since=3d&limit=30&cursor=${first.body.nextCursor}`);
    const alone = await get(`/tasks?limit=30&cursor=${first.body.nextCursor}`);
    expect(withFilters.body).toEqual(alone.body);
    expect(alone.body.tasks.map((s: TaskSummary) => s.id)).toEqual(expected.slice(30, 60));
  });

  test('a cursor with other filters than its own is refused, naming the cursor', async () => {
    const first = await get('/tasks?appKey=app-a&limit=5');
    expect(first.body.nextCursor).toEqual(expect.any(String));
    expectInvalid(await get(`/tasks?appKey=app-b&limit=5&cursor=${first.body.nextCursor}`), 'cursor');
    expectInvalid(await get(`/tasks?room=room-1&cursor=${first.body.nextCursor}`), 'cursor');
    const page = await get(`/tasks?cursor=${first.body.nextCursor}&limit=5`);
    expect(page.body.tasks.map((s: TaskSummary) => s.id)).toEqual(expectedListing({ appKey: 'app-a' }).slice(5, 10));
  });
});

// ---------------------------------------------------------------------------------------------------

describe('GET /tasks/{id}/events', () => {
  test('the stored callbacks of a task in timestamp order, bodies as received, paginated', async () => {
    const id = '7nQ2f0vB-rec-001';
    const bodies = fixtureNames
      .map((f) => JSON.parse(fixture(f)))
      .filter((b) => b.recordId === id)
      .sort((a, b) => a.timestamp - b.timestamp);
    const whole = await get(`/tasks/${id}/events`);
    expect(whole.status).toBe(200);
    expect(whole.body.nextCursor).toBeNull();
    expect(whole.body.events.map((e: EventView) => e.body)).toEqual(bodies);
    expect(whole.body.events.every((e: EventView) => e.verdict === 'valid')).toBe(true);
    const { items, pages } = await allPages<EventView>(`/tasks/${id}/events`, 'events', 2);
    expect(pages).toEqual([2, 2, 1]);
    expect(items).toEqual(whole.body.events);
  });

  test('the 602 callbacks of the 600-image task, in pages of the maximum size', async () => {
    const { items, pages } = await allPages<EventView>(
      '/tasks/img-big/events?appKey=app-a',
      'events',
      PAGE_LIMITS.events.max,
    );
    expect(pages).toEqual([500, 102]);
    const timestamps = items.map((e) => e.timestamp);
    expect(timestamps).toEqual(big.bodies.map((b) => b.timestamp as number).sort((a, b) => a - b));
    expect(new Set(items.map((e) => e.key)).size).toBe(602);
    expect((await get('/tasks/img-big/events?appKey=app-c')).status).toBe(404);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('bad parameters', () => {
  test('are refused with 400 invalid_query naming the parameter', async () => {
    const cases: [string, string][] = [
      ['/tasks?roomId=room-1', 'roomId'],
      ['/tasks?room=a&room=b', 'room'],
      ['/tasks?room=', 'room'],
      [`/tasks?room=${'r'.repeat(1025)}`, 'room'],
      ['/tasks?limit=0', 'limit'],
      [`/tasks?limit=${PAGE_LIMITS.tasks.max + 1}`, 'limit'],
      ['/tasks?limit=1.5', 'limit'],
      ['/tasks?limit=-1', 'limit'],
      ['/tasks?limit=ten', 'limit'],
      ['/tasks?status=done', 'status'],
      ['/tasks?service=video', 'service'],
      ['/tasks?since=yesterday', 'since'],
      ['/tasks?until=2025-13-45', 'until'],
      [`/tasks?since=${now}&until=${now - DAY}`, 'since'],
      ['/tasks?cursor=not-a-cursor', 'cursor'],
      ['/tasks?cursor=e30', 'cursor'],
      ['/tasks/img-big?filesLimit=1001', 'filesLimit'],
      ['/tasks/img-big?filesLimit=', 'filesLimit'],
      ['/tasks/img-big?limit=5', 'limit'],
      ['/tasks/img-big?filesCursor=%%%', 'filesCursor'],
      ['/tasks/img-big/events?limit=501', 'limit'],
      ['/tasks/img-big/events?filesLimit=5', 'filesLimit'],
      ['/tasks/img-big/events?cursor=AAAA', 'cursor'],
    ];
    for (const [path, parameter] of cases) {
      const res = await get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expectInvalid(res, parameter);
    }
  });

  test('a cursor of one listing is refused by another', async () => {
    const files = await get('/tasks/img-big?filesLimit=10');
    const events = await get('/tasks/img-big/events?limit=10');
    const tasks = await get('/tasks?limit=10');
    expectInvalid(await get(`/tasks/img-big/events?cursor=${files.body.nextFilesCursor}`), 'cursor');
    expectInvalid(await get(`/tasks/img-big?filesCursor=${events.body.nextCursor}`), 'filesCursor');
    expectInvalid(await get(`/tasks?cursor=${events.body.nextCursor}`), 'cursor');
    expectInvalid(await get(`/tasks/img-big?filesCursor=${tasks.body.nextCursor}`), 'filesCursor');
  });

  test('other methods and paths are not the read API: the ingest answers them as deployed ($default)', async () => {
    const post = await fetch(`${stack.url}/tasks`, { method: 'POST', body: '{}' });
    expect(post.status).toBe(404);
    expect(((await post.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const deeper = await fetch(`${stack.url}/tasks/img-big/files`);
    expect(((await deeper.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(deeper.status).toBe(404);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('docs/openapi.yaml', () => {
  test('documents exactly the routes and query parameters the handler serves, with schemas that compile', () => {
    expect(documentedRoutes()).toEqual([...API_ROUTE_KEYS].sort());
    for (const route of API_ROUTE_KEYS) {
      expect({ route, params: documentedQueryParameters(route) }).toEqual({
        route,
        params: [...QUERY_PARAMETERS[route]].sort(),
      });
    }
    expect(compileAllSchemas()).toEqual(expect.arrayContaining(['Task', 'TaskSummary', 'Event', 'Error']));
  });

  test('its error codes are codes of the one error table, with their statuses', () => {
    const codes: string[] = openapi.components.schemas.Error.properties.error.properties.code.enum;
    const statuses: Record<string, number> = errorStatus;
    for (const code of codes) expect(statuses[code]).toBeDefined();
    const documented = (route: ApiRouteKey) => {
      const [method, path] = route.split(' ');
      return Object.keys(openapi.paths[path!][method!.toLowerCase()].responses).map(Number);
    };
    for (const route of API_ROUTE_KEYS) {
      for (const code of ['invalid_query', 'store_unavailable', 'internal_error'])
        expect(documented(route)).toContain(statuses[code]);
    }
    expect(documented(ApiRoutes.task)).toEqual(expect.arrayContaining([404, 409]));
    expect(documented(ApiRoutes.events)).toEqual(expect.arrayContaining([404, 409]));
  });
});

// ---------------------------------------------------------------------------------------------------

describe('storage incidents', () => {
  test("a listing and a task carry their appKey's open incidents and switch-by, no other appKey's", async () => {
    // A failed upload of app-b's storage (no setting names one: the storage is the appKey), kept by the verifier's
    // store, then the stack's scheduled sweep opens its incident.
    const incidents = new IncidentStore(new TableReader(stack.tableClient(), stack.info.tableName));
    const at = now - 10 * MINUTE;
    const failure = { service: 'recording' as const, taskId: 'rec-1', fileName: 'a.m3u8', at, purgeAt: at + DAY };
    await incidents.recordFailure('app-b', 'appKey app-b', failure);
    await stack.runSchedules();
    const listed = await get('/tasks?appKey=app-b&limit=1');
    const ofAppB = listed.body.incidents.filter((i: StorageIncident) => i.appKey === 'app-b');
    expect(ofAppB).toEqual([
      expect.objectContaining({
        storage: 'appKey app-b',
        firstFailure: failure,
        filesAffected: 1,
        earliestPurgeAt: at + DAY,
        switchBy: at + DAY - STORAGE_CHANGE_DELAY_MS,
        resolvedAt: null,
      }),
    ]);
    expect((await get('/tasks/rec-1')).body.incidents).toEqual(listed.body.incidents);
    const ofAppA = (await get('/tasks?appKey=app-a&limit=1')).body.incidents as StorageIncident[];
    expect(ofAppA.filter((i) => i.appKey !== 'app-a')).toEqual([]);
    expect((await get('/tasks?limit=1')).body.incidents).toEqual(expect.arrayContaining(ofAppB));
  });
});
