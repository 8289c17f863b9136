// A slice and the upload of the same file in one batch share one put of the file item. When DynamoDB refuses that
// put (ProvisionedThroughputExceededException) at the records' last receive (ApproximateReceiveCount =
// maxReceiveCount), the upload is given up to the dead-letter queue, and the slice, of which nothing was stored,
// must go with it: reported done, once the dead letter is redriven as `callbacks dlq redrive` sends it, the task
// would lack the slice (its eventCount one short, its file's size null). docs/contract.md §4: the task is the fold
// of its distinct callbacks; and §6: a record that keeps failing is set aside alone, the others applied (and stored,
// counted, published), counts right after any death at any receive. At an earlier receive both records fail and
// come back, and the task is whole: those receives are the control.
import { readFileSync } from 'node:fs';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { firstFilePutThrottled } from './support/faulty-client.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { redriven, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let sequence = 10n ** 19n + 9_200_000n;
async function sliceAndUploadAt(count: number) {
  const id = `shared-put-${count}`;
  const start: Record<string, any> = { ...fixture('recording-1-start-mix'), recordId: id };
  const at = start.timestamp as number;
  const base = {
    appKey: start.appKey,
    recordId: id,
    roomId: start.roomId,
    sessionId: start.sessionId,
    userId: '',
    mode: 3,
  };
  const file = `${id}.mp4`;
  const slice = {
    ...base,
    type: 2,
    timestamp: at + 60_000,
    code: 200,
    errorMessage: 'success',
    output: { fileName: file, fileSize: 1000 },
  };
  const upload = {
    ...base,
    type: 4,
    timestamp: at + 61_000,
    code: 200,
    errorMessage: 'success',
    output: { fileName: file, fileUrl: `https://s/${file}` },
  };
  const groupId = `g-${id}`;
  const rec = (b: object) => sqsRecord('recording', JSON.stringify(b), { groupId, sequenceNumber: String(++sequence) });
  const plain = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  expect(
    (await processBatch(sqsEvent([rec(start)]), { store: plain, log, maxReceiveCount: 3 })).batchItemFailures,
  ).toEqual([]);
  const faulty = firstFilePutThrottled(local.db.client, { landed: false });
  const store = new DynamoTaskStore({ client: faulty.client, tableName: local.db.tableName });
  const records = [rec(slice), rec(upload)].map((r) => ({
    ...r,
    attributes: { ...r.attributes, ApproximateReceiveCount: String(count) },
  }));
  const res = await processBatch(sqsEvent(records), { store, log, maxReceiveCount: 3 });
  expect(faulty.fired()).toBe(true);
  const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
  // What failed comes back (after its last receive, from the dead-letter queue, redriven) to the same warm worker.
  const again = records.filter((r) => failed.has(r.messageId)).map((r) => redriven(r, String(++sequence)));
  expect((await processBatch(sqsEvent(again), { store, log, maxReceiveCount: 3 })).batchItemFailures).toEqual([]);
  const task = (await plain.getTask(id))!;
  // The fold of start, slice and upload: three distinct callbacks, the slice's size, the upload's outcome.
  expect(task.eventCount).toBe(3);
  expect(task.files.map((f) => [f.fileName, f.size, f.upload, f.attempts])).toEqual([[file, 1000, 'uploaded', 1]]);
}

test.each([1, 2])('a slice and its upload refused at receive %i of 3 both come back, and the task is whole', (n) =>
  sliceAndUploadAt(n),
);

test('a slice sharing its file put with an upload, refused at their last receive, is not lost', () =>
  sliceAndUploadAt(3));
