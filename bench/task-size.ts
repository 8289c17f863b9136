// Part 4 (read API), whether a read costs the same whatever the size of the task: the read units and DynamoDB
// requests of a task's page of files, a page of its callbacks and a listing of tasks, on screenshot tasks of
// a few images and on tasks of many. The large tasks are written item by item in the store's own item shapes
// (the worker would take far longer to write them): a header that keeps its counts, one file per image with
// its upload key inline, one delivery (raw body, keyed by time) per callback.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handleApiRequest, type ApiDependencies } from '../lib/api/handle-request.ts';
import { ApiRoutes } from '../lib/api/routes.ts';
import { deliveryToItem, fileToItem, headerToItem, recordedValue } from '../lib/aws/dynamo/items.ts';
import { DynamoTaskReader } from '../lib/aws/dynamo/read-pages.ts';
import { toItem, type Item } from '../lib/aws/dynamo/table-client.ts';
import { Keys } from '../lib/aws/dynamo/table.ts';
import { applyToFile, applyToHeader, tallyCallback, type Tally } from '../lib/domain/task.ts';
import { startDynamo } from '../devkit/local/dynamo.ts';
import { DynamoTaskWriter } from '../lib/aws/dynamo/task-writer.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { event, silent } from './api-event.ts';
import { toSqsRecord } from '../devkit/seeds/sqs-record.ts';
import { callbacksOf, screenshotTask } from '../devkit/seeds/seed-tasks.ts';
import { chunks } from '../lib/in-parallel.ts';
import { summarize, type Summary } from './stats.ts';

/** Files a page of the task read asks for: a task of as many images is the baseline of that read. */
export const FILES_PAGE = 200;

export interface TaskSizeSizes {
  /** Images of the small tasks and of the large one (a page of files compares with a task of FILES_PAGE). */
  small: number;
  large: number;
  /** Tasks a listing reads, and the images of each of them in the large listing. */
  listed: number;
  listedLarge: number;
}

export const taskSizeSizes = {
  full: { small: 10, large: 100_000, listed: 100, listedLarge: 1_000 },
  quick: { small: 10, large: 2_000, listed: 20, listedLarge: 100 },
} satisfies Record<string, TaskSizeSizes>;

export interface ReadCost {
  /** Read units DynamoDB reported, in all. */
  rcu: number;
  requests: number;
}

export interface TaskSizeResult {
  sizes: TaskSizeSizes;
  reads: { label: string; request: string; small: ReadCost; large: ReadCost; ratio: number }[];
  /**
   * Capacity units (read and write) and requests per new image the worker applies, one image a batch; the heap
   * each batch leaves allocated (bytes, garbage collected before each).
   */
  worker: {
    images: number;
    small: ReadCost;
    large: ReadCost;
    ratio: number;
    heapPerBatch?: { small: Summary; large: Summary };
  };
}

/**
 * A full garbage collection, so that the heap a batch leaves is its own: `gc` exposed at run time (the bench
 * runs without --expose-gc).
 */
const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (() => void) | undefined;
  return () => gc?.();
})();

/** New images applied to each task for the worker's cost per image. */
const NEW_IMAGES = 20;

/** Counts the requests a client sends and the capacity units (read or write) DynamoDB reports for them. */
export function meter(client: DynamoDBClient): { take(): ReadCost } {
  let cost: ReadCost = { rcu: 0, requests: 0 };
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const consumed = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      for (const c of Array.isArray(consumed) ? consumed : consumed ? [consumed] : [])
        cost.rcu += (c as { CapacityUnits?: number }).CapacityUnits ?? 0;
      cost.requests += 1;
      return out;
    },
    { step: 'initialize', name: 'benchReadMeter' },
  );
  return {
    take() {
      const taken = cost;
      cost = { rcu: 0, requests: 0 };
      return taken;
    },
  };
}

/** A screenshot task of `images` uploaded images written as the store keeps it once counted. */
export async function writeTask(
  client: DynamoDBClient,
  tableName: string,
  id: string,
  appKey: string,
  images: number,
): Promise<void> {
  const seed = screenshotTask({ id, appKey, roomId: 'room-size', sessionId: 's-size', at: Date.now(), images });
  const callbacks = callbacksOf(seed);
  const items: Item[] = callbacks.map((cb, i) =>
    deliveryToItem(
      {
        callback: cb,
        raw: JSON.stringify(seed.bodies[i]),
        receivedAt: cb.timestamp,
        verdict: 'valid',
        mode: 'enforce',
        requestId: null,
        messageId: `m-${id}-${i}`,
        replayKey: null,
      },
      'E',
      Math.floor(Date.now() / 1000) + 86_400,
    ),
  );
  let header = null;
  let tally: Tally = { lastError: null, updatedAt: null };
  const keys: Record<string, string> = {};
  let files = 0;
  for (const cb of callbacks) {
    tally = tallyCallback(tally, cb);
    if (cb.type === 1 || cb.type === 3) {
      header = applyToHeader(header, cb);
      keys[cb.key] = recordedValue(cb, 'E');
      continue;
    }
    const file = applyToFile(null, cb);
    const key = { pk: Keys.taskPk(id), sk: Keys.fileSk(appKey, file.fileName) };
    items.push(fileToItem(key, file, tallyCallback(null, cb), { [cb.key]: recordedValue(cb, 'E') }, null));
    files += 1;
  }
  const headerItem = headerToItem({ pk: Keys.taskPk(id), sk: Keys.headerSk(appKey) }, header!, tally, keys, null);
  Object.assign(headerItem, {
    nFiles: files,
    nPending: 0,
    nUploaded: files,
    nFailed: 0,
    nEvents: callbacks.length,
    ver: 1,
  });
  items.push(headerItem);
  for (const chunk of chunks(items, 25)) {
    const puts = chunk.map((item) => ({ PutRequest: { Item: toItem(item) } }));
    await client.send(new BatchWriteItemCommand({ RequestItems: { [tableName]: puts } }));
  }
}

/**
 * `heap: false` leaves out the heap per batch (a full garbage collection before each batch, seconds in a
 * process with a large heap such as a test runner's): the units and requests are measured the same.
 */
export async function benchTaskSize(
  sizes: TaskSizeSizes,
  progress: (line: string) => void = () => {},
  { heap: measureHeap = true }: { heap?: boolean } = {},
): Promise<TaskSizeResult> {
  const dynamo = await startDynamo('bench-task-size');
  try {
    const { client, tableName } = dynamo;
    await writeTask(client, tableName, 'img-small', 'app-small', sizes.small);
    await writeTask(client, tableName, 'img-page', 'app-page', FILES_PAGE);
    await writeTask(client, tableName, 'img-large', 'app-large', sizes.large);
    for (let i = 0; i < sizes.listed; i++) {
      await writeTask(client, tableName, `img-ls-${i}`, 'app-list-small', sizes.small);
      await writeTask(client, tableName, `img-ll-${i}`, 'app-list-large', sizes.listedLarge);
    }
    progress(`task size: tasks of ${sizes.small} and ${sizes.large} images written`);
    const deps: ApiDependencies = { store: new DynamoTaskReader({ client, tableName }), log: silent, now: Date.now };
    const metered = meter(client);
    const cost = async (e: APIGatewayProxyEventV2): Promise<ReadCost> => {
      await handleApiRequest(e, deps);
      metered.take();
      const res = await handleApiRequest(e, deps);
      if (res.statusCode !== 200) throw new Error(`${e.rawPath}?${e.rawQueryString} answered ${res.statusCode}`);
      return metered.take();
    };
    const pair = async (
      label: string,
      request: string,
      small: APIGatewayProxyEventV2,
      large: APIGatewayProxyEventV2,
    ) => {
      const s = await cost(small);
      const l = await cost(large);
      return { label, request, small: s, large: l, ratio: s.rcu > 0 ? l.rcu / s.rcu : 0 };
    };
    const reads = [
      await pair(
        `a task with its first ${FILES_PAGE} files (small: a task of ${FILES_PAGE} images, a page as full)`,
        `GET /tasks/{id}?filesLimit=${FILES_PAGE}`,
        event(ApiRoutes.task, 'img-page', `filesLimit=${FILES_PAGE}`),
        event(ApiRoutes.task, 'img-large', `filesLimit=${FILES_PAGE}`),
      ),
      await pair(
        `a task's first 100 callbacks (small: a task of ${FILES_PAGE} images, a page as full)`,
        'GET /tasks/{id}/events?limit=100',
        event(ApiRoutes.events, 'img-page', 'limit=100'),
        event(ApiRoutes.events, 'img-large', 'limit=100'),
      ),
      await pair(
        `${sizes.listed} tasks of an appKey`,
        `GET /tasks?appKey=...&limit=${sizes.listed}`,
        event(ApiRoutes.tasks, null, `appKey=app-list-small&limit=${sizes.listed}`),
        event(ApiRoutes.tasks, null, `appKey=app-list-large&limit=${sizes.listed}`),
      ),
    ];
    // The worker: new images of each task, one a batch (as a screenshot task sends them), from an ordered queue.
    const heap: Record<'small' | 'large', number[]> = { small: [], large: [] };
    const perImage = async (id: string, appKey: string, side: 'small' | 'large'): Promise<ReadCost> => {
      const bodies = screenshotTask({
        id,
        appKey,
        roomId: 'room-size',
        sessionId: 's-size',
        at: Date.now() + 86_400_000,
        images: NEW_IMAGES,
      }).bodies.filter((b) => b.type === 4);
      const store = new DynamoTaskWriter({ client, tableName });
      const events = { publish: async () => undefined };
      metered.take();
      for (const [i, body] of bodies.entries()) {
        const record = toSqsRecord({ service: 'screenshot', body }, i, Date.now());
        record.attributes.SequenceNumber = String(10n ** 19n + BigInt(i));
        if (measureHeap) collectGarbage();
        const before = process.memoryUsage().heapUsed;
        const res = await processBatch({ Records: [record] }, { store, log: silent, events });
        if (measureHeap) heap[side].push(process.memoryUsage().heapUsed - before);
        if (res.batchItemFailures.length > 0) throw new Error(`task size: an image of ${id} failed to apply`);
      }
      const total = metered.take();
      return { rcu: total.rcu / bodies.length, requests: total.requests / bodies.length };
    };
    const small = await perImage('img-small', 'app-small', 'small');
    const large = await perImage('img-large', 'app-large', 'large');
    const worker = {
      images: NEW_IMAGES,
      small,
      large,
      ratio: small.rcu > 0 ? large.rcu / small.rcu : 0,
      ...(measureHeap ? { heapPerBatch: { small: summarize(heap.small), large: summarize(heap.large) } } : {}),
    };
    return { sizes, reads, worker };
  } finally {
    await dynamo.stop();
  }
}
