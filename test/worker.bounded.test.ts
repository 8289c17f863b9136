// No item grows with the number of callbacks: a screenshot task with hundreds of images keeps one small item
// per image and a header under 1 KB that each batch writes once, whatever the batch holds.
// (The 50,000-image run is in the soak suite.)
import { ScanCommand, type AttributeValue, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { itemSize } from 'dynalite/db/index.js';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { createLogger } from '../lib/log.ts';
import { type Body, type ScreenshotTask, screenshotStartOrEnd, screenshotUpload } from '../lib/platform/bodies.ts';
import { UPLOAD_RETRY_MS } from '../lib/platform/delivery.ts';
import { SCREENSHOT_UPLOAD_FAILURES, SUCCESS } from '../lib/platform/failures.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sized } from './support/size.ts';

const local = useQuietDynamo();

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

/** Every item of the task, with its size as DynamoDB counts it. */
async function taskItems(): Promise<{ sk: string; bytes: number; ver: number }[]> {
  const items: { sk: string; bytes: number; ver: number }[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page: ScanCommandOutput = await local.db.client.send(
      new ScanCommand({ TableName: local.db.tableName, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) {
      if (item.pk?.S !== Keys.taskPk(IMAGE_ID)) continue;
      items.push({ sk: item.sk!.S!, bytes: itemSize(item), ver: Number(item.ver?.N ?? 0) });
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

// 200 images 8 a batch in `npm test`, as many batches as 600 images 25 a batch make (those under `npm run soak
// -- --sized-tests`; the 50,000-image run is the soak's own): a header that grew by batch would show as much.
const IMAGES = sized(200, 600);
const PER_BATCH = sized(8, 25);

const title = `a screenshot task with ${IMAGES} images: one header write per batch, every item small, counts exact`;
test(title, async () => {
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const log = createLogger('test');
  const config = { trigger: 1, slicesSec: 10, renderMode: 0, picResolution: '640x360' };
  const start = screenshotStartOrEnd(TASK, 1, T0, SUCCESS, config);
  await processBatch(sqsEvent([sqsRecord('screenshot', start)]), { store, log });
  const headerSk = Keys.headerSk('demo-app');
  const headerAfterStart = (await taskItems()).find((i) => i.sk === headerSk)!;

  let batches = 0;
  for (let i = 0; i < IMAGES; i += PER_BATCH) {
    batches += 1;
    const records = [];
    for (let j = i; j < Math.min(i + PER_BATCH, IMAGES); j++)
      records.push(...imageUpload(j).map((b) => sqsRecord('screenshot', b)));
    const res = await processBatch(sqsEvent(records), { store, log, concurrency: 5 });
    expect(res.batchItemFailures).toEqual([]);
  }
  const items = await taskItems();
  // One count update per batch, whatever number of uploads it held: 1.1 uploads an image.
  expect(items.find((i) => i.sk === headerSk)!.ver).toBe(headerAfterStart.ver + batches);
  // One item per image besides the header, each under the 1 KB a write unit covers.
  expect(items).toHaveLength(1 + IMAGES);
  expect(Math.max(...items.map((i) => i.bytes))).toBeLessThan(1024);

  const task = await store.getTask(IMAGE_ID);
  expect(task!.files).toHaveLength(IMAGES);
  expect(task!.eventCount).toBe(1 + IMAGES + IMAGES / 10);
  expect(task!.status).toBe('capturing');
  const retried = task!.files.filter((f) => f.attempts === 2);
  expect(retried).toHaveLength(IMAGES / 10);
  expect(retried.every((f) => f.upload === 'uploaded' && f.purgeAt === null)).toBe(true);
});
