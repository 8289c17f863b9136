// `callbacks status` against a local stack, in process: what it reports after callbacks went through the
// stack, and that a part it cannot read is n/a rather than a failure of the whole.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readStatus, statusLines, type StatusReport } from '../cli/commands/status.ts';
import { colors } from '../cli/format.ts';
import type { StageInsight } from '../cli/stage-insight.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { TableClient } from '../lib/aws/dynamo/table/table-client.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import { defaultTimeSettings } from '../lib/domain/deadlines.ts';
import { FILE_HOLD_MS } from '../lib/platform/delivery.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { postSigned } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

let dir: string;
let stack: LocalStack;
let target: Target;
let restoreSink: ReturnType<typeof setLogSink>;
const H = 3_600_000;
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Record<string, unknown>;
/** A recording callback of `recordId` at `timestamp` naming file `fileName`. */
const recording = (name: string, recordId: string, timestamp: number, fileName?: string) => {
  const body: Record<string, unknown> = {
    ...fixture(name),
    recordId,
    timestamp,
    roomId: 'room-status',
    sessionId: 'session-status',
  };
  return fileName ? { ...body, output: { ...(body.output as object), fileName } } : body;
};
/** When the old task's latest callback, a failed upload retried now, was sent. */
let retriedAt: number;

const start = (recordId: string, timestamp: number) => ({
  timestamp,
  type: 1,
  appKey: 'demo-app',
  recordId,
  roomId: 'room-status',
  sessionId: 'session-status',
  userId: '',
  mode: 3,
  code: 200,
  errorMessage: 'success',
  config: {},
  output: { fileName: 'session-status_room-status.mp4' },
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-status-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({
    port: 0,
    memory: true,
    cwd: dir,
    quiet: true,
    signatureMode: 'report',
    allowedSourceCidrs: ['127.0.0.0/8', '::1/128'],
    // New tasks armed at once (SETTLE_AFTER of 1 ms) and swept here, not on a schedule.
    scheduleEveryMs: 0,
    settleAfter: '1ms',
  });
  target = await openTarget({ cwd: dir, env: {} });
  const now = Date.now();
  expect((await postSigned(stack.url, 'recording', start('rec-status-1', now - 60_000))).status).toBe(200);
  expect((await postSigned(stack.url, 'recording', start('rec-status-2', now - 1000))).status).toBe(200);
  // Signed with a wrong secret: accepted in mode report, then set aside.
  const forged = await postSigned(stack.url, 'recording', start('rec-status-3', now), 'not-the-secret');
  expect(forged.status).toBe(200);
  await eventually(
    'the worker applied both and set one aside',
    () => readStatus(target, { days: 7, insight: null }),
    (r) => r.quarantine?.total === 1 && r.lastCallback?.id !== undefined && r.queue?.inFlight === 0,
  );
  // An outage: a task started two days ago whose upload fails and is retried now, after twenty tasks started since;
  // a task whose upload failed 25 hours ago (lost once swept); a screenshot task silent for two hours (stalled).
  const post = async (service: 'recording' | 'screenshot', body: object) =>
    expect((await postSigned(stack.url, service, body)).status).toBe(200);
  await post('recording', recording('recording-1-start-mix', 'rec-status-old', now - 48 * H));
  for (let i = 0; i < 20; i++) await post('recording', start(`rec-status-new-${i}`, now - 30_000 + i));
  await post('recording', recording('recording-1-start-mix', 'rec-status-lost', now - 27 * H));
  await post('recording', recording('recording-3-end', 'rec-status-lost', now - 26 * H, 'lost.mp4'));
  await post('recording', recording('recording-4-upload-failed', 'rec-status-lost', now - 25 * H, 'lost.mp4'));
  await post('screenshot', { ...fixture('screenshot-1-start'), imageId: 'img-status-stalled', timestamp: now - 2 * H });
  await eventually(
    'the tasks applied',
    async () => await Promise.all(['rec-status-new-19', 'img-status-stalled'].map((id) => target.tasks.getTask(id))),
    (tasks) => tasks.every((t) => t !== null),
  );
  retriedAt = Date.now();
  await post('recording', recording('recording-4-upload-failed', 'rec-status-old', retriedAt, 'old.mp4'));
  await eventually(
    'the retry applied',
    () => target.tasks.getTask('rec-status-old'),
    (t) => t?.eventCount === 2,
  );
  await sweep(Date.now() + 6 * 60_000, {
    sweeps: new TaskSweeps(new TableClient(stack.tableClient(), stack.info.tableName)),
    events: { publish: async () => {} },
    time: { ...defaultTimeSettings, settleAfterMs: 1 },
    log: createLogger('test'),
    lookBackMs: 3 * H,
  });
}, 90_000);

afterAll(async () => {
  await target?.close();
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

describe('callbacks status on the local stack', () => {
  test('the queue, dead letters, quarantine by reason, signature settings and the last callback', async () => {
    const report = await eventually(
      'both tasks applied',
      () => readStatus(target, { days: 7, insight: null }),
      (r) => r.queue?.visible === 0 && r.queue.inFlight === 0,
    );
    expect(report.queue).toEqual({ visible: 0, inFlight: 0, delayed: 0, oldestAgeS: null });
    expect(report.deadLetters).toEqual({ visible: 0, inFlight: 0 });
    expect(report.quarantine).toEqual({
      days: 7,
      total: 1,
      waiting: 1,
      applied: 0,
      complete: true,
      byReason: { invalid_signature: 1 },
    });
    expect(report.signature).toEqual({ signatureMode: 'report', allowedSources: ['127.0.0.0/8', '::1/128'] });
    expect(report.alarms).toBeNull();
    expect(report.unavailable).toEqual({
      queueAge: 'no CloudWatch metrics for this target',
      alarms: 'no CloudWatch alarms for this target',
    });
    const text = statusLines(report, Date.now(), colors(false));
    expect(text).toMatch(/queue\s+0 waiting, 0 in flight, 0 delayed; oldest message n\/a \(no CloudWatch metrics/);
    expect(text).toMatch(/quarantine\s+1 callback waiting, received in the last 7 days: invalid_signature 1: callb/);
    expect(text).toMatch(/signatures\s+mode report; sources 127\.0\.0\.0\/8, ::1\/128/);
  });

  test('"last callback" was the newest of 20 tasks started last: now the last received, an old one', async () => {
    const report = await readStatus(target, { days: 7, insight: null });
    expect(report.lastCallback).toMatchObject({
      service: 'recording',
      id: 'rec-status-old',
      appKey: 'demo-app',
      at: retriedAt,
      complete: true,
    });
    // By the receiver's clock, to the minute (rounded up): received by then, and no sooner than its minute began.
    expect(report.lastCallback!.receivedBy).toBeGreaterThanOrEqual(retriedAt);
    expect(report.lastCallback!.receivedBy - retriedAt).toBeLessThan(2 * 60_000);
    expect(statusLines(report, Date.now(), colors(false))).toMatch(
      /last callback\s+received by \S+ \(.*\): recording task rec-status-old of demo-app, its latest callback stamped/,
    );
  });

  test('what is wrong now: uploads failing in the last hour, lost files, stalled tasks, the next purge', async () => {
    const now = Date.now();
    const report = await readStatus(target, { days: 7, insight: null, now });
    expect(report.failingUploads).toEqual({ files: 1, tasks: 1, complete: true });
    expect(report.tasks).toMatchObject({
      days: 7,
      complete: true,
      lost: { files: 1, tasks: 1 },
      stalled: { tasks: 1 },
      purge: {
        tasks: 1,
        next: { id: 'rec-status-old', fileName: 'old.mp4', purgeAt: retriedAt + FILE_HOLD_MS, service: 'recording' },
      },
    });
    const text = statusLines(report, now, colors(false));
    expect(text).toMatch(/failing uploads\s+1 file failing in 1 task changed in the last hour: callbacks tasks list/);
    expect(text).toMatch(/lost files\s+1 file in 1 task of the last 7 days: callbacks tasks list --lost/);
    expect(text).toMatch(
      /stalled tasks\s+1 task of the last 7 days, the longest since .*: callbacks tasks list --stall/,
    );
    expect(text).toMatch(
      /next purge\s+\S+ \(in 2\d h \d\d min\): old\.mp4 of recording task rec-status-old of demo-app/,
    );
  });

  test("a stage's part that cannot be read is n/a with why; the rest is still reported", async () => {
    const denied = Object.assign(new Error('User is not authorized to perform: cloudwatch:DescribeAlarms'), {
      name: 'AccessDenied',
    });
    const insight: StageInsight = {
      oldestMessageAgeS: async () => 42,
      ingestSettings: async () => ({ signatureMode: 'enforce', allowedSources: [] }),
      alarmsInAlarm: async () => {
        throw denied;
      },
      close: () => {},
    };
    const report = await readStatus(target, { days: 7, insight });
    expect(report.queue?.oldestAgeS).toBe(42);
    expect(report.signature).toEqual({ signatureMode: 'enforce', allowedSources: [] });
    expect(report.alarms).toBeNull();
    expect(report.unavailable.alarms).toMatch(/not authorized to perform: cloudwatch:DescribeAlarms/);
    expect(report.quarantine?.total).toBe(1);
    const text = statusLines(report, Date.now(), colors(false));
    expect(text).toMatch(/oldest message 42 s/);
    expect(text).toMatch(/alarms\s+n\/a \(.*not authorized/);
    expect(text).toMatch(/sources any/);
  });

  test('alarms in alarm are named; values from the platform are escaped on the terminal', () => {
    const report: StatusReport = {
      target: 'stage x',
      queue: { visible: 3, inFlight: 1, delayed: 0, oldestAgeS: 12.4 },
      deadLetters: { visible: 2, inFlight: 0 },
      quarantine: {
        days: 1,
        total: 1000,
        waiting: 1000,
        applied: 0,
        complete: false,
        byReason: { missing_signature: 1000 },
      },
      signature: { signatureMode: 'report', allowedSources: [] },
      alarms: [{ name: 'rtc-callbacks-receiver-x-dlq-not-empty', since: 0, reason: 'Threshold Crossed' }],
      failingUploads: null,
      tasks: null,
      lastCallback: {
        service: 'recording',
        id: 'rec-\u001b[2J\u202e',
        appKey: 'a',
        at: 0,
        receivedBy: 60_000,
        complete: true,
      },
      unavailable: { failingUploads: 'denied', tasks: 'denied' },
    };
    const text = statusLines(report, 1000, colors(false));
    expect(text).toMatch(/dead letters\s+2 messages: callbacks dlq list/);
    expect(text).toMatch(/at least 1000 callbacks waiting, received in the last 1 day: missing_signature 1000/);
    expect(text).toMatch(/lost files\s+n\/a \(denied\)/);
    expect(text).toMatch(/1 in alarm: rtc-callbacks-receiver-x-dlq-not-empty/);
    expect(text).toContain('rec-\\x1b[2J\\u202e');
    expect(text).not.toMatch(/[\u001b\u202e]/);
  });

  test('the quarantine line counted the entries applied since as waiting', async () => {
    const [entry] = await (async () => {
      const all = [];
      for await (const e of target.tasks.listQuarantine({ sinceDays: 7 })) all.push(e);
      return all;
    })();
    expect(
      await target.tasks.markQuarantineApplied(entry!, { at: Date.now(), outcome: 'applied', verdict: 'valid' }),
    ).toBe(true);
    const report = await readStatus(target, { days: 7, insight: null });
    expect(report.quarantine).toMatchObject({ total: 1, waiting: 0, applied: 1, byReason: {} });
    expect(statusLines(report, Date.now(), colors(false))).toMatch(
      /quarantine\s+0 callbacks waiting, received in the last 7 days; 1 applied since\n/,
    );
  });
});
