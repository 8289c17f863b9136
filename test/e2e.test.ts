// End to end through the same path as `callbacks dev`: the local stack (deployed ingest, worker and verifier
// handlers, fauxqs, dynalite) on free ports; the sender emulator posts a few hundred signed recording and
// screenshot callbacks, with duplicates, reordering, storage outages and failed starts, and stores each file it
// reports uploaded in the stack's storage, some of them faulted; the checker then reads every task back through the
// stack file, as the other CLI commands do, and compares it with what the domain says the callbacks that were
// acknowledged must produce; the same for the task events read from the queue subscribed to the stack's topic,
// and for each file's check in its storage.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { EventQueueReader } from '../lib/aws/sqs/event-queue.ts';
import { TASK_EVENT_TYPES } from '../lib/domain/task-events.ts';
import { S3Client } from '@aws-sdk/client-s3';
import { expectedChecksOf, expectedTaskEventsOf, expectedTasks, withMissingEvents } from '../devkit/emulator/expect.ts';
import { EmulatedStorage, planStoredFiles, STORED_SIZE_DIVISOR } from '../devkit/emulator/storage.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../devkit/local/deployed-settings.ts';
import { verifyChecks } from '../devkit/verify/storage.ts';
import { generateRun } from '../devkit/emulator/lifecycles.ts';
import { createRandom } from '../devkit/emulator/random.ts';
import { sendAll } from '../devkit/emulator/sender.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { verifyEvents } from '../devkit/verify/events.ts';
import { verifyTasks } from '../devkit/verify/verify.ts';

let cwd: string;
let stack: LocalStack;
let target: Target;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-e2e-'));
  stack = await startLocalStack({ port: 0, memory: true, cwd, quiet: true, retryDelaySeconds: 1 });
  // Found through .data/stack.json, with no flags or env, as `callbacks tasks` and `callbacks verify` find it.
  target = await openTarget({ cwd, env: {} });
});
afterAll(async () => {
  await target?.close();
  await stack?.stop();
  await rm(cwd, { recursive: true, force: true });
});

test('the stack file names the running stack, and /health answers', async () => {
  const info = JSON.parse(await readFile(join(cwd, '.data', 'stack.json'), 'utf8'));
  expect(info).toEqual(stack.info);
  expect(info.dataDir).toBeNull();
  expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(info.url).not.toMatch(/:0$/);
  expect(target.kind).toBe('local');
  const res = await fetch(`${stack.url}/health`);
  expect(await res.json()).toEqual({ ok: true });
});

test('a few hundred callbacks of both services, with duplicates, reordering and an outage: every task ' +
  'matches', async () => {
  const seed = 'e2e-local-stack';
  const run = generateRun({
    seed,
    recordings: 10,
    screenshots: 10,
    appKey: 'demo-app',
    compress: 3600,
    duplicates: 0.2,
    reorderWindowMs: 300,
    outage: 0.5,
    giveUp: 0.3,
    failedStarts: 0.1,
    sizeDivisor: STORED_SIZE_DIVISOR,
  });
  expect(run.sends.length).toBeGreaterThan(300);
  // The files reported uploaded, stored in the stack's storage as the platform would, some of them faulted.
  const storage = stack.info.storage!;
  const s3 = new S3Client({
    endpoint: storage.s3Endpoint,
    forcePathStyle: true,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
  });
  const files = planStoredFiles(run.sends, {
    faults: ['missing', 'empty', 'truncated', 'forbidden'],
    rate: 0.3,
    seed,
    settings: storage.settings,
  });
  expect(new Set(files.map((f) => f.fault))).toEqual(new Set([null, 'missing', 'empty', 'truncated', 'forbidden']));
  const stored = new EmulatedStorage(s3, storage.settings, files);
  expect(run.sends.some((s) => s.duplicate)).toBe(true);
  expect(new Set(run.sends.map((s) => s.service))).toEqual(new Set(['recording', 'screenshot']));

  const report = await sendAll({
    url: stack.url,
    sends: run.sends,
    random: createRandom(seed),
    secret: 'demo-secret',
    sign: 'header',
    beforeSend: (send) => stored.beforeSend(send),
  });
  s3.destroy();
  expect(report.summary.undelivered).toBe(0);
  expect(report.summary.status4xx).toBe(0);

  const expected = expectedTasks(report.results);
  expect(expected).toHaveLength(20);
  const drained = async () => {
    const queue = await target.queue.depth();
    return queue.visible + queue.inFlight + queue.delayed === 0;
  };
  // The tasks are read once the queue has drained (one cheap read a poll until then): read while the worker
  // applies them, they would only take from it.
  for (const deadline = Date.now() + 60_000; !(await drained()) && Date.now() < deadline; )
    await new Promise((resolve) => setTimeout(resolve, 100));
  const result = await verifyTasks({
    expected,
    getTask: (id, appKey) => target.tasks.getTask(id, appKey),
    waitForDrain: drained,
    // About 10 s on an idle 2-core machine; the margin is for a busy one.
    timeoutMs: 60_000,
    pollIntervalMs: 250,
    settleMs: 1000,
  });
  expect({ timedOut: result.timedOut, diffs: result.diffs }).toEqual({ timedOut: false, diffs: [] });
  expect(result).toMatchObject({ ok: true, matched: 20, checked: 20 });

  // Task events, read from the queue subscribed to the stack's topic: every MUST event at least once,
  // nothing outside MAY.
  const checks = expectedChecksOf(files, report.results);
  const expectedEvents = withMissingEvents(expectedTaskEventsOf(report.results), checks);
  expect(expectedEvents.must.length).toBeGreaterThan(40);
  const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl!);
  const events = await verifyEvents({
    expected: expectedEvents,
    poll: async () => (await reader.poll()).map((m) => m.body),
    timeoutMs: 30_000,
  });
  expect({ missing: events.missing, unexpected: events.unexpected }).toEqual({ missing: [], unexpected: [] });
  // The run is varied enough to expect every type of event.
  expect(new Set(expectedEvents.must.map((r) => r.type))).toEqual(new Set([...TASK_EVENT_TYPES, 'file.missing']));

  // Every file reported uploaded checked in its storage: each faulted one flagged with its kind, no healthy one.
  const found = await verifyChecks({
    expected: checks,
    getTask: (id, appKey) => target.tasks.getTask(id, appKey),
    timeoutMs: 30_000,
  });
  expect({ diffs: found.diffs, timedOut: found.timedOut }).toEqual({ diffs: [], timedOut: false });
  expect(found.byFault.none!.found).toBeGreaterThan(20);

  // Every delivered request went through the queue to the worker; nothing was dead-lettered.
  expect(stack.poller.stats.records).toBeGreaterThanOrEqual(report.summary.delivered);
  expect(await target.dlq.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
}, 120_000);
