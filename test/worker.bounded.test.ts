// No item grows with the number of callbacks: a screenshot task with thousands of images keeps a header
// of constant size and one small item per image. (The 50,000-image run is in the soak suite.)
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { Keys } from '../lib/aws/dynamo/table.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { type Body, type ScreenshotTask, screenshotStartOrEnd, screenshotUpload } from '../lib/platform/bodies.ts';
import { UPLOAD_RETRY_MS } from '../lib/platform/delivery.ts';
import { SCREENSHOT_UPLOAD_FAILURES, SUCCESS } from '../lib/platform/failures.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { startDynamo, type LocalDynamo } from '../lib/local/dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

let db: LocalDynamo;
let restoreSink: ReturnType<typeof setLogSink>;
beforeAll(async () => {
  db = await startDynamo();
  restoreSink = setLogSink(() => undefined);
});
afterAll(async () => {
  setLogSink(restoreSink);
  await db.stop();
});

const IMAGE_ID = 'img-bounded';
const T0 = 1_763_798_400_000;

const TASK: ScreenshotTask = { appKey: 'demo-app', sessionId: 'sess', roomId: 'room', imageId: IMAGE_ID, extra: '' };

function imageUpload(i: number): Body[] {
  const ok = i % 10 !== 3; // every tenth image fails once, then succeeds 10 s later
  const at = T0 + i * 10_000 + 500;
  const fileName = `sess_room_user_stream_${T0 + i * 10_000}.jpg`;
  if (ok) return [screenshotUpload(TASK, at, fileName, null)];
  return [
    screenshotUpload(TASK, at, fileName, SCREENSHOT_UPLOAD_FAILURES[0]!),
    screenshotUpload(TASK, at + UPLOAD_RETRY_MS, fileName, null),
  ];
}

/** DynamoDB's item size: attribute names plus values, in bytes (close enough to compare growth). */
function itemBytes(item: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(item));
}

async function headerItem() {
  const res = await db.client.send(
    new GetItemCommand({
      TableName: db.tableName,
      Key: { pk: { S: Keys.taskPk(IMAGE_ID) }, sk: { S: Keys.headerSk } },
      ConsistentRead: true,
    }),
  );
  return res.Item!;
}

test('a screenshot task with 600 images: header size does not grow, counts exact', async () => {
  const store = new DynamoTaskStore({ client: db.client, tableName: db.tableName });
  const log = createLogger('test');
  const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
  const start = screenshotStartOrEnd(TASK, 1, T0, SUCCESS, config);
  await processBatch(sqsEvent([sqsRecord('screenshot', start)]), { store, log });

  const sizes: number[] = [];
  const IMAGES = 600;
  const CHECKPOINT = 100;
  for (let i = 0; i < IMAGES; i += 25) {
    const records = [];
    for (let j = i; j < i + 25; j++) records.push(...imageUpload(j).map((b) => sqsRecord('screenshot', b)));
    const res = await processBatch(sqsEvent(records), { store, log, concurrency: 5 });
    expect(res.batchItemFailures).toEqual([]);
    if (i + 25 === CHECKPOINT || i + 25 === IMAGES) sizes.push(itemBytes(await headerItem()));
  }
  // From 100 to 600 images only the digits of a few counters and timestamps change.
  expect(sizes[1]! - sizes[0]!).toBeLessThan(40);
  const header = await headerItem();
  expect(Object.keys(header.inflight?.M ?? {}).length).toBeLessThanOrEqual(4 + 5);

  const task = await store.getTask(IMAGE_ID);
  expect(task!.files).toHaveLength(IMAGES);
  expect(task!.eventCount).toBe(1 + IMAGES + IMAGES / 10);
  expect(task!.status).toBe('capturing');
  const retried = task!.files.filter((f) => f.attempts === 2);
  expect(retried).toHaveLength(IMAGES / 10);
  expect(retried.every((f) => f.upload === 'uploaded' && f.purgeAt === null)).toBe(true);
});
