// The archive of raw callbacks, written by the worker through Data Firehose's API (the local stand-in,
// devkit/local/firehose.ts, writing into fauxqs's S3) and read back with the SQL of `raw` (DuckDB): every stored
// callback is there once, whatever crash came between the table's write and the archive's.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FirehoseClient, PutRecordBatchCommand } from '@aws-sdk/client-firehose';
import { S3Client } from '@aws-sdk/client-s3';
import { CreateTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import type { FauxqsServer } from 'fauxqs';
import { firehoseArchive } from '../lib/aws/firehose/archive-stream.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import type { ArchiveWriter } from '../lib/domain/archive.ts';
import type { EventPublisher } from '../lib/domain/event-publisher.ts';
import { eventPublisherTo } from '../lib/aws/sns/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { copyArchive, duckdbSource, queryLocalArchive } from '../devkit/local/archive.ts';
import { createFirehoseStandIn } from '../devkit/local/firehose.ts';
import { startLocalSqs } from '../devkit/local/fauxqs.ts';
import { closeServer, listen } from '../devkit/local/server-lifecycle.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { receivedAgain, sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
const BUCKET = 'archive-test';
const STREAM = 'archive-test-stream';
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;

let fauxqs: FauxqsServer;
let s3: S3Client;
let firehose: FirehoseClient;
let standIn: ReturnType<typeof createFirehoseStandIn>;
let dir: string;

beforeAll(async () => {
  fauxqs = await startLocalSqs({ port: 0, logger: false, defaultRegion: 'us-east-1' });
  const endpoint = `http://127.0.0.1:${fauxqs.port}`;
  s3 = new S3Client({ endpoint, region: 'us-east-1', credentials, forcePathStyle: true });
  fauxqs.createBucket(BUCKET);
  standIn = createFirehoseStandIn(s3, [{ name: STREAM, bucket: BUCKET, prefix: 'raw/' }]);
  const port = await listen(standIn, 0, '127.0.0.1');
  firehose = new FirehoseClient({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', credentials });
  dir = await mkdtemp(join(tmpdir(), 'archive-'));
});

afterAll(async () => {
  firehose.destroy();
  s3.destroy();
  await closeServer(standIn, 2000);
  await fauxqs.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The archive read back: the lines copied out of S3 into a fresh folder, queried with `sql` against `raw`. */
async function query(sql: string) {
  const root = await mkdtemp(join(dir, 'q-'));
  await copyArchive(s3, BUCKET, 'raw/', root);
  return (await queryLocalArchive(join(root, 'raw'), sql.replace(LINES, duckdbSource(join(root, 'raw'))))).rows;
}

/** Stands in a query for the stored lines themselves, every copy of them (not `raw`). */
const LINES = '<stored lines>';

/** A FirehoseClient whose first PutRecordBatch never arrives: the worker stops between the table and the archive. */
function crashesOnce(client: FirehoseClient) {
  let crashed = false;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: object) => {
        if (!crashed) {
          crashed = true;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return target.send(command as never);
      };
    },
  });
}

test('a crash between the table write and the archive write leaves no gap and no line counted twice', async () => {
  const imageId = 'archive-crash-1';
  const start = { ...fixture('screenshot-1-start'), imageId };
  const ok = fixture('screenshot-4-upload-ok');
  const upload = { ...ok, imageId, output: { ...ok.output, fileName: `${imageId}-0.jpg` } };
  const end = { ...fixture('screenshot-3-end'), imageId };
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  let records = [start, upload, end].map((b) => sqsRecord('screenshot', b, { groupId: imageId }));
  const crashing: ArchiveWriter = firehoseArchive(crashesOnce(firehose), STREAM);
  // The table is written, the archive call is lost: every record fails, and comes again.
  const first = await processBatch(sqsEvent(records), { store, log, archive: crashing });
  expect(first.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(records.map((r) => r.messageId));
  expect(await store.getTask(imageId)).not.toBeNull();
  expect(await query(`SELECT count(*) AS n FROM raw WHERE task_id = '${imageId}'`)).toEqual([{ n: '0' }]);
  // Its retry finds the writes done (duplicates) and archives them; then a copy of the batch comes once more
  // (Lambda's answer lost after the archive was written): its lines go out a second time.
  records = records.map(receivedAgain);
  const archive = firehoseArchive(firehose, STREAM);
  expect((await processBatch(sqsEvent(records), { store, log, archive })).batchItemFailures).toEqual([]);
  records = records.map(receivedAgain);
  expect((await processBatch(sqsEvent(records), { store, log, archive })).batchItemFailures).toEqual([]);
  // Two copies of each line are stored; `raw` holds one row per delivery.
  expect(await query(`SELECT count(*) AS n FROM raw WHERE task_id = '${imageId}'`)).toEqual([{ n: '3' }]);
  expect(await query(`SELECT count(*) AS n FROM ${LINES} WHERE task_id = '${imageId}'`)).toEqual([{ n: '6' }]);
  const rows = await query(
    `SELECT type, outcome, service, delivery_id FROM raw WHERE task_id = '${imageId}' ORDER BY type`,
  );
  expect(rows.map((r) => [r.type, r.service])).toEqual([
    [1, 'screenshot'],
    [3, 'screenshot'],
    [4, 'screenshot'],
  ]);
  expect(new Set(rows.map((r) => r.delivery_id)).size).toBe(3);
});

/** A FirehoseClient that refuses the entries of the bodies naming `refused`, `times` calls running (throttled). */
function refusing(client: FirehoseClient, refused: string, times: number) {
  let calls = 0;
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: { input: { DeliveryStreamName: string; Records: { Data: Uint8Array }[] } }) => {
        if (calls++ >= times) return target.send(command as never);
        const records = command.input.Records;
        const hits = records.map((r) => new TextDecoder().decode(r.Data).includes(refused));
        // The others are taken: written by the stand-in.
        const taken = records.filter((_, i) => !hits[i]);
        if (taken.length > 0)
          await target.send(new PutRecordBatchCommand({ ...command.input, Records: taken }) as never);
        return {
          FailedPutCount: hits.filter(Boolean).length,
          RequestResponses: hits.map((hit) =>
            hit ? { ErrorCode: 'ServiceUnavailableException', ErrorMessage: 'Slow down.' } : { RecordId: 'r' },
          ),
        };
      };
    },
  });
}

test('a line Firehose refuses is sent once more; refused again, its record alone fails and comes again', async () => {
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const starts = ['archive-refused-1', 'archive-refused-2'].map((imageId) => ({
    ...fixture('screenshot-1-start'),
    imageId,
  }));
  const records = starts.map((b) => sqsRecord('screenshot', b, { groupId: b.imageId }));
  const once = firehoseArchive(refusing(firehose, 'archive-refused-1', 1), STREAM);
  expect((await processBatch(sqsEvent(records), { store, log, archive: once })).batchItemFailures).toEqual([]);
  const twice = firehoseArchive(refusing(firehose, 'archive-refused-2', 2), STREAM);
  const again = records.map(receivedAgain);
  const res = await processBatch(sqsEvent(again), { store, log, archive: twice });
  expect(res.batchItemFailures).toEqual([{ itemIdentifier: again[1]!.messageId }]);
  const rows = await query(
    "SELECT task_id, count(*) AS n FROM raw WHERE task_id LIKE 'archive-refused-%' GROUP BY task_id ORDER BY task_id",
  );
  expect(rows).toEqual([
    { task_id: 'archive-refused-1', n: '1' },
    { task_id: 'archive-refused-2', n: '1' },
  ]);
});

test('the five queries of docs/archive.md run against raw', async () => {
  const page = readFileSync(new URL('../docs/archive.md', import.meta.url), 'utf8');
  const queries = [...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(queries).toHaveLength(5);
  for (const sql of queries) expect(Array.isArray(await query(sql))).toBe(true);
});

test("a batch's lines go to the archive while its events are published, neither waiting on the other", async () => {
  const config = { endpoint: `http://127.0.0.1:${fauxqs.port}`, region: 'us-east-1', credentials };
  const sns = new SNSClient(config);
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: 'archive-and-events' }));
  sns.destroy();
  const topic = eventPublisherTo(TopicArn!, config)!;
  const publishing = Promise.withResolvers<void>();
  const events: EventPublisher = {
    publish(batch) {
      publishing.resolve();
      return topic.publish(batch);
    },
  };
  // The archive's call goes out only once the events are being published: one after the other, the batch would
  // never end.
  const afterPublishing = new Proxy(firehose, {
    get(target, prop, receiver) {
      if (prop !== 'send') return Reflect.get(target, prop, receiver);
      return async (command: object) => {
        await publishing.promise;
        return target.send(command as never);
      };
    },
  });
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const imageId = 'archive-with-events-1';
  const records = [sqsRecord('screenshot', { ...fixture('screenshot-1-start'), imageId }, { groupId: imageId })];
  const archive = firehoseArchive(afterPublishing, STREAM);
  expect((await processBatch(sqsEvent(records), { store, log, archive, events })).batchItemFailures).toEqual([]);
  expect(await query(`SELECT count(*) AS n FROM raw WHERE task_id = '${imageId}'`)).toEqual([{ n: '1' }]);
});
