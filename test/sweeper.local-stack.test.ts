// The facts of time on the local stack, as deployed: signed callbacks through the ingest and the worker, then the
// sweeper run as its schedule runs it, under its own role with IAM enforced. A recording whose upload failed a day
// ago has lost its file; a screenshot task silent for an hour is stalled; both publish their events to the topic,
// read from the queue subscribed to it, and the tasks say so. Every call of the sweeper is one its role allows.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { EventQueueReader, type ReceivedEvent } from '../lib/aws/sqs/event-queue.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { postSigned } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

type Body = Record<string, unknown>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;

let cwd: string;
let stack: LocalStack;
let target: Target;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-sweeper-'));
  // Swept on demand only; a new task is armed right away (SETTLE_AFTER of 1 ms).
  stack = await startLocalStack({ port: 0, memory: true, cwd, quiet: true, scheduleEveryMs: 0, settleAfter: '1ms' });
  target = await openTarget({ cwd, env: {} });
}, 120_000);
afterAll(async () => {
  await target?.close();
  await stack?.stop();
  await rm(cwd, { recursive: true, force: true });
});

test('a failed upload past purgeAt is lost, a silent task stalled, with their events, roles enforced', async () => {
  const now = Date.now();
  const dayAgo = now - 25 * 3_600_000;
  const rec = 'rec-lost-e2e';
  const recording = (name: string, timestamp: number): Body => ({ ...fixture(name), recordId: rec, timestamp });
  for (const body of [
    recording('recording-1-start-mix', dayAgo),
    recording('recording-3-end', dayAgo + 60_000),
    recording('recording-4-upload-failed', dayAgo + 70_000),
  ])
    expect((await postSigned(stack.url, 'recording', body)).status).toBe(200);
  const img = 'img-stall-e2e';
  expect(
    (
      await postSigned(stack.url, 'screenshot', {
        ...fixture('screenshot-1-start'),
        imageId: img,
        timestamp: now - 3_600_000,
      })
    ).status,
  ).toBe(200);
  // Applied by the worker first.
  await eventually(
    `${rec} with its 3 callbacks`,
    () => target.tasks.getTask(rec),
    (t) => t?.eventCount === 3,
  );
  await eventually(img, () => target.tasks.getTask(img));

  const [summary] = (await stack.runSchedules()) as Array<Record<string, number>>;
  expect(summary).toMatchObject({ lost: 1, warned: 1, stalled: 1, failed: 0 });
  expect(stack.iam.denials).toEqual([]);
  // The sweeper's calls, each allowed by its own role.
  const calls = [...stack.iam.grants.keys()].filter((k) => k.startsWith('rtc-callbacks-receiver-local-sweeper '));
  expect(new Set(calls.map((k) => k.split(' ')[1]))).toEqual(
    new Set([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'dynamodb:GetItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'dynamodb:PutItem',
      'sns:Publish',
    ]),
  );

  const task = (await target.tasks.getTask(rec))!;
  expect(task.status).toBe('upload_failed');
  expect(task.files.map((f) => f.upload)).toEqual(['lost']);
  const stalled = (await target.tasks.getTask(img))!;
  expect(stalled.stalledSince).toBe(now - 3_600_000 + 15 * 60_000);

  const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl!);
  const seen: ReceivedEvent[] = [];
  const types = () => new Set(seen.map((e) => `${e.body.task?.id} ${e.body.type}`));
  await eventually(
    "the sweep's events",
    async () => {
      seen.push(...(await reader.poll()));
      return types();
    },
    (t) => t.has(`${rec} file.lost`) && t.has(`${rec} file.purge_warning`) && t.has(`${img} task.stalled`),
    { timeoutMs: 30_000 },
  );
  // A second sweep finds nothing more to publish.
  const [again] = (await stack.runSchedules()) as Array<Record<string, number>>;
  expect(again).toMatchObject({ lost: 0, warned: 0, stalled: 0, published: 0 });
}, 180_000);
