// A task's counts recounted from its items: what the worker does when a message is given up after a partial
// write (no batch will ever charge what it wrote), and what `callbacks recount` does for operators.
import { readFileSync } from 'node:fs';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { recountTasks } from '../lib/aws/dynamo/write/recount.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import type { TaskStore } from '../lib/domain/task-store.ts';
import type { BatchWriter } from '../lib/domain/batch.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { withApply } from './reliability/support/runs.ts';
import { mustParse } from './support/lifecycles.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { RECOUNT_PAGE_ITEMS } from '../lib/aws/dynamo/write/task-recount.ts';
import { dynamoClient } from '../devkit/local/dynamo.ts';
import { writeTask } from '../bench/task-size.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const read = (name: string) => JSON.parse(readFileSync(new URL(`fixtures/${name}`, import.meta.url), 'utf8'));
let run = 0;

/** A screenshot task's start and two images, one uploaded twice (the retry after a failure). */
function screenshotTask() {
  const imageId = `img-recount-${++run}`;
  const start = { ...read('screenshot-1-start.json'), imageId };
  const shot = read('screenshot-4-upload-ok.json');
  const image = (i: number, dt = 0) => ({
    ...shot,
    imageId,
    timestamp: shot.timestamp + i * 1000 + dt,
    output: { ...shot.output, fileName: `image-${i}.jpg` },
  });
  return { imageId, start, image };
}

const headerKey = (id: string, appKey: string) => ({
  pk: { S: Keys.taskPk(id) },
  sk: { S: Keys.headerSk(appKey) },
});

test('a message given up at its last receive after a write: the worker recounts its task through it', async () => {
  const { imageId, start, image } = screenshotTask();
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const seq = (n: number) => String(10n ** 19n + BigInt(n));
  const first = await processBatch(sqsEvent([sqsRecord('screenshot', start, { sequenceNumber: seq(1) })]), {
    store,
    log,
  });
  expect(first.batchItemFailures).toEqual([]);
  // The image is written, then the worker fails it (a time-out after the write), at its fifth receive.
  const failing = withApply(store, async (apply, input) => {
    await apply(input);
    throw Object.assign(new Error('timed out after the write'), { name: 'TimeoutError' });
  }) as TaskStore & BatchWriter;
  const given = await processBatch(
    sqsEvent([sqsRecord('screenshot', image(0), { sequenceNumber: seq(2), receiveCount: 5 })]),
    { store: failing, log, maxReceiveCount: 5 },
  );
  expect(given.batchItemFailures).toHaveLength(1);
  // Later messages of the task go on from there: the given-up image is counted, once.
  const later = await processBatch(
    sqsEvent([
      sqsRecord('screenshot', image(1), { sequenceNumber: seq(3) }),
      sqsRecord('screenshot', image(0), { sequenceNumber: seq(4) }),
    ]),
    { store, log },
  );
  expect(later.outcomes).toEqual(['applied', 'duplicate']);
  const task = await store.getTask(imageId);
  expect(task).toEqual(reduceTask([start, image(0), image(1)].map((b) => mustParse('screenshot', b))));
  expect(task!.eventCount).toBe(3);
  const header = (
    await local.db.client.send(
      new GetItemCommand({ TableName: local.db.tableName, Key: headerKey(imageId, start.appKey) }),
    )
  ).Item!;
  expect(Number(header.nUploaded?.N)).toBe(2);
  expect(header.seq?.S).toBe(seq(4).padStart(40, '0'));
});

test('recount: counts written wrong are put right from the items, for one task or all, saying which', async () => {
  const { imageId, start, image } = screenshotTask();
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const bodies = [start, image(0), image(1), image(2)];
  expect(
    (await processBatch(sqsEvent(bodies.map((b) => sqsRecord('screenshot', b))), { store, log })).outcomes,
  ).toEqual(['applied', 'applied', 'applied', 'applied']);
  const expected = reduceTask(bodies.map((b) => mustParse('screenshot', b)));
  expect(await store.getTask(imageId)).toEqual(expected);
  const corrupt = () =>
    local.db.client.send(
      new UpdateItemCommand({
        TableName: local.db.tableName,
        Key: headerKey(imageId, start.appKey),
        UpdateExpression: 'SET nFiles = :n, nUploaded = :n, nEvents = :e',
        ExpressionAttributeValues: { ':n': { N: '7' }, ':e': { N: '1' } },
      }),
    );
  await corrupt();
  expect((await store.getTask(imageId))?.eventCount).toBe(1);
  // What it changed, count by count: before and after.
  const right = { files: 3, pending: 0, uploaded: 3, failed: 0, events: 4, lost: 0 };
  expect(await recountTasks({ client: local.db.client, tableName: local.db.tableName, task: { id: imageId } })).toEqual(
    {
      recounted: 1,
      failed: [],
      corrected: [
        { taskId: imageId, appKey: start.appKey, before: { ...right, files: 7, uploaded: 7, events: 1 }, after: right },
      ],
    },
  );
  expect(await store.getTask(imageId)).toEqual(expected);
  // Counted right: it says so, with the counts, and corrects nothing.
  expect(await recountTasks({ client: local.db.client, tableName: local.db.tableName, task: { id: imageId } })).toEqual(
    { recounted: 1, failed: [], corrected: [], right: { taskId: imageId, appKey: start.appKey, counts: right } },
  );

  await corrupt();
  const all = await recountTasks({ client: local.db.client, tableName: local.db.tableName });
  expect(all.failed).toEqual([]);
  expect(all.recounted).toBeGreaterThanOrEqual(2);
  expect(all.corrected.map((k) => k.taskId)).toEqual([imageId]);
  expect(await store.getTask(imageId)).toEqual(expected);
  // An id that names no task recounts nothing.
  expect(
    await recountTasks({ client: local.db.client, tableName: local.db.tableName, task: { id: 'no-such-task' } }),
  ).toEqual({ recounted: 0, failed: [], corrected: [] });
});

test('a recount read its whole task into memory: it reads a page at a time, to the same counts', async () => {
  const id = `img-recount-pages-${++run}`;
  const images = 1_200;
  await writeTask(local.db.client, local.db.tableName, id, 'app-pages', images);
  // Counts written wrong: the recount finds them again off the files.
  await local.db.client.send(
    new UpdateItemCommand({
      TableName: local.db.tableName,
      Key: headerKey(id, 'app-pages'),
      UpdateExpression: 'SET nFiles = :n, nUploaded = :n',
      ExpressionAttributeValues: { ':n': { N: '3' } },
    }),
  );
  const queries: { Limit?: number }[] = [];
  const client = dynamoClient(local.db.endpoint);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') queries.push(args.input as { Limit?: number });
      return next(args);
    },
    { step: 'initialize', name: 'recordQueries' },
  );
  const recounted = await recountTasks({ client, tableName: local.db.tableName, task: { id } });
  client.destroy();
  expect(recounted).toMatchObject({ recounted: 1, failed: [] });
  // The task's header found (one Query of its headers), then the task read by pages: as many as it fills.
  const pages = queries.filter((q) => q.Limit !== undefined);
  expect(pages.length).toBeGreaterThanOrEqual(Math.ceil((images + 1) / RECOUNT_PAGE_ITEMS));
  for (const q of pages) expect(q.Limit).toBe(RECOUNT_PAGE_ITEMS);
  const header = (
    await local.db.client.send(new GetItemCommand({ TableName: local.db.tableName, Key: headerKey(id, 'app-pages') }))
  ).Item!;
  expect([header.nFiles?.N, header.nUploaded?.N, header.nPending?.N]).toEqual([String(images), String(images), '0']);
});
