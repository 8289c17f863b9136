// An end and the failed upload of its file share one put of the file item. When that put lands but its answer is
// lost (throttled on the way back), SQS FIFO returns the whole group; if the end comes back in a batch without the
// upload, the end is counted but its file is not: the header says 0 files for a task whose end names one, and an
// event of a later sequence shows the task `ended` with 0 files after one that showed it `upload_failed` with 1.
// docs/events.md: the header's counts trail the items by at most the batch being applied, and a subscriber keeps the
// task of the event with the greatest sequence; docs/contract.md §4: a file is known from its end callback.
import { readFileSync } from 'node:fs';
import type { SQSRecord } from 'aws-lambda';
import { countsOf } from '../lib/aws/dynamo/table/items.ts';
import { TaskQueries } from '../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { firstFilePutThrottled } from './support/faulty-client.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let sequence = 10n ** 19n + 9_100_000n;
const receive = (r: SQSRecord, count: number): SQSRecord => ({
  ...r,
  attributes: { ...r.attributes, ApproximateReceiveCount: String(count) },
});

test.failing('an end whose shared file put lost its answer, back without its upload, counts its file', async () => {
  const id = 'end-file-uncounted';
  const start: Record<string, any> = { ...fixture('recording-1-start-mix'), recordId: id };
  const at = start.timestamp as number;
  const { appKey, roomId, sessionId } = start;
  const base = { appKey, recordId: id, roomId, sessionId, userId: '', mode: 3 };
  const file = `${id}.mp4`;
  const end = {
    ...base,
    type: 3,
    timestamp: at + 120_000,
    code: 200,
    errorMessage: 'success',
    output: { fileName: file, fileSize: 2000 },
  };
  const failedUpload = {
    ...base,
    type: 4,
    timestamp: at + 121_000,
    code: 503,
    errorMessage: 'storage unavailable',
    output: { fileName: file, fileUrl: '' },
  };
  // The start sent again by the platform: the same event, another message (its keys in another order).
  const startAgain = Object.fromEntries(Object.entries(start).reverse());
  const groupId = `g-${id}`;
  const message = (b: object) =>
    sqsRecord('recording', JSON.stringify(b), { groupId, sequenceNumber: String(++sequence) });
  const [s, e, s2, u] = [message(start), message(end), message(startAgain), message(failedUpload)];
  const published: TaskEvent[] = [];
  const events = { publish: async (batch: readonly TaskEvent[]) => void published.push(...batch) };
  const faulty = firstFilePutThrottled(local.db.client, { landed: true });
  const store = new DynamoTaskStore({ client: faulty.client, tableName: local.db.tableName });
  const run = (records: SQSRecord[]) => processBatch(sqsEvent(records), { store, log, events, maxReceiveCount: 5 });

  // The whole group in one batch: the file's put (the end and the failed upload) lands, its answer is lost.
  const first = await run([s, e, s2, u].map((r) => receive(r, 1)));
  expect(faulty.fired()).toBe(true);
  expect(first.batchItemFailures).toHaveLength(4);
  // SQS hands the group out again in order, in smaller batches, on the same warm worker.
  expect((await run([receive(s, 2), receive(e, 2)])).batchItemFailures).toEqual([]);
  const reader = new TaskQueries(new TableReader(local.db.client, local.db.tableName), Date.now);
  const afterEnd = countsOf((await reader.findHeader(id))!)!;
  expect((await run([receive(s2, 2)])).batchItemFailures).toEqual([]);

  // The end was applied and counted by its own batch: the file it names is one of the task's files.
  expect(afterEnd.files).toBe(1);
  // Each later sequence shows the task at least as far as the earlier: never 0 files once 1 was shown.
  const bySequence = [...published].sort((a, b) => a.sequence - b.sequence);
  for (let i = 1; i < bySequence.length; i++)
    expect(bySequence[i]!.task.files.total).toBeGreaterThanOrEqual(bySequence[i - 1]!.task.files.total);
  // And no event shows the task ended with no file: the end names one.
  expect(published.filter((ev) => ev.task.status === 'ended' && ev.task.files.total === 0)).toEqual([]);
});
