// Terminal escape injection: ids, rooms and messages come from callbacks anyone can send. Every command that
// prints them, run as a user runs it (cli/main.ts's run with its output piped, on a local stack), prints
// their control and format characters escaped, and --json stays exact JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SNSClient } from '@aws-sdk/client-sns';
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { snsEventPublisher } from '../lib/aws/sns/task-events.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { printable } from '../cli/format.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { runCliHere } from './support/cli-process.ts';
import { storedBeforeTheNameRule, withNames } from './support/names-before-the-rule.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

/** An OSC 52 clipboard write, a screen clear, a window title, a C1 CSI, DEL, bidi override and isolate. */
const HOSTILE = 'rec-\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2J\u001b]0;pwned\u0007\u009b31m\u007f\u202elive\u2066';
/** Nothing of it may reach the terminal raw (the output is piped: no colour codes of our own either). */
const RAW_HIDDEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const SHOWN = printable(HOSTILE);
/** The names are sent as this stand-in and stored as HOSTILE (test/support/names-before-the-rule.ts). */
const STAND_IN = 'rec-hostile-stand-in';

let dir: string;
let stack: LocalStack;
let restoreSink: ReturnType<typeof setLogSink>;
const now = Date.now();

async function cli(args: string[]) {
  const run = await runCliHere(args, { cwd: dir });
  expect(run.stdout).not.toMatch(RAW_HIDDEN);
  expect(run.stderr).not.toMatch(RAW_HIDDEN);
  return run;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-escaping-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
  const store = new DynamoTaskStore({
    client: stack.tableClient(),
    tableName: stack.info.tableName,
  });
  const client = { endpoint: stack.info.sqsEndpoint, region: stack.info.region, credentials: LOCAL_CREDENTIALS };
  const sns = new SNSClient(client);
  const sqs = new SQSClient(client);
  const common = { appKey: 'demo-app', recordId: STAND_IN, roomId: STAND_IN, sessionId: 's', userId: '', mode: 3 };
  const bodies = [
    { ...common, timestamp: now - 60_000, type: 1, extra: HOSTILE, code: 200, errorMessage: 'success' },
    { ...common, timestamp: now - 30_000, type: 3, code: 500, errorMessage: HOSTILE, output: { fileName: STAND_IN } },
  ];
  const records = [
    ...bodies.map((b) => sqsRecord('recording', JSON.stringify(b), { receivedAt: now })),
    // Kept aside: a signature that did not verify, naming the hostile task.
    sqsRecord('recording', JSON.stringify({ ...bodies[0], timestamp: now - 1000 }), {
      verdict: 'invalid',
      receivedAt: now - 1000,
    }),
  ];
  const res = await processBatch(sqsEvent(records), {
    store: storedBeforeTheNameRule(store, { [STAND_IN]: HOSTILE }),
    log: createLogger('test'),
    events: snsEventPublisher(sns, stack.info.eventsTopicArn!),
  });
  expect(res.batchItemFailures).toEqual([]);
  const dead = JSON.stringify(withNames(bodies[0], { [STAND_IN]: HOSTILE }));
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: stack.info.dlqUrl,
      MessageBody: dead,
      // The dead-letter queue is FIFO: a message of the task's group.
      MessageGroupId: taskGroupId('demo-app', HOSTILE),
      MessageDeduplicationId: 'hostile-dead-letter',
      MessageAttributes: messageAttributes({
        body: dead,
        service: 'recording',
        appKey: HOSTILE,
        receivedAt: now,
        requestId: null,
        verdict: 'valid',
        mode: 'enforce',
        replayKey: null,
      }),
    }),
  );
  sns.destroy();
  sqs.destroy();
});

afterAll(async () => {
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

describe('terminal escape injection through the commands', () => {
  test('tasks list/get/events, quarantine list, dlq list and events tail print hostile values escaped', async () => {
    const runs = {
      list: await cli(['tasks', 'list']),
      get: await cli(['tasks', 'get', HOSTILE]),
      wide: await cli(['tasks', 'get', HOSTILE, '--wide']),
      events: await cli(['tasks', 'events', HOSTILE, '--raw', '--wide']),
      quarantine: await cli(['quarantine', 'list']),
      quarantineByTask: await cli(['quarantine', 'list', '--task', HOSTILE]),
      dlq: await cli(['dlq', 'list']),
      tail: await cli(['events', 'tail']),
    };
    for (const [name, run] of Object.entries(runs)) {
      expect({ name, code: run.code, stderr: run.stderr }).toEqual({ name, code: 0, stderr: '' });
      expect({ name, shown: run.stdout.includes(SHOWN) }).toEqual({ name, shown: true });
    }
  });

  test('an error that echoes an id, and a command-line mistake, are escaped too', async () => {
    const missing = await cli(['tasks', 'get', `${HOSTILE}-gone`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no task ${SHOWN}-gone in`);
    const badOption = await cli(['tasks', 'list', '--status', HOSTILE]);
    expect(badOption.code).toBe(1);
    expect(badOption.stderr).toContain(SHOWN);
  });

  test('--json stays exact JSON: the hostile values parse back unchanged', async () => {
    const run = await cli(['tasks', 'get', HOSTILE, '--json']);
    expect(run.code).toBe(0);
    const task = JSON.parse(run.stdout) as { id: string; roomId: string; extra: string };
    expect(task).toMatchObject({ id: HOSTILE, roomId: HOSTILE, extra: HOSTILE });
    const tail = await cli(['events', 'tail', '--json']);
    const ids = tail.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { task: { id: string } }).task.id);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids)).toEqual(new Set([HOSTILE]));
  });
});
