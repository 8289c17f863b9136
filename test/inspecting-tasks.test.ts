// The table a person reads in the DynamoDB console (docs/inspecting-tasks.md): every task header carries its task
// id, appKey, service and status as plain attributes, and its times in ISO 8601 beside their numbers; every file
// item its file name and state. What the raw items say must agree with the task the read API reports.
import { readFileSync } from 'node:fs';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import type { Service } from '../lib/platform/services.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, any>;
let sequence = 10n ** 19n + 9000n;

async function apply(service: Service, bodies: object[]) {
  const store = new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName });
  const records = bodies.map((b) => sqsRecord(service, b, { sequenceNumber: String(++sequence) }));
  const res = await processBatch(sqsEvent(records), { store, log });
  expect(res.batchItemFailures).toEqual([]);
}

/** The task's raw items, as the console's item explorer shows them (plain JSON). */
async function rawItems(id: string): Promise<Record<string, any>[]> {
  const res = await local.db.client.send(
    new QueryCommand({
      TableName: local.db.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: `TASK#${id}` } },
    }),
  );
  return (res.Items ?? []).map((i) => unmarshall(i));
}

async function expectReadable(id: string) {
  const task = (await new DynamoTaskStore({ client: local.db.client, tableName: local.db.tableName }).getTask(id))!;
  const items = await rawItems(id);
  const header = items.find((i) => String(i.sk).startsWith('H#'))!;
  expect({
    taskId: header.taskId,
    appKey: header.appKey,
    service: header.service,
    status: header.status,
  }).toEqual({ taskId: task.id, appKey: task.appKey, service: task.service, status: task.status });
  const iso = (ms: number | null) => (ms === null ? undefined : `${new Date(ms).toISOString().slice(0, 19)}Z`);
  expect({ started: header.startedIso, ended: header.endedIso, updated: header.updatedIso }).toEqual({
    started: iso(task.startedAt),
    ended: iso(task.endedAt),
    updated: iso(task.updatedAt),
  });
  const files = items.filter((i) => String(i.sk).includes('#F#'));
  expect(files.map((f) => [f.fileName, f.state]).sort()).toEqual(task.files.map((f) => [f.fileName, f.upload]).sort());
  return task;
}

test('a completed screenshot task: header and images read as the API reports them', async () => {
  const start: Record<string, any> = { ...fixture('screenshot-1-start'), imageId: 'readable-img' };
  const ok = fixture('screenshot-4-upload-ok');
  const uploads = [0, 1, 2].map((i) => ({
    ...ok,
    imageId: 'readable-img',
    timestamp: start.timestamp + 1000 * (i + 1),
    output: { ...ok.output, fileName: `readable-img-${i}.jpg` },
  }));
  const end = { ...fixture('screenshot-3-end'), imageId: 'readable-img', timestamp: start.timestamp + 9000 };
  await apply('screenshot', [start, ...uploads, end]);
  expect((await expectReadable('readable-img')).status).toBe('completed');
});

test('a recording in progress, then with a failed upload: the status a person reads follows each change', async () => {
  const id = 'readable-rec';
  const start = { ...fixture('recording-1-start-mix'), recordId: id };
  const slice: Record<string, any> = { ...fixture('recording-2-slice'), recordId: id };
  await apply('recording', [start]);
  expect((await expectReadable(id)).status).toBe('recording');
  await apply('recording', [slice]);
  await expectReadable(id);
  const failed = {
    ...fixture('recording-4-upload-failed'),
    recordId: id,
    output: { ...fixture('recording-4-upload-failed').output, fileName: slice.output.fileName },
  };
  await apply('recording', [failed]);
  expect((await expectReadable(id)).status).toBe('upload_failed');
});
