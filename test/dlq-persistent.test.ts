// `callbacks dlq list` and `callbacks dlq redrive` on a local stack that keeps its data in a folder (fauxqs on
// SQLite), as `npm start` runs it: a look leaves every message in place with its receive count, through a
// restart, and a redrive brings them back to the worker. (test/cli.test.ts covers the in-memory stack.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { enqueueCallback } from '../lib/ingest/enqueue.ts';
import { type LocalStack, startLocalStack } from '../devkit/local/stack.ts';
import { setLogSink } from '../lib/log.ts';
import { runCliHere as runCli } from './support/cli-process.ts';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { eventually } from './support/eventually.ts';

let dir: string;

async function runCliJson<T>(cwd: string, args: string[]): Promise<T> {
  const run = await runCli([...args, '--json'], { cwd });
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}
let stack: LocalStack;
let restoreSink: ReturnType<typeof setLogSink>;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-dlq-data-'));
  restoreSink = setLogSink(() => {});
});
afterAll(async () => {
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

const port = (url: string) => Number(new URL(url).port);
const ids = ['rec-dead-1', 'rec-dead-2', 'rec-dead-3'];
const body = (id: string, i: number) =>
  JSON.stringify({ timestamp: Date.now() - 60_000 + i, type: 1, appKey: 'demo-app', recordId: id, code: 200 });

interface Listed {
  messageId: string;
  taskId: string;
  receiveCount: number;
}

test('list leaves messages and receive counts, across a restart; redrive hands them to the worker', async () => {
  stack = await startLocalStack({ port: 0, cwd: dir, dataDir: 'data', quiet: true });
  expect(stack.info.dataDir).toBe(join(dir, 'data'));
  const sqs = new SQSClient({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
  });
  for (const [i, id] of ids.entries()) {
    await enqueueCallback(
      sqs,
      stack.info.dlqUrl,
      {
        body: body(id, i),
        service: 'recording',
        appKey: 'demo-app',
        receivedAt: Date.now(),
        requestId: null,
        verdict: 'valid',
        mode: 'enforce',
        replayKey: null,
      },
      { groupId: taskGroupId('demo-app', id), deduplicationId: id },
    );
  }
  sqs.destroy();

  const byTask = (listed: Listed[]) => listed.map((m) => [m.taskId, m.receiveCount]).sort();
  // Each look receives every message once and makes it visible again at once.
  expect(byTask(await runCliJson<Listed[]>(dir, ['dlq', 'list']))).toEqual(ids.map((id) => [id, 0]));
  const human = await runCli(['dlq', 'list'], { cwd: dir });
  expect(human).toMatchObject({ code: 0, stderr: '' });
  expect(human.stdout).toMatch(/^3 messages in http:.*callbacks-dlq/m);

  // The data folder keeps the messages and what happened to them.
  const info = stack.info;
  await stack.stop();
  stack = await startLocalStack({
    port: port(info.url),
    cwd: dir,
    dataDir: 'data',
    quiet: true,
    dynamoPort: port(info.dynamoEndpoint),
    sqsPort: port(info.sqsEndpoint),
  });
  expect(byTask(await runCliJson<Listed[]>(dir, ['dlq', 'list']))).toEqual(ids.map((id) => [id, 2]));

  expect(await runCliJson(dir, ['dlq', 'redrive', '--yes'])).toMatchObject({
    from: info.dlqUrl,
    to: info.queueUrl,
    moved: 3,
    failed: [],
    notDeleted: [],
  });
  expect(await runCliJson(dir, ['dlq', 'list'])).toEqual([]);
  const store = new DynamoTaskStore({ client: stack.tableClient(), tableName: info.tableName });
  for (const id of ids) await eventually(id, () => store.getTask(id));
  expect((await store.getTask('rec-dead-2'))?.eventCount).toBe(1);
});
