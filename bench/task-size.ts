// Part 4 (read API), whether a read costs the same whatever the size of the task: the read units and DynamoDB
// requests of a task's page of files, a page of its callbacks and a listing of tasks, on screenshot tasks of
// a few images and on tasks of many. The large tasks are written item by item in the store's own item shapes
// (the worker would take far longer to write them): a header that keeps its counts, one file per image with
// its upload key inline, one delivery (raw body, keyed by time) per callback. A recount of the large task, read a page
// at a time, against the same recount of the task read whole into memory at once: the heap each holds at its peak.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { handleApiRequest, type ApiDependencies } from '../lib/api/handle-request.ts';
import { ApiRoutes } from '../lib/api/routes.ts';
import { deliveryToItem, fileToItem, headerToItem, recordedValue } from '../lib/aws/dynamo/table/items.ts';
import { DynamoTaskReader } from '../lib/aws/dynamo/read/read-pages.ts';
import { toItem, type Item } from '../lib/aws/dynamo/table/table-client.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { applyToFile, applyToHeader, tallyCallback, type Tally } from '../lib/domain/task.ts';
import { startDynamo } from '../devkit/local/dynamo.ts';
import { DynamoTaskWriter } from '../lib/aws/dynamo/write/task-writer.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { event, silent } from './api-event.ts';
import { toSqsRecord } from '../devkit/seeds/sqs-record.ts';
import { callbacksOf, screenshotTask } from '../devkit/seeds/seed-tasks.ts';
import { chunks } from '../lib/in-parallel.ts';
import { ratios, summarize, type Summary } from './stats.ts';
import { TableReader, noCapacity } from '../lib/aws/dynamo/table/table-client.ts';
import { RECOUNT_PAGE_ITEMS, RecountFold, recountTask, taskItemsQuery } from '../lib/aws/dynamo/write/task-recount.ts';

/** Files a page of the task read asks for: a task of as many images is the baseline of that read. */
export const FILES_PAGE = 200;

export interface TaskSizeSizes {
  /** Images of the small tasks and of the large one (a page of files compares with a task of FILES_PAGE). */
  small: number;
  large: number;
  /** Tasks a listing reads, and the images of each of them in the large listing. */
  listed: number;
  listedLarge: number;
  /** Rounds of the recount's heap (paged on both tasks, whole on the large); absent: one. */
  recountRounds?: number;
}

export const taskSizeSizes = {
  full: { small: 10, large: 100_000, listed: 100, listedLarge: 1_000, recountRounds: 3 },
  quick: { small: 10, large: 2_000, listed: 20, listedLarge: 100, recountRounds: 1 },
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
  recount: RecountMemory;
}

/**
 * A recount (lib/aws/dynamo/write/task-recount.ts) read a page at a time on the task of FILES_PAGE images and on
 * the large one, and the large one read whole into memory at once then folded the same way (the baseline: what the
 * recount read before it was paged, less the task it then added up). The heap each holds at its peak, above the heap
 * before it (a full garbage collection first), per round; read units and requests of one recount of the large task.
 */
export interface RecountMemory {
  pageItems: number;
  /** Images of the small task (a page holds it whole) and of the large one. */
  images: { small: number; large: number };
  rounds: number;
  peakHeap?: { pagedSmall: Summary; pagedLarge: Summary; whole: Summary; wholeOverPaged: Summary };
  paged: ReadCost;
  whole: ReadCost;
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
    const rounds = sizes.recountRounds ?? 1;
    const recount = await recountMemory(client, tableName, sizes.large, rounds, measureHeap, metered);
    progress(`task size: the recount of the task of ${sizes.large} images, paged and whole`);
    return { sizes, reads, worker, recount };
  } finally {
    await dynamo.stop();
  }
}

/** Items between two notes of the heap a read holds. */
const HEAP_NOTE_EVERY = 2_000;

/**
 * A reader that notes the heap a read holds as it yields items, every HEAP_NOTE_EVERY and at the end of each Query:
 * its peak. Each note follows a full garbage collection, so that it counts what the read keeps, not what the
 * collector has yet to take back.
 */
class HeapWatch extends TableReader {
  peak = 0;
  collect = false;

  note(): void {
    if (this.collect) collectGarbage();
    const used = process.memoryUsage().heapUsed;
    if (used > this.peak) this.peak = used;
  }

  override async *queryAll(
    input: Parameters<TableReader['queryAll']>[0],
    cap?: Parameters<TableReader['queryAll']>[1],
  ): AsyncIterable<Item> {
    let n = 0;
    for await (const item of super.queryAll(input, cap)) {
      if (++n % HEAP_NOTE_EVERY === 0) this.note();
      yield item;
    }
    this.note();
  }
}

/** The recount as it read before it was paged: every item of the task in memory at once, then folded. */
async function recountAtOnce(reader: HeapWatch, appKey: string, id: string) {
  const items: Item[] = [];
  for await (const item of reader.queryAll(taskItemsQuery(appKey, id), noCapacity())) items.push(item);
  const [header, ...parts] = items;
  const fold = new RecountFold(header!, null);
  for (const item of parts) if (item.sk.startsWith(Keys.partsPrefix(appKey))) fold.add(item);
  reader.note();
  // Every span of the completion kept: it is found in this one pass.
  const { recount, done, completion } = fold.result();
  return { ...recount, done: completion && 'at' in completion ? completion.at : done };
}

async function recountMemory(
  client: DynamoDBClient,
  tableName: string,
  large: number,
  rounds: number,
  measureHeap: boolean,
  metered: { take(): ReadCost },
): Promise<RecountMemory> {
  const reader = new HeapWatch(client, tableName);
  reader.collect = measureHeap;
  const peak = async (run: () => Promise<unknown>): Promise<number> => {
    if (measureHeap) collectGarbage();
    const before = process.memoryUsage().heapUsed;
    reader.peak = before;
    await run();
    return reader.peak - before;
  };
  const paged = (id: string, appKey: string) => () => recountTask(reader, { appKey, id, through: null }, noCapacity());
  const heap = { pagedSmall: [] as number[], pagedLarge: [] as number[], whole: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    heap.pagedSmall.push(await peak(paged('img-page', 'app-page')));
    heap.pagedLarge.push(await peak(paged('img-large', 'app-large')));
    heap.whole.push(await peak(() => recountAtOnce(reader, 'app-large', 'img-large')));
  }
  // The two recount the same: the paged one is the whole one, held a page at a time.
  reader.collect = false;
  metered.take();
  const { header: _read, ...byPages } = (await recountTask(
    reader,
    { appKey: 'app-large', id: 'img-large', through: null },
    noCapacity(),
  ))!;
  const pagedCost = metered.take();
  const { header: _whole, ...atOnce } = await recountAtOnce(reader, 'app-large', 'img-large');
  const wholeCost = metered.take();
  if (JSON.stringify(byPages) !== JSON.stringify(atOnce))
    throw new Error('task size: the paged recount differs from the recount of the whole task');
  return {
    pageItems: RECOUNT_PAGE_ITEMS,
    images: { small: FILES_PAGE, large },
    rounds,
    ...(measureHeap
      ? {
          peakHeap: {
            pagedSmall: summarize(heap.pagedSmall),
            pagedLarge: summarize(heap.pagedLarge),
            whole: summarize(heap.whole),
            wholeOverPaged: summarize(ratios(heap.whole, heap.pagedLarge)),
          },
        }
      : {}),
    paged: pagedCost,
    whole: wholeCost,
  };
}
