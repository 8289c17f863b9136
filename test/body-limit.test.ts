// The largest body the ingest can be configured to accept (MAX_BODY_BYTES_LIMIT) still fits every place a copy
// of it goes, in the worst case the code allows: the SQS message with its attributes, and every DynamoDB item
// the real worker writes from such bodies (task header, raw callback archive, quarantine entry), sized as
// DynamoDB counts them.
import { Buffer } from 'node:buffer';
import { ScanCommand, type AttributeValue, type ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { itemSize } from 'dynalite/db/index.js';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { clipText } from '../lib/domain/header-text.ts';
import { MAX_BODY_BYTES_LIMIT } from '../lib/ingest/config.ts';
import { MAX_HELD_SIGNATURE_CHARS } from '../lib/signature/verify.ts';
import { createLogger } from '../lib/log.ts';
import type { Body, ScreenshotTask } from '../lib/platform/bodies.ts';
import { screenshotStartOrEnd, screenshotUpload } from '../lib/platform/bodies.ts';
import { SUCCESS } from '../lib/platform/failures.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { SQS_MAX_MESSAGE_BYTES } from '../devkit/local/service-limits.ts';

const local = useQuietDynamo();

/** DynamoDB's limit on an item. */
const DYNAMO_MAX_ITEM_BYTES = 400 * 1024;
const T0 = 1_763_798_400_000;
const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** The body with `fill` set to the text (or to a list of 9s, the densest map value) that makes it `size` bytes. */
function padded(body: Body, fill: (room: number) => unknown, set: (body: Body, value: unknown) => Body): string {
  const room = MAX_BODY_BYTES_LIMIT - bytes(JSON.stringify(set(body, fill(0))));
  const text = JSON.stringify(set(body, fill(room)));
  expect(bytes(text)).toBe(MAX_BODY_BYTES_LIMIT);
  return text;
}

const filler = (room: number) => 'x'.repeat(room);

test('a body of MAX_BODY_BYTES_LIMIT whose appKey fills it, with the longest held signature, fits SQS', () => {
  const raw = padded({ timestamp: T0, type: 3, appKey: '', imageId: 'img', code: 200 }, filler, (b, v) => ({
    ...b,
    appKey: v,
  }));
  const appKey = JSON.parse(raw).appKey as string;
  const nonce = 'n'.repeat(MAX_HELD_SIGNATURE_CHARS - JSON.stringify({ nonce: '', from: { nonce: 'header' } }).length);
  const heldSignature = { nonce, from: { nonce: 'header' as const } };
  expect(JSON.stringify(heldSignature)).toHaveLength(MAX_HELD_SIGNATURE_CHARS);
  const attributes = messageAttributes({
    body: raw,
    service: 'screenshot',
    appKey,
    receivedAt: T0,
    requestId: 'r'.repeat(64),
    verdict: 'unknown_app_key',
    mode: 'report',
    replayKey: 'k'.repeat(64),
    heldSignature,
  });
  // SQS counts each attribute's name, data type and value.
  const size =
    bytes(raw) +
    Object.entries(attributes).reduce(
      (sum, [name, a]) => sum + bytes(name) + bytes(a.DataType) + bytes(a.StringValue),
      0,
    );
  expect(size).toBeGreaterThan(2 * MAX_BODY_BYTES_LIMIT);
  expect(size).toBeLessThanOrEqual(SQS_MAX_MESSAGE_BYTES);
});

test('bodies of MAX_BODY_BYTES_LIMIT make items under 400 KB: a header joining their facts, clipped, ' +
  'the raw callbacks, a quarantine entry', async () => {
  const task: ScreenshotTask = { appKey: 'app', sessionId: 'sess', roomId: 'room', imageId: 'img-limit', extra: '' };
  // The identity of the earliest callback (an upload, before any start): its `extra` fills its body.
  const identity = padded(screenshotUpload(task, T0, `sess_room_u_s_${T0}.jpg`, null), filler, (b, v) => ({
    ...b,
    extra: v,
  }));
  // The config of the first end: a list of single digits, which DynamoDB stores in 1.5 times its JSON size.
  const config = padded(
    screenshotStartOrEnd(task, 3, T0 + 1000, SUCCESS, {}),
    // n digits take 2n - 1 bytes (the commas between them).
    (room) => {
      const digits = Math.floor((room + 1) / 2);
      return { digits: Array(digits).fill(9), pad: 'x'.repeat(room - Math.max(0, 2 * digits - 1)) };
    },
    (b, v) => ({ ...b, config: v }),
  );
  // The error message of a later end that failed: the header's last error.
  const error = padded(screenshotStartOrEnd(task, 3, T0 + 2000, { code: 500, message: '' }, {}), filler, (b, v) => ({
    ...b,
    errorMessage: v,
  }));
  // A body whose appKey fills it: no key can hold it, so it goes to the quarantine with its appKey and task id.
  const unstorable = padded(
    screenshotStartOrEnd({ ...task, appKey: '' }, 3, T0 + 3000, SUCCESS, {}),
    filler,
    (b, v) => ({ ...b, appKey: v }),
  );

  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const log = createLogger('test');
  for (const raw of [identity, config, error, unstorable]) {
    const result = await processBatch(sqsEvent([sqsRecord('screenshot', raw)]), { store, log });
    expect(result.batchItemFailures).toEqual([]);
  }
  const stored = await store.getTask(task.imageId);
  expect(stored!.eventCount).toBe(3);
  // The header keeps long values clipped; the raw callbacks keep them whole.
  expect(stored!.extra).toBe(clipText(JSON.parse(identity).extra));
  expect(stored!.lastError?.message).toBe(clipText(JSON.parse(error).errorMessage));

  const items: { pk: string; sk: string; bytes: number }[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page: ScanCommandOutput = await local.db.client.send(
      new ScanCommand({ TableName: local.db.tableName, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) items.push({ pk: item.pk!.S!, sk: item.sk!.S!, bytes: itemSize(item) });
    start = page.LastEvaluatedKey;
  } while (start);
  const header = items.find((i) => i.pk === Keys.taskPk(task.imageId) && i.sk === Keys.headerSk(task.appKey))!;
  // However large the bodies, the header holds their facts clipped.
  expect(header.bytes).toBeLessThan(2048);
  // The largest items are the copies of whole bodies: the quarantine entry of the one whose appKey fills it.
  const quarantined = items.filter((i) => i.bytes > 2 * MAX_BODY_BYTES_LIMIT);
  expect(quarantined).toHaveLength(1);
  expect(items.filter((i) => i.bytes > DYNAMO_MAX_ITEM_BYTES)).toEqual([]);
}, 60_000);
