// The read API handler on its own, against the task store on dynalite, for what the local stack cannot
// show: a task id shared by two appKeys (the current table keys tasks by id alone, so a store that would
// hold both is stood in by one that says so), a store that fails, a fault in this code, events that are
// not what API Gateway sends, and the log line.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { DynamoTaskStore } from '../aws/dynamo/task-store.ts';
import { AmbiguousTaskError, type TaskReader } from '../domain/task-store.ts';
import type { Logger } from '../log.ts';
import { applyTasks, recordingTask } from '../../bench/seed-tasks.ts';
import { dynamoClient, startDynamo, type LocalDynamo } from '../local/dynamo.ts';
import { handleApiRequest, type ApiDependencies } from './handle-request.ts';
import { ApiRoutes } from './routes.ts';

let dynamo: LocalDynamo;
let store: DynamoTaskStore;
const lines: { level: string; event: string; fields: Record<string, unknown> }[] = [];
const log: Logger = {
  debug: (event, fields = {}) => lines.push({ level: 'debug', event, fields }),
  info: (event, fields = {}) => lines.push({ level: 'info', event, fields }),
  warn: (event, fields = {}) => lines.push({ level: 'warn', event, fields }),
  error: (event, fields = {}) => lines.push({ level: 'error', event, fields }),
};

const task = recordingTask({
  id: 'rec-shared',
  appKey: 'app-a',
  roomId: 'room-1',
  sessionId: 's-1',
  userId: 'user-1',
  at: Date.now() - 3_600_000,
  outcome: 'completed',
});

beforeAll(async () => {
  dynamo = await startDynamo();
  store = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName });
  await applyTasks(store, [task]);
});
afterAll(() => dynamo.stop());
beforeEach(() => {
  lines.length = 0;
});

function event(routeKey: string, id: string | null, rawQueryString = ''): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey,
    rawPath: id === null ? '/tasks' : `/tasks/${id}`,
    rawQueryString,
    headers: {},
    ...(id === null ? {} : { pathParameters: { id } }),
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method: 'GET', path: '/tasks', protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'test' },
      requestId: 'req-1',
      routeKey,
      stage: '$default',
      time: '',
      timeEpoch: 0,
      authorizer: { iam: { userArn: 'arn:aws:iam::123456789012:role/app-server' } },
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  };
}

const deps = (reader: TaskReader = store): ApiDependencies => ({ store: reader, log, now: Date.now });
const body = (res: { body: string }) => JSON.parse(res.body);

/** The real store, except that it holds `rec-shared` for a second appKey too, as a table keyed by appKey would. */
const sharedId: TaskReader = {
  getTaskPage: (ref, page) =>
    ref.id === 'rec-shared' && ref.appKey === undefined
      ? Promise.reject(new AmbiguousTaskError(ref.id, ['app-a', 'app-b']))
      : store.getTaskPage(ref, page),
  listEventsPage: (ref, page) =>
    ref.id === 'rec-shared' && ref.appKey === undefined
      ? Promise.reject(new AmbiguousTaskError(ref.id, ['app-a', 'app-b']))
      : store.listEventsPage(ref, page),
  listTasksPage: (query, page) => store.listTasksPage(query, page),
};

test('an id used by several appKeys: 409 ambiguous_id naming them, until appKey says which', async () => {
  for (const route of [ApiRoutes.task, ApiRoutes.events]) {
    const res = await handleApiRequest(event(route, 'rec-shared'), deps(sharedId));
    expect(res.statusCode).toBe(409);
    expect(body(res)).toEqual({
      error: {
        code: 'ambiguous_id',
        message:
          'Task id rec-shared is used by several appKeys (app-a, app-b); name one with the appKey query parameter.',
      },
    });
    const named = await handleApiRequest(event(route, 'rec-shared', 'appKey=app-a'), deps(sharedId));
    expect(named.statusCode).toBe(200);
  }
});

test(
  'a store that cannot be reached: 503 store_unavailable with Retry-After, a warning logged, never a ' + 'throw',
  async () => {
    const unreachable = dynamoClient('http://127.0.0.1:9', 1);
    const reader = new DynamoTaskStore({ client: unreachable, tableName: dynamo.tableName });
    try {
      for (const [route, id] of [
        [ApiRoutes.task, 'rec-shared'],
        [ApiRoutes.tasks, null],
        [ApiRoutes.events, 'rec-shared'],
      ] as const) {
        const res = await handleApiRequest(event(route, id), deps(reader));
        expect(res.statusCode).toBe(503);
        expect(res.headers['retry-after']).toBe('1');
        expect(body(res).error.code).toBe('store_unavailable');
      }
    } finally {
      unreachable.destroy();
    }
    expect(lines.map((l) => [l.level, l.event, l.fields.code])).toEqual([
      ['warn', 'api_request', 'store_unavailable'],
      ['warn', 'api_request', 'store_unavailable'],
      ['warn', 'api_request', 'store_unavailable'],
    ]);
  },
);

test('a fault in this code: 503 internal_error, logged as an error with its reason', async () => {
  const broken: TaskReader = { ...sharedId, listTasksPage: () => Promise.reject(new TypeError('x is not a function')) };
  const res = await handleApiRequest(event(ApiRoutes.tasks, null), deps(broken));
  expect(res.statusCode).toBe(503);
  expect(body(res).error.code).toBe('internal_error');
  expect(lines[0]).toMatchObject({
    level: 'error',
    event: 'api_request',
    fields: { code: 'internal_error', reason: 'TypeError: x is not a function' },
  });
});

test('events API Gateway would never send are answered, not thrown', async () => {
  const odd: unknown[] = [
    null,
    {},
    { routeKey: '$default' },
    { routeKey: 'GET /tasks/{id}' },
    { routeKey: 'GET /tasks', rawQueryString: '%' },
    { routeKey: 'GET /tasks/{id}', pathParameters: { id: '' } },
  ];
  for (const e of odd) {
    const res = await handleApiRequest(e as APIGatewayProxyEventV2, deps());
    expect([400, 404]).toContain(res.statusCode);
    expect(body(res).error.code).toEqual(expect.any(String));
  }
  expect((await handleApiRequest({ routeKey: '$default' } as APIGatewayProxyEventV2, deps())).statusCode).toBe(404);
});

test('one info line per request: route, caller, task id, items and time; no query values', async () => {
  const res = await handleApiRequest(event(ApiRoutes.task, 'rec-shared', 'appKey=app-a&filesLimit=1'), deps());
  expect(res.statusCode).toBe(200);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toEqual({
    level: 'info',
    event: 'api_request',
    fields: {
      route: 'GET /tasks/{id}',
      requestId: 'req-1',
      caller: 'arn:aws:iam::123456789012:role/app-server',
      id: 'rec-shared',
      items: 1,
      more: false,
      status: 200,
      latencyMs: expect.any(Number),
    },
  });
  expect(JSON.stringify(lines)).not.toContain('app-a');
});

test('a store that does not answer in time: 503 store_unavailable at the deadline', async () => {
  const stuck: TaskReader = { ...sharedId, getTaskPage: () => new Promise(() => {}) };
  const res = await handleApiRequest(event(ApiRoutes.task, 'rec-shared'), { ...deps(stuck), deadlineMs: 50 });
  expect(res.statusCode).toBe(503);
  expect(body(res).error.code).toBe('store_unavailable');
  expect(lines[0]!.fields.reason).toBe('TimeoutError: no answer from the task store within 50 ms');
});
