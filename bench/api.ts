// Part 4, read API cost, against dynalite in-process. The time per request of `handleApiRequest` (route,
// parameters, store pages, JSON) with the read API's own reader, for each kind of request a backend
// makes, over a bare GetItem of the same task's header on the same client: the least any read of a task
// costs. Both sides alternate round by round and each round gives one ratio. The DynamoDB requests each
// API request sends are counted too.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handleApiRequest, type ApiDependencies } from '../lib/api/handle-request.ts';
import { ApiRoutes } from '../lib/api/routes.ts';
import { DynamoTaskReader } from '../lib/aws/dynamo/read/read-pages.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { startDynamo } from '../devkit/local/dynamo.ts';
import { applyTasks, recordingTask, screenshotTask, type SeedTask } from '../devkit/seeds/seed-tasks.ts';
import { ratios, summarize, type Summary } from './stats.ts';
import { event, silent } from './api-event.ts';
import { benchTaskSize, taskSizeSizes, type TaskSizeResult, type TaskSizeSizes } from './task-size.ts';
import { countRequests } from './worker.ts';

export interface ApiSizes {
  rounds: number;
  /** Requests per side per round. */
  perRound: number;
  /** Tasks in the table for the listings. */
  tasks: number;
  /** Images of the large screenshot task. */
  files: number;
  /** Tasks of a few images against tasks of many, read alike (./task-size.ts); absent, not measured. */
  taskSize?: TaskSizeSizes;
}

export const apiSizes = {
  full: { rounds: 10, perRound: 40, tasks: 250, files: 600, taskSize: taskSizeSizes.full },
  quick: { rounds: 2, perRound: 5, tasks: 30, files: 60, taskSize: taskSizeSizes.quick },
} satisfies Record<string, ApiSizes>;

export interface ApiRequestResult {
  /** What the request is, for people. */
  label: string;
  request: string;
  status: number;
  items: number;
  responseBytes: number;
  /** DynamoDB requests per API request, by operation. */
  dynamoRequests: Record<string, number>;
  /** Milliseconds per request, one value per round. */
  ms: Summary;
  /** request / bare GetItem, per round. */
  ratio: Summary;
}

export interface ApiResult {
  rounds: number;
  perRound: number;
  tasks: number;
  files: number;
  bareGetItemMs: Summary;
  requests: ApiRequestResult[];
  /** Read units and requests on a small task and a large one, when measured. */
  taskSize?: TaskSizeResult;
}

function seed(sizes: ApiSizes, now: number): SeedTask[] {
  const tasks: SeedTask[] = Array.from({ length: sizes.tasks }, (_, i) =>
    recordingTask({
      id: `rec-${i}`,
      appKey: `app-${i % 3}`,
      roomId: `room-${i % 7}`,
      sessionId: `s-${i % 25}`,
      userId: i % 4 === 0 ? '' : `user-${i % 6}`,
      at: now - 9 * 86_400_000 + i * 50 * 60_000,
      outcome: (['running', 'ended', 'failed', 'completed', 'upload_failed'] as const)[i % 5]!,
    }),
  );
  tasks.push(
    screenshotTask({
      id: 'img-big',
      appKey: 'app-0',
      roomId: 'room-big',
      sessionId: 's-big',
      at: now - 2 * 86_400_000,
      images: sizes.files,
      failEvery: 7,
      ended: true,
    }),
  );
  return tasks;
}

export async function benchApi(sizes: ApiSizes, progress: (line: string) => void = () => {}): Promise<ApiResult> {
  const dynamo = await startDynamo('bench-tasks');
  try {
    const writer = new DynamoTaskStore({ client: dynamo.client, tableName: dynamo.tableName });
    await applyTasks(writer, seed(sizes, Date.now()));
    progress(`api: ${sizes.tasks} tasks and one of ${sizes.files} images written`);
    const counts = countRequests(dynamo.client);
    const deps: ApiDependencies = {
      store: new DynamoTaskReader({ client: dynamo.client, tableName: dynamo.tableName }),
      log: silent,
      now: Date.now,
    };
    const cases: { label: string; request: string; event: APIGatewayProxyEventV2 }[] = [
      { label: 'a task with one file', request: 'GET /tasks/rec-3', event: event(ApiRoutes.task, 'rec-3') },
      {
        label: `the first page of files of a ${sizes.files}-image task`,
        request: 'GET /tasks/img-big',
        event: event(ApiRoutes.task, 'img-big'),
      },
      { label: 'the newest tasks (by day)', request: 'GET /tasks', event: event(ApiRoutes.tasks, null) },
      {
        label: "an appKey's tasks (six status partitions merged)",
        request: 'GET /tasks?appKey=app-1',
        event: event(ApiRoutes.tasks, null, 'appKey=app-1'),
      },
      {
        label: 'failed uploads of the last day, no index for the status alone',
        request: 'GET /tasks?status=upload_failed&since=1d',
        event: event(ApiRoutes.tasks, null, 'status=upload_failed&since=1d'),
      },
      {
        label: "the first page of a large task's callbacks",
        request: 'GET /tasks/img-big/events',
        event: event(ApiRoutes.events, 'img-big'),
      },
    ];
    const bareGet = () =>
      dynamo.client.send(
        new GetItemCommand({
          TableName: dynamo.tableName,
          Key: { pk: { S: 'TASK#rec-3' }, sk: { S: '#' } },
          ConsistentRead: true,
        }),
      );

    // Warm-up: connections, JIT, the first reads of each partition.
    for (const c of cases) await handleApiRequest(c.event, deps);
    for (let i = 0; i < 5; i++) await bareGet();

    const shape = new Map<string, { status: number; items: number; bytes: number; requests: Record<string, number> }>();
    for (const c of cases) {
      counts.clear();
      const res = await handleApiRequest(c.event, deps);
      const body = JSON.parse(res.body);
      const items = (body.tasks ?? body.events ?? body.task?.files ?? []).length;
      shape.set(c.request, {
        status: res.statusCode,
        items,
        bytes: Buffer.byteLength(res.body),
        requests: Object.fromEntries(counts),
      });
      if (res.statusCode !== 200) throw new Error(`${c.request} answered ${res.statusCode}: ${res.body}`);
    }

    const bareMs: number[] = [];
    const caseMs = new Map(cases.map((c) => [c.request, [] as number[]]));
    const timeBare = async () => {
      const started = performance.now();
      for (let i = 0; i < sizes.perRound; i++) await bareGet();
      bareMs.push((performance.now() - started) / sizes.perRound);
    };
    const timeCases = async () => {
      for (const c of cases) {
        const started = performance.now();
        for (let i = 0; i < sizes.perRound; i++) await handleApiRequest(c.event, deps);
        caseMs.get(c.request)!.push((performance.now() - started) / sizes.perRound);
      }
    };
    for (let round = 0; round < sizes.rounds; round++) {
      if (round % 2 === 0) {
        await timeBare();
        await timeCases();
      } else {
        await timeCases();
        await timeBare();
      }
    }
    progress(`api: ${sizes.rounds} rounds of ${sizes.perRound} requests per kind`);
    const taskSize = sizes.taskSize ? await benchTaskSize(sizes.taskSize, progress) : undefined;

    return {
      ...(taskSize ? { taskSize } : {}),
      rounds: sizes.rounds,
      perRound: sizes.perRound,
      tasks: sizes.tasks,
      files: sizes.files,
      bareGetItemMs: summarize(bareMs),
      requests: cases.map((c) => {
        const s = shape.get(c.request)!;
        return {
          label: c.label,
          request: c.request,
          status: s.status,
          items: s.items,
          responseBytes: s.bytes,
          dynamoRequests: s.requests,
          ms: summarize(caseMs.get(c.request)!),
          ratio: summarize(ratios(caseMs.get(c.request)!, bareMs)),
        };
      }),
    };
  } finally {
    await dynamo.stop();
  }
}
