// The read API handler on its own, against the task store on dynalite, for what the local stack cannot
// show: a task id shared by two appKeys (the current table keys tasks by id alone, so a store that would
// hold both is stood in by one that says so), a store that fails, a fault in this code, events that are
// not what API Gateway sends, and the log line.
import { Buffer } from 'node:buffer';
import { DeleteItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { DynamoTaskStore } from '../aws/dynamo/read/task-store.ts';
import { AmbiguousTaskError, type TaskReader } from '../domain/task-store.ts';
import type { Logger } from '../log.ts';
import { applyTasks, recordingTask } from '../../devkit/seeds/seed-tasks.ts';
import { toSqsRecord } from '../../devkit/seeds/sqs-record.ts';
import { processBatch } from '../worker/process-batch.ts';
import { dynamoClient, startDynamo, type LocalDynamo } from '../../devkit/local/dynamo.ts';
import { EventsIndex, Keys } from '../aws/dynamo/table/table.ts';
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

describe('times and cursors out of the date range', () => {
  const cursor = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

  test('a crafted cursor with a time past the date range (to = 1e300, 9e15): 400, not a RangeError', async () => {
    for (const to of [1e300, 9e15, -1e300]) {
      for (const q of [{}, { r: 'room-1' }]) {
        const crafted = cursor({ q: { ...q, from: 0, to }, p: [{ i: 0 }] });
        const res = await handleApiRequest(event(ApiRoutes.tasks, null, `cursor=${crafted}`), deps());
        expect({ to, q, status: res.statusCode, code: body(res).error?.code }).toEqual({
          to,
          q,
          status: 400,
          code: 'invalid_query',
        });
        expect(body(res).error.message).toContain('"cursor"');
      }
    }
    // A position inside a partition holds a time too.
    const inside = cursor({ q: { r: 'room-1', from: 0, to: 1000 }, p: [{ i: 0, s: 1e300, k: 'TASK#x', h: 'H#1:a' }] });
    expect((await handleApiRequest(event(ApiRoutes.tasks, null, `cursor=${inside}`), deps())).statusCode).toBe(400);
  });

  test('since or until of 40 digits, or before 1970: 400 invalid_query, not 503 store_unavailable', async () => {
    for (const [query, parameter] of [
      [`room=room-1&until=${'9'.repeat(40)}`, 'until'],
      [`until=${'1'.repeat(40)}`, 'until'],
      [`appKey=app-a&since=${'9'.repeat(17)}`, 'since'],
      ['session=s-1&since=1900-01-01', 'since'],
      ['since=99999w', 'since'],
    ] as const) {
      const res = await handleApiRequest(event(ApiRoutes.tasks, null, query), deps());
      expect({ query, status: res.statusCode, code: body(res).error?.code }).toEqual({
        query,
        status: 400,
        code: 'invalid_query',
      });
      expect(body(res).error.message).toContain(`"${parameter}"`);
      expect(res.headers['retry-after']).toBeUndefined();
    }
  });

  test('a room and an appKey of 1024 bytes each, over an index key together: an empty page, no query', async () => {
    // DynamoDB refuses a partition key over 2048 bytes (dynalite does not): no such query may be sent.
    const strict = new Proxy(dynamo.client, {
      get(target, prop, receiver) {
        if (prop !== 'send') return Reflect.get(target, prop, receiver);
        return (command: QueryCommand) => {
          const values = Object.values(command.input?.ExpressionAttributeValues ?? {});
          if (values.some((v) => v.S !== undefined && Buffer.byteLength(v.S, 'utf8') > 2048))
            return Promise.reject(
              Object.assign(new Error('Hash primary key values must be under 2048 bytes'), {
                name: 'ValidationException',
                $metadata: {},
              }),
            );
          return target.send(command);
        };
      },
    });
    const reader = new DynamoTaskStore({ client: strict, tableName: dynamo.tableName });
    for (const name of ['room', 'session']) {
      const query = `${name}=${'r'.repeat(1024)}&appKey=${'a'.repeat(1024)}`;
      const res = await handleApiRequest(event(ApiRoutes.tasks, null, query), deps(reader));
      expect({ name, status: res.statusCode, body: body(res) }).toEqual({
        name,
        status: 200,
        body: { tasks: [], nextCursor: null },
      });
    }
  });

  test("DynamoDB's ValidationException: 400 invalid_query, not a transient store_unavailable", async () => {
    const refused = Object.assign(new Error('One or more parameter values were invalid'), {
      name: 'ValidationException',
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
    });
    const validating: TaskReader = { ...sharedId, listTasksPage: () => Promise.reject(refused) };
    const res = await handleApiRequest(event(ApiRoutes.tasks, null, 'room=room-1'), deps(validating));
    expect(res.statusCode).toBe(400);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(body(res).error.code).toBe('invalid_query');
    expect(lines[0]).toMatchObject({ level: 'warn', fields: { code: 'invalid_query' } });
  });

  test('any cursor and any query values: never a 5xx (property)', async () => {
    const time = fc.oneof(
      fc.nat(),
      fc.integer({ min: -(2 ** 53), max: 2 ** 53 }),
      fc.constantFrom(0, 1e300, -1e300, 9e15, 8.64e15, 253402300800000, 1.5),
    );
    const filters = fc.record(
      { r: fc.constantFrom('room-1', 'r'), s: fc.constant('s-1'), a: fc.constantFrom('app-a', 'b') },
      { requiredKeys: [] },
    );
    const position = fc.oneof(
      fc.constant(null),
      fc.record({ i: fc.nat(2) }),
      fc.record({ i: fc.oneof(fc.nat(2), time), s: time, k: fc.constant('TASK#x'), h: fc.constant('H#1:a') }),
    );
    const tasksCursor = fc
      .record({
        q: fc.tuple(filters, time, time).map(([f, from, to]) => ({ ...f, from, to })),
        p: fc.oneof(fc.tuple(position), fc.array(position, { maxLength: 3 })),
      })
      .map(cursor);
    const otherCursor = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.json().map(cursor),
      fc.string().map((e) => cursor({ e })),
      fc.string().map((f) => cursor({ f })),
    );
    const value = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.bigInt({ min: 0n, max: 10n ** 60n }).map(String),
      time.map(String),
      fc.constantFrom('2h', '99999w', '9999-12-31', '10000-01-01', '1969-12-31T23:59:59Z', 'room-1', 'app-a'),
    );
    const names = fc.constantFrom('room', 'session', 'appKey', 'status', 'since', 'until', 'limit', 'user', 'service');
    const request = fc.oneof(
      fc.record({ route: fc.constant(ApiRoutes.tasks), cursor: tasksCursor, values: fc.constant({}) }),
      fc.record({
        route: fc.constantFrom(ApiRoutes.tasks, ApiRoutes.task, ApiRoutes.events),
        cursor: fc.option(otherCursor, { nil: undefined }),
        values: fc.dictionary(names, value, { maxKeys: 3 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ route, cursor: given, values }) => {
        const params = new URLSearchParams(values);
        if (given !== undefined) params.set(route === ApiRoutes.task ? 'filesCursor' : 'cursor', given);
        const id = route === ApiRoutes.tasks ? null : 'rec-shared';
        const res = await handleApiRequest(event(route, id, params.toString()), deps());
        if (res.statusCode >= 500) throw new Error(`${route}?${params} answered ${res.statusCode} ${res.body}`);
      }),
      { numRuns: 400 },
    );
  }, 120_000);
});

describe('a task whose oldest raw callbacks have left the table', () => {
  const DAY = 86_400_000;
  const old = recordingTask({
    id: 'rec-archived',
    appKey: 'app-a',
    roomId: 'room-2',
    sessionId: 's-2',
    userId: 'user-2',
    at: Date.now() - 10 * DAY,
    outcome: 'completed',
  });

  /** What DynamoDB's TTL does once the raw callbacks are past their retention: their items deleted. */
  async function expireRawCallbacks(appKey: string, id: string) {
    const found = await dynamo.client.send(
      new QueryCommand({
        TableName: dynamo.tableName,
        IndexName: EventsIndex.name,
        KeyConditionExpression: `${EventsIndex.pk} = :pk`,
        ExpressionAttributeValues: { ':pk': { S: Keys.eventsGsi(appKey, id) } },
      }),
    );
    expect(found.Items?.length).toBeGreaterThan(0);
    for (const item of found.Items ?? [])
      await dynamo.client.send(
        new DeleteItemCommand({ TableName: dynamo.tableName, Key: { pk: item.pk!, sk: item.sk! } }),
      );
  }

  test('its events name the archive and the query of its whole history, never an empty page alone', async () => {
    // Its own messages and requests (applyTasks would number them as those of the task seeded first).
    const records = old.bodies.map((body, i) => toSqsRecord({ service: old.service, body }, 1000 + i, Date.now()));
    expect((await processBatch({ Records: records }, { store, log })).batchItemFailures).toEqual([]);
    await expireRawCallbacks('app-a', 'rec-archived');
    const now = Date.now();
    const res = await handleApiRequest(event(ApiRoutes.events, 'rec-archived'), {
      ...deps(),
      now: () => now,
      rawRetentionDays: 7,
    });
    expect(res.statusCode).toBe(200);
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    expect(body(res)).toEqual({
      events: [],
      nextCursor: null,
      archived: {
        before: new Date(now - 7 * DAY).toISOString(),
        query:
          "SELECT received_at, type, file_name, outcome, verdict, body FROM raw WHERE service = 'recording' " +
          `AND dt BETWEEN '${day(now - 10 * DAY - 3_600_000)}' AND '${day(now)}' ` +
          "AND app_key = 'app-a' AND task_id = 'rec-archived' ORDER BY received_at",
      },
    });
  });

  test('a task within the retention, or a read API told none, answers its events alone', async () => {
    const recent = await handleApiRequest(event(ApiRoutes.events, 'rec-shared'), { ...deps(), rawRetentionDays: 7 });
    expect(body(recent).archived).toBeUndefined();
    expect(body(recent).events.length).toBeGreaterThan(0);
    const untold = await handleApiRequest(event(ApiRoutes.events, 'rec-archived'), deps());
    expect(body(untold)).toEqual({ events: [], nextCursor: null });
  });
});
