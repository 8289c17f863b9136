// `callbacks status` against a local stack, in process: what it reports after callbacks went through the
// stack, and that a part it cannot read is n/a rather than a failure of the whole.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readStatus, statusLines, type StatusReport } from '../cli/commands/status.ts';
import { colors } from '../cli/format.ts';
import type { StageInsight } from '../cli/stage-insight.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { postSigned } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

let dir: string;
let stack: LocalStack;
let target: Target;
let restoreSink: ReturnType<typeof setLogSink>;

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
}, 60_000);

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
    expect(report.quarantine).toEqual({ days: 7, total: 1, complete: true, byReason: { invalid_signature: 1 } });
    expect(report.signature).toEqual({ signatureMode: 'report', allowedSources: ['127.0.0.0/8', '::1/128'] });
    expect(report.alarms).toBeNull();
    expect(report.lastCallback).toMatchObject({ service: 'recording', appKey: 'demo-app' });
    expect(['rec-status-1', 'rec-status-2']).toContain(report.lastCallback!.id);
    expect(report.unavailable).toEqual({
      queueAge: 'no CloudWatch metrics for this target',
      alarms: 'no CloudWatch alarms for this target',
    });
    const text = statusLines(report, Date.now(), colors(false));
    expect(text).toMatch(/queue\s+0 waiting, 0 in flight, 0 delayed; oldest message n\/a \(no CloudWatch metrics/);
    expect(text).toMatch(/quarantine\s+1 callback in the last 7 days: invalid_signature 1/);
    expect(text).toMatch(/signatures\s+mode report; sources 127\.0\.0\.0\/8, ::1\/128/);
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
      quarantine: { days: 1, total: 1000, complete: false, byReason: { missing_signature: 1000 } },
      signature: { signatureMode: 'report', allowedSources: [] },
      alarms: [{ name: 'rtc-callbacks-receiver-x-dlq-not-empty', since: 0, reason: 'Threshold Crossed' }],
      lastCallback: { service: 'recording', id: 'rec-\u001b[2J\u202e', appKey: 'a', at: 0 },
      unavailable: {},
    };
    const text = statusLines(report, 1000, colors(false));
    expect(text).toMatch(/dead letters\s+2 messages/);
    expect(text).toMatch(/at least 1000 callbacks in the last 1 day: missing_signature 1000/);
    expect(text).toMatch(/1 in alarm: rtc-callbacks-receiver-x-dlq-not-empty/);
    expect(text).toContain('rec-\\x1b[2J\\u202e');
    expect(text).not.toMatch(/[\u001b\u202e]/);
  });
});
