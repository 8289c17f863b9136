// `callbacks dev --faults` as an operator practises with it: worker crashes send every callback to the
// dead-letter queue; DynamoDB errors and SNS refusals make the worker retry; once the faults are off,
// `callbacks dlq redrive` brings back what waited, and every task and every task event the sender's callbacks
// call for is there (the sender emulator's expectation, computed from what it sent, is the oracle).
import { mkdtemp, rm } from 'node:fs/promises';
import { S3Client } from '@aws-sdk/client-s3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { EventQueueReader } from '../lib/aws/sqs/event-queue.ts';
import { expectedTaskEventsOf, expectedTasks } from '../devkit/emulator/expect.ts';
import { generateRun } from '../devkit/emulator/lifecycles.ts';
import { EmulatedStorage, planStoredFiles, STORED_SIZE_DIVISOR } from '../devkit/emulator/storage.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../devkit/local/deployed-settings.ts';
import { createRandom } from '../devkit/emulator/random.ts';
import { sendAll } from '../devkit/emulator/sender.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { setLogSink } from '../lib/log.ts';
import { verifyEvents } from '../devkit/verify/events.ts';
import { verifyTasks } from '../devkit/verify/verify.ts';
import { runCliHere as runCli } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

let cwd: string;
let stack: LocalStack;
let target: Target;
let restoreSink: ReturnType<typeof setLogSink>;
const logged: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-faults-'));
  // The stack's own log lines, to see the faults it reports (quiet would silence them).
  restoreSink = setLogSink((line) => logged.push(JSON.parse(line) as Record<string, unknown>));
  stack = await startLocalStack({
    port: 0,
    memory: true,
    cwd,
    retryDelaySeconds: 0,
    // The sweeper's facts of time are not what is checked here (verifyEvents leaves them out): it runs on demand.
    scheduleEveryMs: 0,
    faults: { rates: { crash: 1 }, seed: 'practice' },
  });
  target = await openTarget({ cwd, env: {} });
});
afterAll(async () => {
  await target?.close();
  await stack?.stop();
  setLogSink(restoreSink);
  await rm(cwd, { recursive: true, force: true });
});

const until = (what: string, check: () => Promise<boolean>) =>
  eventually(what, check, undefined, { timeoutMs: 60_000, everyMs: 100 });

const drained = async () => {
  const q = await target.queue.depth();
  return q.visible + q.inFlight + q.delayed === 0 && stack.poller.busy() === 0;
};
const deadLetters = async () => (await target.dlq.depth()).visible;

async function redrive(): Promise<void> {
  const run = await runCli(['dlq', 'redrive', '--yes', '--json'], { cwd });
  expect(run).toMatchObject({ code: 0, stderr: '' });
  expect(JSON.parse(run.stdout)).toMatchObject({ failed: [], notDeleted: [] });
}

test('crashes dead-letter, DynamoDB errors and SNS refusals are retried, and nothing valid is lost', async () => {
  const seed = 'faults-local-stack';
  const run = generateRun({
    seed,
    recordings: 4,
    screenshots: 3,
    appKey: 'demo-app',
    compress: 3600,
    duplicates: 0.1,
    reorderWindowMs: 200,
    outage: 0.5,
    giveUp: 0.3,
    failedStarts: 0,
    sizeDivisor: STORED_SIZE_DIVISOR,
  });
  // The storage holds every file reported uploaded, as reported: the verifier finds none missing.
  const storage = stack.info.storage!;
  const s3 = new S3Client({
    endpoint: storage.s3Endpoint,
    forcePathStyle: true,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const files = planStoredFiles(run.sends, { faults: [], rate: 0, seed, settings: storage.settings });
  const stored = new EmulatedStorage(s3, storage.settings, files);
  const report = await sendAll({
    url: stack.url,
    sends: run.sends,
    random: createRandom(seed),
    secret: 'demo-secret',
    sign: 'header',
    // What is checked is where each callback ends up, not when it came: sent as fast as they are taken.
    followSchedule: false,
    beforeSend: (send) => stored.beforeSend(send),
  });
  s3.destroy();
  expect(report.summary.undelivered).toBe(0);
  expect(report.summary.status4xx).toBe(0);

  // Every worker invocation dies: each callback is received maxReceiveCount times, then dead-lettered.
  await until('the queue is drained into the dead-letter queue', drained);
  const dead = await deadLetters();
  expect(dead).toBeGreaterThan(0);
  expect(stack.faults!.injected.crash).toBeGreaterThanOrEqual(5);
  expect(stack.poller.stats.succeeded).toBe(0);
  const receiveCount = stack.settings.queues.find((q) => q.deadLetterQueue !== undefined)!.maxReceiveCount!;
  expect(stack.poller.stats.failed).toBeGreaterThanOrEqual(dead * receiveCount);
  expect(logged.some((l) => l.event === 'fault_injected' && l.kind === 'crash')).toBe(true);

  // DynamoDB errors and SNS refusals: the records they fail come back and are tried again.
  stack.faults!.set({ dynamo: 0.2, sns: 0.4 });
  await redrive();
  await until('the redriven callbacks are handled', async () => (await drained()) && stack.poller.stats.succeeded > 0);
  expect(stack.faults!.injected.dynamo).toBeGreaterThan(0);
  expect(stack.faults!.injected.sns).toBeGreaterThan(0);
  const kinds = new Set(logged.filter((l) => l.event === 'fault_injected').map((l) => l.kind));
  expect(kinds).toEqual(new Set(['crash', 'dynamo', 'sns']));
  // A refused publish fails its records, which come back: the worker says so.
  expect(logged.some((l) => l.event === 'events_publish_failed')).toBe(true);

  // Faults off; what waits in the dead-letter queue again is redriven; every task and event is there.
  stack.faults!.set({});
  if ((await deadLetters()) > 0) await redrive();
  const result = await verifyTasks({
    expected: expectedTasks(report.results),
    getTask: (id, appKey) => target.tasks.getTask(id, appKey),
    waitForDrain: drained,
    timeoutMs: 60_000,
    pollIntervalMs: 100,
    settleMs: 1000,
  });
  expect({ timedOut: result.timedOut, diffs: result.diffs }).toEqual({ timedOut: false, diffs: [] });
  expect(result).toMatchObject({ ok: true, matched: 7, checked: 7 });
  const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl!);
  const events = await verifyEvents({
    expected: expectedTaskEventsOf(report.results),
    poll: async () => (await reader.poll()).map((m) => m.body),
    timeoutMs: 30_000,
    pollIntervalMs: 100,
  });
  expect({ missing: events.missing, unexpected: events.unexpected }).toEqual({ missing: [], unexpected: [] });
  expect(await target.dlq.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
}, 180_000);
