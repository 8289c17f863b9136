// The inspection CLI as a user runs it: `callbacks ...` (cli/main.ts's run, in this process with an
// environment, folder and streams of its own; `--follow` and its Ctrl-C in child processes), in a folder
// where the local stack (devkit/local/stack.ts, in this process) left its `.data/stack.json`; the data is
// written by the real worker logic.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SNSClient } from '@aws-sdk/client-sns';
import { spawn } from 'node:child_process';
import { GetQueueAttributesCommand, ListQueuesCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import { snsEventPublisher } from '../lib/aws/sns/task-events.ts';
import { checkPublished, expectedTaskEvents } from '../lib/domain/expected-events.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { withPendingVerifications } from './support/pending-verifications.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import type { TaskSummary } from '../lib/domain/task-summary.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import type { Service } from '../lib/platform/services.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { childEnv, cliBin, nodeBin, runCliHere } from './support/cli-process.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { DEFAULT_SECRETS } from '../devkit/local/demo-secrets.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import { eventually } from './support/eventually.ts';

const root = new URL('..', import.meta.url).pathname;
const fixturesDir = join(root, 'test/fixtures');
const fixture = (name: string) => readFileSync(join(fixturesDir, name), 'utf8').trim();
const fixtureNames = readdirSync(fixturesDir).filter((f) => f.endsWith('.json'));
const serviceOf = (name: string) => (name.startsWith('recording') ? 'recording' : 'screenshot') as Service;

const STACK_FRAME = /\n\s+at /;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let dir: string;
let stack: LocalStack;
let store: DynamoTaskStore;
let sqs: SQSClient;
let restoreSink: ReturnType<typeof setLogSink>;
const now = Date.now();

const ANSI = /\u001b\[/;

/** Runs `callbacks <args>` in the test folder, without any AWS setting of the machine. */
async function cli(args: string[], extraEnv: Record<string, string> = {}) {
  const run = await runCliHere(args, { cwd: dir, env: extraEnv });
  // Output to a pipe is never coloured.
  expect(run.stdout).not.toMatch(ANSI);
  expect(run.stderr).not.toMatch(ANSI);
  return run;
}

async function cliJson<T>(args: string[]): Promise<T> {
  const run = await cli([...args, '--json']);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}

// Recent tasks, for the filters: [id, service, appKey, roomId, sessionId, start time].
const recent: [string, Service, string, string, string, number][] = [
  ['rec-new-1', 'recording', 'app-x', 'room-a', 's-a1', now - 3 * HOUR],
  ['rec-new-2', 'recording', 'app-x', 'room-a', 's-a2', now - 1 * HOUR],
  ['img-new-4', 'screenshot', 'app-x', 'room-b', 's-a1', now - 30 * 60_000],
  ['rec-new-3', 'recording', 'app-y', 'room-b', 's-b1', now - 10 * 60_000],
];

function recentBodies(): [Service, string][] {
  const bodies: [Service, string][] = [];
  for (const [id, service, appKey, roomId, sessionId, at] of recent) {
    const common = { appKey, roomId, sessionId, userId: '', extra: '', code: 200, errorMessage: 'success' };
    const idField = service === 'recording' ? { recordId: id, mode: 3 } : { imageId: id };
    bodies.push([service, JSON.stringify({ timestamp: at, type: 1, ...common, ...idField, config: { trigger: 1 } })]);
  }
  // rec-new-1 ends with one uploaded file: completed.
  const end = {
    appKey: 'app-x',
    recordId: 'rec-new-1',
    roomId: 'room-a',
    sessionId: 's-a1',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
  };
  bodies.push([
    'recording',
    JSON.stringify({ ...end, timestamp: now - 2 * HOUR, type: 3, output: { fileName: 'a.mp4', fileSize: 1288490189 } }),
  ]);
  bodies.push([
    'recording',
    JSON.stringify({
      ...end,
      timestamp: now - 2 * HOUR + 5000,
      type: 4,
      output: { fileName: 'a.mp4', fileUrl: 'https://storage.example.com/a.mp4' },
    }),
  ]);
  return bodies;
}

const dlqBodies = [
  JSON.stringify({
    timestamp: 1763798400000,
    type: 1,
    appKey: 'demo-app',
    recordId: 'rec-dlq-1',
    roomId: 'r',
    sessionId: 's',
    code: 200,
  }),
  JSON.stringify({
    timestamp: 1763798401000,
    type: 1,
    appKey: 'demo-app',
    imageId: 'img-dlq-2',
    roomId: 'r',
    sessionId: 's',
    code: 200,
  }),
  JSON.stringify({
    timestamp: 1763798402000,
    type: 3,
    appKey: 'other-app',
    recordId: 'rec-dlq-3',
    roomId: 'r',
    sessionId: 's',
    code: 200,
    output: { fileName: 'x.mp4', fileSize: 1024 },
  }),
];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-cli-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
  // The CLI's reads: files with their verification (docs/verification.md).
  store = new DynamoTaskStore({ client: stack.tableClient(), tableName: stack.info.tableName, verifications: true });
  sqs = new SQSClient({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
  });
  const records = [
    ...fixtureNames.map((f) =>
      sqsRecord(serviceOf(f), fixture(f), { receivedAt: JSON.parse(fixture(f)).timestamp + 180 }),
    ),
    ...recentBodies().map(([service, body]) => sqsRecord(service, body, { receivedAt: now })),
    // Kept aside: a forged signature and a body that is not a callback.
    sqsRecord('recording', fixture('recording-2-slice.json').replace('7nQ2f0vB-rec-001', 'rec-forged'), {
      verdict: 'invalid',
      receivedAt: now - 5000,
      sender: { sourceIp: '198.51.100.23', userAgent: 'forger/1.0' },
    }),
    // Written as before the sender was recorded: its source is unknown.
    sqsRecord('screenshot', '{"type":9}', { receivedAt: now - 1000 }),
  ];
  const res = await processBatch(sqsEvent(records), { store, log: createLogger('test') });
  expect(res.batchItemFailures).toEqual([]);
  for (const [i, body] of dlqBodies.entries()) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: stack.info.dlqUrl,
        MessageBody: body,
        // As the ingest writes them.
        MessageAttributes: messageAttributes({
          body,
          service: i === 1 ? 'screenshot' : 'recording',
          appKey: JSON.parse(body).appKey,
          receivedAt: 1763798400000 + i,
          requestId: null,
          verdict: 'valid',
          mode: 'enforce',
          replayKey: null,
        }),
        MessageGroupId: taskGroupId(JSON.parse(body).appKey, JSON.parse(body).recordId ?? JSON.parse(body).imageId),
        MessageDeduplicationId: `dlq-${i}`,
      }),
    );
  }
});

afterAll(async () => {
  sqs?.destroy();
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The task the fixtures make, by the oracle, each file with its verification: applied by the worker alone here
 * (no task events, no verifier), an uploaded file is pending, any other has none.
 */
function expectedTask(id: string) {
  const callbacks = fixtureNames
    .filter((f) => fixture(f).includes(`"${id}"`))
    .map((f) => {
      const r = parseCallback(serviceOf(f), fixture(f));
      if (!r.ok) throw new Error(r.errors.join());
      return r.callback;
    });
  return withPendingVerifications(reduceTask(callbacks)!);
}

describe('tasks get', () => {
  test('the human view: a header block and the files with sizes, upload state, URL and purge deadline', async () => {
    const run = await cli(['tasks', 'get', '7nQ2f0vB-rec-001']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const lines = run.stdout.split('\n');
    expect(lines[0]).toBe('recording task 7nQ2f0vB-rec-001  upload_failed');
    for (const [label, value] of [
      ['app key', 'demo-app'],
      ['room', 'room-1024'],
      ['session', 'sN3kL9xQ2aT7'],
      ['mode', '3 (mix-audio-video)'],
      ['started', '2025-11-22T08:00:00Z'],
      ['ended', '2025-11-22T09:30:00Z'],
      ['events', '5'],
      ['last error', '4 upload callback, code 500 "upload to storage failed" at 2025-11-22T09:30:10Z'],
    ]) {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\s+${label}\\s+${escapeRegExp(value!)}`)));
    }
    expect(run.stdout).toContain('2 files: 1 uploaded, 1 failed, 0 pending');
    const header = lines.find((l) => l.startsWith('FILE'))!;
    expect(header.split(/\s{2,}/)).toEqual(['FILE', 'SIZE', 'UPLOAD', 'TRIES']);
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    const uploaded = at('sN3kL9xQ2aT7_room-1024_1763798400000.mp4');
    expect(lines[uploaded]!.split(/\s{2,}/)).toEqual([
      'sN3kL9xQ2aT7_room-1024_1763798400000.mp4',
      '700 MiB',
      'uploaded',
      '1',
    ]);
    // The URL on a line of its own, whole.
    expect(lines[uploaded + 1]).toBe(
      '  https://storage.example.com/recordings/sN3kL9xQ2aT7_room-1024_1763798400000.mp4',
    );
    const failed = at('sN3kL9xQ2aT7_room-1024_1763802000000.mp4');
    expect(lines[failed]!.split(/\s{2,}/)).toEqual([
      'sN3kL9xQ2aT7_room-1024_1763802000000.mp4',
      '350 MiB',
      'failed 500',
      '1',
    ]);
    const purgeAt = 1763803810000 + DAY;
    const purgeText = escapeRegExp(new Date(purgeAt).toISOString().replace('.000Z', 'Z'));
    expect(lines[failed + 1]).toMatch(
      new RegExp(`^  upload to storage failed; purged by the platform at ${purgeText} \\(\\d+ d ago\\)$`),
    );
    // Everything but a URL line fits a 100-column terminal.
    for (const line of lines.filter((l) => !l.startsWith('  https://'))) expect(line.length).toBeLessThanOrEqual(100);
  });

  test('--failed, --limit and --wide: which files, how many were left out, every column on one line', async () => {
    const limited = await cli(['tasks', 'get', '7nQ2f0vB-rec-001', '--limit', '1']);
    expect(limited.stdout).toContain('sN3kL9xQ2aT7_room-1024_1763798400000.mp4  700 MiB');
    expect(limited.stdout).not.toContain('sN3kL9xQ2aT7_room-1024_1763802000000.mp4');
    expect(limited.stdout.trimEnd().split('\n').at(-1)).toBe('1 more file not shown: --limit 2 shows them all.');

    const failed = await cli(['tasks', 'get', '7nQ2f0vB-rec-001', '--failed']);
    const names = failed.stdout.split('\n').filter((l) => l.startsWith('sN3kL9xQ2aT7'));
    expect(names.map((l) => l.split(/\s{2,}/)[0])).toEqual(['sN3kL9xQ2aT7_room-1024_1763802000000.mp4']);

    const json = await cliJson<any>(['tasks', 'get', '7nQ2f0vB-rec-001', '--failed']);
    expect(json.files.map((f: any) => f.upload)).toEqual(['failed']);
    expect(json).toEqual({ ...expectedTask('7nQ2f0vB-rec-001'), files: json.files });

    const wide = await cli(['tasks', 'get', '7nQ2f0vB-rec-001', '--wide']);
    const wideLines = wide.stdout.split('\n');
    expect(wideLines.find((l) => l.startsWith('FILE'))!.split(/\s{2,}/)).toEqual([
      'FILE',
      'SIZE',
      'UPLOAD',
      'TRIES',
      'URL',
      'ERROR',
      'PURGED BY THE PLATFORM',
      'IN STORAGE',
    ]);
    expect(wideLines.find((l) => l.startsWith('sN3kL9xQ2aT7_room-1024_1763802000000.mp4'))!.split(/\s{2,}/)).toEqual([
      'sN3kL9xQ2aT7_room-1024_1763802000000.mp4',
      '350 MiB',
      'failed 500',
      '1',
      '-',
      'upload to storage failed',
      expect.stringMatching(/^2025-11-23T09:30:10Z \(\d+ d ago\)$/),
      '-',
    ]);
  });

  test('--json prints exactly the contract object, for a recording and a screenshot task', async () => {
    for (const id of ['7nQ2f0vB-rec-001', 'img-5c1d9e', 'Kp4e-rec-002']) {
      const printed = await cliJson<unknown>(['tasks', 'get', id]);
      expect(printed).toEqual(expectedTask(id));
      expect(printed).toEqual(await store.getTask(id));
    }
    const rec = await cliJson<any>(['tasks', 'get', '7nQ2f0vB-rec-001']);
    expect(rec.files.find((f: any) => f.upload === 'failed').purgeAt).toBe(1763803810000 + DAY);
  });

  test('an id two appKeys share: one sentence asks for --app-key; with it, each task and its own events', async () => {
    // Years back, out of the listings the other tests read.
    const start = (appKey: string, roomId: string) => ({
      timestamp: 1_600_000_000_000,
      type: 1,
      appKey,
      recordId: 'rec-shared',
      roomId,
      sessionId: 's-shared',
      userId: '',
      mode: 3,
      extra: '',
      code: 200,
      errorMessage: 'success',
      config: { trigger: 1 },
    });
    const records = [start('shared-1', 'room-x'), start('shared-2', 'room-y')].map((b) =>
      sqsRecord('recording', b, { receivedAt: now }),
    );
    expect((await processBatch(sqsEvent(records), { store, log: createLogger('test') })).batchItemFailures).toEqual([]);

    for (const command of ['get', 'events']) {
      const run = await cli(['tasks', command, 'rec-shared']);
      expect(run).toEqual({
        code: 1,
        stdout: '',
        stderr:
          'callbacks: task id rec-shared is used by several appKeys (shared-1, shared-2): say which with --app-key\n',
      });
    }
    const x = await cliJson<any>(['tasks', 'get', 'rec-shared', '--app-key', 'shared-1']);
    expect(x).toMatchObject({ appKey: 'shared-1', roomId: 'room-x', eventCount: 1 });
    const y = await cliJson<any>(['tasks', 'get', 'rec-shared', '--app-key', 'shared-2']);
    expect(y).toMatchObject({ appKey: 'shared-2', roomId: 'room-y', eventCount: 1 });
    const events = await cliJson<any[]>(['tasks', 'events', 'rec-shared', '--app-key', 'shared-2']);
    expect(events.map((e) => e.body.roomId)).toEqual(['room-y']);
    const none = await cli(['tasks', 'get', 'rec-shared', '--app-key', 'shared-3']);
    expect(none.stderr).toBe(
      `callbacks: no task rec-shared of appKey shared-3 in the local stack at ${stack.url} (table ` +
        `${stack.info.tableName})\n`,
    );
  });

  test('--app-key: the task of that appKey, or none', async () => {
    const printed = await cliJson<unknown>(['tasks', 'get', '7nQ2f0vB-rec-001', '--app-key', 'demo-app']);
    expect(printed).toEqual(expectedTask('7nQ2f0vB-rec-001'));
    for (const command of ['get', 'events']) {
      const run = await cli(['tasks', command, '7nQ2f0vB-rec-001', '--app-key', 'other-app']);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `callbacks: no task 7nQ2f0vB-rec-001 of appKey other-app in the local stack at ${stack.url} (table ` +
          `${stack.info.tableName})\n`,
      );
    }
  });

  test('a task that is not there: one sentence on stderr, exit code 1', async () => {
    const run = await cli(['tasks', 'get', 'rec-x']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `callbacks: no task rec-x in the local stack at ${stack.url} (table ${stack.info.tableName})\n`,
    );
  });
});

describe('tasks list', () => {
  const ids = (list: TaskSummary[]) => list.map((s) => s.id);

  test('each filter goes through its index and lists newest first', async () => {
    const cases: [string[], string[]][] = [
      [[], ['rec-new-3', 'img-new-4', 'rec-new-2', 'rec-new-1']],
      [
        ['--room', 'room-a'],
        ['rec-new-2', 'rec-new-1'],
      ],
      [
        ['--session', 's-a1'],
        ['img-new-4', 'rec-new-1'],
      ],
      [
        ['--app-key', 'app-x'],
        ['img-new-4', 'rec-new-2', 'rec-new-1'],
      ],
      [['--app-key', 'app-x', '--status', 'recording'], ['rec-new-2']],
      [['--status', 'completed'], ['rec-new-1']],
      [['--room', 'room-b', '--status', 'capturing'], ['img-new-4']],
      [
        ['--since', '2h'],
        ['rec-new-3', 'img-new-4', 'rec-new-2'],
      ],
      [
        ['--since', '2h', '--until', '20m'],
        ['img-new-4', 'rec-new-2'],
      ],
      [
        ['--limit', '2'],
        ['rec-new-3', 'img-new-4'],
      ],
      [
        ['--room', 'room-1024', '--app-key', 'demo-app'],
        ['Kp4e-rec-002', 'img-5c1d9e', '7nQ2f0vB-rec-001'],
      ],
      [
        ['--since', '2025-11-22', '--until', '2025-11-23'],
        ['Kp4e-rec-002', 'img-5c1d9e', '7nQ2f0vB-rec-001'],
      ],
      [
        ['--app-key', 'demo-app', '--status', 'upload_failed', '--since', String(1763798400000)],
        ['img-5c1d9e', '7nQ2f0vB-rec-001'],
      ],
      [['--service', 'screenshot'], ['img-new-4']],
      [
        ['--service', 'recording', '--app-key', 'app-x'],
        ['rec-new-2', 'rec-new-1'],
      ],
      [['--user', 'user-alice', '--since', '2025-11-01'], ['Kp4e-rec-002']],
      [['--user', 'user-bob', '--since', '2025-11-01'], []],
    ];
    const results = await Promise.all(cases.map(([args]) => cliJson<TaskSummary[]>(['tasks', 'list', ...args])));
    results.forEach((list, i) => {
      expect({ args: cases[i]![0], ids: ids(list) }).toEqual({ args: cases[i]![0], ids: cases[i]![1] });
    });
    const completed = results[5]![0]!;
    expect(completed).toMatchObject({
      service: 'recording',
      appKey: 'app-x',
      status: 'completed',
      fileCount: 1,
      pendingFiles: 0,
      failedFiles: 0,
      eventCount: 3,
    });
  });

  test('--updated-since and --ended-since list by time of change and of end; --lost finds none here', async () => {
    const changed = await cli(['tasks', 'list', '--updated-since', '45m', '--json']);
    expect(changed.code).toBe(0);
    const recentIds = ids(JSON.parse(changed.stdout));
    expect(recentIds).toEqual(expect.arrayContaining(['img-new-4', 'rec-new-3']));
    for (const older of ['rec-new-1', 'rec-new-2', '7nQ2f0vB-rec-001']) expect(recentIds).not.toContain(older);
    const ended = await cli(['tasks', 'list', '--ended-since', '3h', '--app-key', 'app-x', '--no-color']);
    expect(ended.code).toBe(0);
    const lines = ended.stdout.trimEnd().split('\n');
    expect(lines[1]!.split(/\s{2,}/).slice(0, 4)).toEqual(['rec-new-1', 'app-x', 'recording', 'completed']);
    expect(lines.at(-1)).toBe('1 task, newest end hour first.');
    expect((await cli(['tasks', 'list', '--lost', '--stalled'])).stdout).toBe(
      'No task matches in the last 30 days (--since reaches further back).\n',
    );
    const bad = await cli(['tasks', 'list', '--ended-since', 'soon']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^callbacks: --ended-since: /);
  });

  test('the human table and the streamed JSON lines', async () => {
    const run = await cli(['tasks', 'list', '--room', 'room-1024', '--app-key', 'demo-app', '--no-color']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual([
      'ID',
      'APP KEY',
      'SERVICE',
      'STATUS',
      'ROOM',
      'SESSION',
      'USER',
      'STARTED',
      'ENDED',
      'DURATION',
      'UPLOADED',
      'FAILED',
      'PENDING',
      'EVENTS',
    ]);
    expect(lines[1]!.split(/\s{2,}/)).toEqual([
      'Kp4e-rec-002',
      'demo-app',
      'recording',
      'recording',
      'room-1024',
      'sN3kL9xQ2aT7',
      'user-alice',
      '2025-11-22T08:01:00Z',
      '-',
      '-',
      '0',
      '0',
      '0',
      '1',
    ]);
    expect(lines[2]!.split(/\s{2,}/)).toEqual([
      'img-5c1d9e',
      'demo-app',
      'screenshot',
      'upload_failed',
      'room-1024',
      'sN3kL9xQ2aT7',
      '-',
      '2025-11-22T08:00:00.500Z',
      '2025-11-22T08:05:00Z',
      '4 min',
      '1',
      '1',
      '0',
      '4',
    ]);
    expect(lines[3]!.split(/\s{2,}/)).toEqual([
      '7nQ2f0vB-rec-001',
      'demo-app',
      'recording',
      'upload_failed',
      'room-1024',
      'sN3kL9xQ2aT7',
      '-',
      '2025-11-22T08:00:00Z',
      '2025-11-22T09:30:00Z',
      '1 h 30 min',
      '1',
      '1',
      '0',
      '5',
    ]);
    expect(lines[4]).toBe('3 tasks, newest first.');
    // Without --app-key the room is read day by day, within the last 30 days: the fixtures are older.
    const everyAppKey = await cli(['tasks', 'list', '--room', 'room-1024', '--no-color']);
    expect(everyAppKey.stdout).toBe('No task matches in the last 30 days (--since reaches further back).\n');

    const jsonl = await cli(['tasks', 'list', '--jsonl']);
    const parsed = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as TaskSummary);
    expect(ids(parsed)).toEqual(['rec-new-3', 'img-new-4', 'rec-new-2', 'rec-new-1']);
  });

  test('--service narrows to one service; a reversed time range is an error', async () => {
    expect(ids(await cliJson<TaskSummary[]>(['tasks', 'list', '--service', 'screenshot']))).toEqual(['img-new-4']);
    expect(
      ids(await cliJson<TaskSummary[]>(['tasks', 'list', '--service', 'recording', '--app-key', 'app-x'])),
    ).toEqual(['rec-new-2', 'rec-new-1']);
    const reversed = await cli(['tasks', 'list', '--since', '1h', '--until', '2h']);
    expect(reversed).toEqual({
      code: 1,
      stdout: '',
      stderr: 'callbacks: --since is later than --until: the range is reversed\n',
    });
    const badService = await cli(['tasks', 'list', '--service', 'video']);
    expect(badService.code).toBe(1);
    expect(badService.stderr.split('\n')[0]).toMatch(
      /^error: option '--service <service>' argument 'video' is invalid/,
    );
  });

  test('--tz: times are printed in that zone, and a time typed without a zone is read in it', async () => {
    const shanghai = await cli([
      'tasks',
      'list',
      '--room',
      'room-1024',
      '--app-key',
      'demo-app',
      '--tz',
      'Asia/Shanghai',
    ]);
    const started = shanghai.stdout
      .split('\n')
      .slice(1, 4)
      .map((l) => l.split(/\s{2,}/)[7]);
    expect(started).toEqual([
      '2025-11-22T16:01:00+08:00',
      '2025-11-22T16:00:00.500+08:00',
      '2025-11-22T16:00:00+08:00',
    ]);
    // 16:00:30 in Shanghai is 08:00:30 UTC: only the task started at 08:01 is at or after it.
    const local = await cliJson<TaskSummary[]>([
      'tasks',
      'list',
      '--room',
      'room-1024',
      '--since',
      '2025-11-22T16:00:30',
      '--tz',
      'Asia/Shanghai',
    ]);
    expect(ids(local)).toEqual(['Kp4e-rec-002']);
    // The same text without --tz is read in UTC: eight hours later, nothing.
    expect(
      await cliJson<TaskSummary[]>(['tasks', 'list', '--room', 'room-1024', '--since', '2025-11-22T16:00:30']),
    ).toEqual([]);
    const get = await cli(['tasks', 'get', '7nQ2f0vB-rec-001', '--tz', 'America/New_York']);
    expect(get.stdout).toMatch(/^\s+started\s+2025-11-22T03:00:00-05:00 \(/m);
    const bad = await cli(['tasks', 'list', '--tz', 'Mars/Olympus']);
    expect(bad.stderr).toBe(
      'callbacks: "Mars/Olympus" is not a time zone: use an IANA name such as UTC, Asia/Shanghai or Europe/Berlin\n',
    );
  });

  test('a bad --since is refused with what is accepted', async () => {
    const run = await cli(['tasks', 'list', '--since', 'yesterday']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('"yesterday" is not a time: use a duration back from now');
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });
});

describe('tasks events', () => {
  test('the raw callbacks in timestamp order, with received-at and signature verdict', async () => {
    const run = await cli(['tasks', 'events', '7nQ2f0vB-rec-001']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    // The task began before the table's retention (7 days): the last line says where its older callbacks are.
    expect(lines.at(-1)).toMatch(
      /^Callbacks received before \S+ are no longer in the table, .* callbacks archive query /,
    );
    expect(lines.at(-1)).toMatch(/ AND task_id = '7nQ2f0vB-rec-001' ORDER BY received_at"$/);
    const rows = lines.slice(0, -1).map((l) => l.split(/\s{2,}/));
    expect(rows[0]).toEqual(['TYPE', 'TIMESTAMP', 'CODE', 'FILE', 'RECEIVED', 'SIGNATURE']);
    expect(rows.slice(1)).toEqual([
      ['1 start', '2025-11-22T08:00:00Z', '200', '-', '2025-11-22T08:00:00.180Z', 'valid'],
      [
        '2 slice',
        '2025-11-22T09:00:00Z',
        '200',
        'sN3kL9xQ2aT7_room-1024_1763798400000.mp4',
        '2025-11-22T09:00:00.180Z',
        'valid',
      ],
      [
        '4 upload',
        '2025-11-22T09:00:30Z',
        '200',
        'sN3kL9xQ2aT7_room-1024_1763798400000.mp4',
        '2025-11-22T09:00:30.180Z',
        'valid',
      ],
      [
        '3 end',
        '2025-11-22T09:30:00Z',
        '200',
        'sN3kL9xQ2aT7_room-1024_1763802000000.mp4',
        '2025-11-22T09:30:00.180Z',
        'valid',
      ],
      [
        '4 upload',
        '2025-11-22T09:30:10Z',
        '500',
        'sN3kL9xQ2aT7_room-1024_1763802000000.mp4',
        '2025-11-22T09:30:10.180Z',
        'valid',
      ],
    ]);
    const wide = await cli(['tasks', 'events', '7nQ2f0vB-rec-001', '--wide']);
    expect(
      wide.stdout
        .split('\n')[0]!
        .split(/\s{2,}/)
        .at(-1),
    ).toBe('EVENT KEY');
    expect(run.stdout).not.toContain('"errorMessage"');

    const raw = await cli(['tasks', 'events', '7nQ2f0vB-rec-001', '--raw']);
    expect(raw.stdout.split('\n')).toContain(`  ${fixture('recording-4-upload-failed.json')}`);
  });

  test('--json: the stored events with their bodies parsed', async () => {
    const events = await cliJson<any[]>(['tasks', 'events', 'img-5c1d9e']);
    expect(events.map((e) => e.timestamp)).toEqual([1763798400500, 1763798411000, 1763798421000, 1763798700000]);
    expect(events.map((e) => e.type)).toEqual([1, 4, 4, 3]);
    expect(events[2]).toMatchObject({
      receivedAt: 1763798421180,
      verdict: 'valid',
      key: expect.any(String),
      body: JSON.parse(fixture('screenshot-4-upload-failed.json')),
    });
  });

  test('events of a task that is not there: one sentence, exit code 1', async () => {
    const run = await cli(['tasks', 'events', 'rec-x']);
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `callbacks: no task rec-x in the local stack at ${stack.url} (table ${stack.info.tableName})\n`,
    });
  });
});

describe('quarantine list', () => {
  test('what was kept aside and why, newest first, with the source IP (unknown when not recorded)', async () => {
    const entries = await cliJson<any[]>(['quarantine', 'list']);
    expect(entries.map((e) => [e.reason, e.service, e.taskId, e.sourceIp, e.userAgent])).toEqual([
      ['invalid_callback', 'screenshot', null, null, null],
      ['invalid_signature', 'recording', 'rec-forged', '198.51.100.23', 'forger/1.0'],
    ]);
    const run = await cli(['quarantine', 'list', '--days', '1']);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]!.split(/\s{2,}/)).toEqual([
      'RECEIVED',
      'REASON',
      'SERVICE',
      'TASK',
      'APP KEY',
      'SOURCE',
      'SIGNATURE',
      'APPLIED',
      'DETAIL',
    ]);
    expect(lines[1]!.split(/\s{2,}/).slice(0, 6)).toEqual([
      new Date(now - 1000).toISOString().replace('.000Z', 'Z'),
      'invalid_callback',
      'screenshot',
      '-',
      '-',
      'unknown',
    ]);
    expect(lines[2]!.split(/\s{2,}/)).toEqual([
      new Date(now - 5000).toISOString().replace('.000Z', 'Z'),
      'invalid_signature',
      'recording',
      'rec-forged',
      'demo-app',
      '198.51.100.23',
      'invalid',
      '-',
      'the signature matches no configured secret of this appKey, its timestamp has a leading zero, or the request ' +
        'named another appKey',
    ]);
    const limited = await cliJson<any[]>(['quarantine', 'list', '--limit', '1']);
    expect(limited).toHaveLength(1);
  });

  test('--limit below the count says more exist, rather than giving the shown count as the total', async () => {
    const limited = await cli(['quarantine', 'list', '--limit', '1']);
    expect(limited.code).toBe(0);
    expect(limited.stdout.trimEnd().split('\n')).toHaveLength(3);
    expect(limited.stdout).toMatch(/\n1 shown of more than 1 callbacks quarantined in the last 7 days, newest first/);
    expect(limited.stdout).toContain('raise --limit (now 1) for the rest');
    const all = await cli(['quarantine', 'list', '--limit', '2']);
    expect(all.stdout).toMatch(
      /\n2 callbacks quarantined in the last 7 days, newest first \(2 not applied\); `--json`/,
    );
  });

  test('an unknown --reason is refused with the valid reasons, rather than matching nothing', async () => {
    const refused = await cli(['quarantine', 'list', '--reason', 'bogus']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(
      /--reason <reason>' argument 'bogus' is invalid\. Allowed choices are invalid_callback, /,
    );
    expect(refused.stderr).toContain('replayed_signature');
    const known = await cliJson<any[]>(['quarantine', 'list', '--reason', 'invalid_signature']);
    expect(known.map((e) => e.taskId)).toEqual(['rec-forged']);
  });
});

describe('callbacks send --timeout', () => {
  test('takes a duration (5s, or bare seconds), shows its default in seconds, refuses a bad one clearly', async () => {
    const received: string[] = [];
    const server = createServer((req, res) => {
      req.on('data', (chunk: Buffer) => received.push(chunk.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const body = join(dir, 'send-timeout.json');
      writeFileSync(body, JSON.stringify({ recordId: 'rec-t', appKey: 'demo-app', type: 1 }));
      for (const timeout of ['5s', '5', '1500ms']) {
        const run = await cli(['send', body, '--url', url, '--sign', 'none', '--timeout', timeout]);
        expect(run).toEqual({ code: 0, stdout: `POST ${url}/callbacks/recording -> 200 {"ok":true}\n`, stderr: '' });
      }
      expect(received).toHaveLength(3);
      for (const bad of ['soon', '0', '-1']) {
        const run = await cli(['send', body, '--url', url, '--timeout', bad]);
        expect(run.code).toBe(1);
        expect(run.stderr).toMatch(/^error: option '--timeout <duration>' argument '.*' is invalid\. /);
        expect(run.stderr).not.toMatch(/NaN/);
      }
      expect(received).toHaveLength(3);
      const help = await cli(['send', '--help']);
      expect(help.stdout).toMatch(/--timeout <duration>\s+give up after this long .*\(default: 10s\)/s);
      expect(help.stdout).not.toContain('10000');
    } finally {
      server.close();
    }
  });
});

describe('dlq', () => {
  test('list shows the messages and leaves them; redrive moves them back with their attributes', async () => {
    const listed = await cliJson<any[]>(['dlq', 'list']);
    expect(listed.map((m) => [m.service, m.appKey, m.type, m.taskId])).toEqual([
      ['recording', 'demo-app', 1, 'rec-dlq-1'],
      ['screenshot', 'demo-app', 1, 'img-dlq-2'],
      ['recording', 'other-app', 3, 'rec-dlq-3'],
    ]);
    const human = await cli(['dlq', 'list']);
    const lines = human.stdout.trimEnd().split('\n');
    const rows = lines.map((l) => l.split(/\s{2,}/));
    expect(rows[0]).toEqual(['MESSAGE ID', 'SENT', 'RECEIVES', 'SERVICE', 'APP KEY', 'TYPE', 'TASK']);
    expect(rows[1]!.slice(3)).toEqual(['recording', 'demo-app', '1 start', 'rec-dlq-1']);
    // Under each row, why the worker gave it up: these were put in the queue by hand, so it never said.
    expect(lines[2]).toMatch(/^ {2}no note of why \(dead-lettered before the worker kept notes/);
    expect(rows[7]!.join(' ')).toMatch(/^3 messages in http:.*callbacks-dlq/);
    // --limit below the count says how many were left out, rather than giving the shown count as the total.
    const limited = await cli(['dlq', 'list', '--limit', '2']);
    expect(limited.stdout.trimEnd().split('\n')).toHaveLength(6);
    expect(limited.stdout).toMatch(
      /\n2 shown of about 3 messages \(raise --limit, now 2\) in http:.*callbacks-dlq\.fifo;/,
    );

    const refused = await cli(['dlq', 'redrive']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'callbacks: dlq redrive moves messages: pass --yes to confirm when not at a terminal\n',
    );

    const one = await cli(['dlq', 'redrive', '--yes', '--max', '1']);
    expect(one.stdout).toBe(`Moved 1 message from ${stack.info.dlqUrl} to ${stack.info.queueUrl}.\n`);
    const rest = await cliJson<any>(['dlq', 'redrive', '--yes']);
    expect(rest).toMatchObject({
      from: stack.info.dlqUrl,
      to: stack.info.queueUrl,
      moved: 2,
      failed: [],
      notDeleted: [],
    });
    expect(rest.copies).toHaveLength(2);
    expect(await cliJson<any[]>(['dlq', 'list'])).toEqual([]);

    // Back in the main queue, the stack's worker applies them: their tasks appear.
    for (const id of ['rec-dlq-1', 'img-dlq-2', 'rec-dlq-3']) await eventually(id, () => store.getTask(id));
    const redriven = await cliJson<any>(['tasks', 'get', 'img-dlq-2']);
    expect(redriven).toMatchObject({ service: 'screenshot', appKey: 'demo-app', eventCount: 1 });
    const events = await cliJson<any[]>(['tasks', 'events', 'rec-dlq-1']);
    // The receive time travelled with the message: the ingest's, not the redrive's.
    expect(events.map((e) => [e.receivedAt, e.body])).toEqual([[1763798400000, JSON.parse(dlqBodies[0]!)]]);
  });

  test('list says how many wait behind the first of their task; redrive moves them all', async () => {
    // More of one group than a receive gives (ten, as SQS FIFO): the rest wait behind them while the look holds them.
    const group = taskGroupId('demo-app', 'rec-dlq-4');
    const bodies = [1, ...Array<number>(10).fill(2), 4].map((type, i) =>
      JSON.stringify({ ...JSON.parse(dlqBodies[0]!), recordId: 'rec-dlq-4', type, timestamp: 1763798500000 + i }),
    );
    for (const [i, body] of bodies.entries())
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: stack.info.dlqUrl,
          MessageBody: body,
          MessageAttributes: messageAttributes({
            body,
            service: 'recording',
            appKey: 'demo-app',
            receivedAt: 1763798500000 + i,
            requestId: null,
            verdict: 'valid',
            mode: 'enforce',
            replayKey: null,
          }),
          MessageGroupId: group,
          MessageDeduplicationId: `dlq-4-${i}`,
        }),
      );
    // A receive hands out ten of a group's messages, as SQS FIFO does: the last two wait behind them.
    const human = await cli(['dlq', 'list']);
    expect(human.stdout).toContain("2 more messages wait behind them in their task's message group");
    const moved = await cliJson<any>(['dlq', 'redrive', '--yes']);
    expect(moved).toMatchObject({ failed: [], notDeleted: [] });
    // The three of the group, after any the test before left.
    expect(moved.moved).toBeGreaterThanOrEqual(12);
    expect(await cliJson<any[]>(['dlq', 'list'])).toEqual([]);
    await eventually('rec-dlq-4', () => store.getTask('rec-dlq-4'));
  });
});

describe('targets', () => {
  test(
    'a stage that cannot be reached: one sentence naming table and region, ' + 'exit code 1, no stack trace',
    async () => {
      const run = await cli(['tasks', 'list', '--stage', 'nope', '--region', 'us-east-1'], {
        AWS_ACCESS_KEY_ID: 'bogus',
        AWS_SECRET_ACCESS_KEY: 'bogus',
        // A closed local port: the SDK fails at once and nothing reaches AWS.
        AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      });
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/^callbacks: stage nope in us-east-1 \(table rtc-callbacks-receiver-nope-tasks\): /);
      expect(run.stderr).not.toMatch(STACK_FRAME);
    },
  );

  test('read-only commands against a stage make only read calls on the table, and none to SQS', async () => {
    const dynamoTargets: string[] = [];
    const sqsRequests: string[] = [];
    const upstream = new URL(stack.info.dynamoEndpoint);
    const proxy = createServer((req, res) => {
      dynamoTargets.push(String(req.headers['x-amz-target']).split('.').pop()!);
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(forward);
    });
    const sqsTrap = createServer((req, res) => {
      sqsRequests.push(String(req.headers['x-amz-target']));
      res.writeHead(500).end();
    });
    const listen = (server: Server) =>
      new Promise<string>((resolve) =>
        server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)),
      );
    const env = {
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: await listen(proxy),
      AWS_ENDPOINT_URL_SQS: await listen(sqsTrap),
    };
    try {
      // The local stack's table is the one a stage named "local" would have.
      const stage = ['--stage', 'local', '--region', 'us-east-1'];
      for (const args of [
        ['tasks', 'get', '7nQ2f0vB-rec-001'],
        ['tasks', 'list', '--status', 'upload_failed'],
        ['tasks', 'list', '--room', 'room-1024', '--app-key', 'demo-app', '--json'],
        ['tasks', 'events', 'img-5c1d9e'],
        ['quarantine', 'list'],
        ['quarantine', 'list', '--task', 'rec-forged'],
      ]) {
        const run = await cli([...args, ...stage], env);
        expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      }
      expect(dynamoTargets.length).toBeGreaterThan(0);
      expect(dynamoTargets.filter((t) => !['BatchGetItem', 'GetItem', 'Query'].includes(t))).toEqual([]);
      expect(sqsRequests).toEqual([]);
    } finally {
      proxy.close();
      sqsTrap.close();
    }
  });

  test('a table named by TASKS_TABLE that cannot be reached: the same', async () => {
    const run = await cli(['tasks', 'get', 'x'], {
      TASKS_TABLE: 'my-tasks',
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'bogus',
      AWS_SECRET_ACCESS_KEY: 'bogus',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^callbacks: table my-tasks in eu-west-1: .+\n$/);
  });
});

describe('events tail', () => {
  // A recording task whose file failed to upload, then was uploaded: published through the stack's topic.
  const base = {
    appKey: 'app-ev',
    recordId: 'rec-ev-1',
    roomId: 'room-ev',
    sessionId: 's-ev',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
  };
  const t0 = now - 10 * 60_000;
  const bodies = [
    { ...base, timestamp: t0, type: 1, config: { trigger: 1 } },
    { ...base, timestamp: t0 + 60_000, type: 3, output: { fileName: 'ev.mp4', fileSize: 1000 } },
    { ...base, timestamp: t0 + 61_000, type: 4, code: 503, errorMessage: 'down', output: { fileName: 'ev.mp4' } },
    { ...base, timestamp: t0 + 71_000, type: 4, output: { fileName: 'ev.mp4', fileUrl: 'https://s/ev.mp4' } },
  ];

  beforeAll(async () => {
    const sns = new SNSClient({
      endpoint: stack.info.sqsEndpoint,
      region: stack.info.region,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const events = snsEventPublisher(sns, stack.info.eventsTopicArn!);
    const records = bodies.map((b) => sqsRecord('recording', JSON.stringify(b), { receivedAt: now }));
    // The retry's success in a batch of its own, as it comes seconds later: the failure is published first.
    for (const batch of [records.slice(0, 3), records.slice(3)]) {
      const res = await processBatch(sqsEvent(batch), { store, log: createLogger('test'), events, concurrency: 1 });
      expect(res.batchItemFailures).toEqual([]);
    }
    sns.destroy();
  });

  test('--json: one event per line, oldest first; the messages stay for the next reader', async () => {
    const expected = expectedTaskEvents(
      bodies.map((b) => {
        const r = parseCallback('recording', b);
        if (!r.ok) throw new Error(r.errors.join());
        return r.callback;
      }),
    );
    for (let i = 0; i < 2; i++) {
      const run = await cli(['events', 'tail', '--json', '--task', 'rec-ev-1']);
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const lines = run.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((e) => e.type)).toEqual([
        'task.started',
        'task.ended',
        'file.upload_failed',
        'file.uploaded',
        'file.upload_recovered',
        'task.completed',
      ]);
      expect(checkPublished(expected, lines)).toMatchObject({ ok: true, distinct: 6 });
    }
  });

  test('--type filters, and the human table names type, task, file and status', async () => {
    const run = await cli(['events', 'tail', '--type', 'file.upload_failed']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const rows = run.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^occurred\s+type\s+task\s+file\s+status\s+id$/);
    expect(rows.slice(1)).toHaveLength(1);
    expect(rows[1]).toMatch(/file\.upload_failed\s+recording rec-ev-1\s+ev\.mp4\s+upload_failed\s+[0-9a-f]{32}$/);
    const refused = await cli(['events', 'tail', '--type', 'file.gone']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--type <type>' argument 'file\.gone' is invalid/);
    const alone = await cli(['events', 'tail', '--new-only']);
    expect(alone).toMatchObject({ code: 1, stderr: 'callbacks: --new-only goes with --follow\n' });
  });

  test('--follow: followers each see every event (--new-only: the new ones), hold no shared message', async () => {
    const followers = ([[], [], ['--new-only']] as string[][]).map((extra) => {
      const child = spawn(nodeBin, [cliBin, 'events', 'tail', '--follow', '--json', ...extra], {
        cwd: dir,
        env: childEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const out = { stdout: '', stderr: '' };
      child.stdout.on('data', (d) => (out.stdout += d));
      child.stderr.on('data', (d) => (out.stderr += d));
      const exit = new Promise<number | null>((resolve) => child.on('exit', resolve));
      const ids = () =>
        out.stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { id: string; task?: { id: string } });
      return { child, out, exit, ids };
    });
    const prefix = `${stack.info.eventsTopicArn!.split(':').pop()}-follow-`;
    const followQueues = async () =>
      ((await sqs.send(new ListQueuesCommand({ QueueNamePrefix: prefix }))).QueueUrls ?? []).length;
    // What the followers printed, should one not get there.
    const until = (what: () => Promise<boolean> | boolean, label: string) =>
      eventually(
        label,
        async () => ((await what()) ? true : followers.map((f) => f.out)),
        (v) => v === true,
      );
    try {
      // Each has its own queue on the topic and has printed the history (the events of rec-ev-1).
      await until(async () => (await followQueues()) === 3, 'three follow queues');
      const newOnly = followers[2]!;
      await until(
        () => followers.slice(0, 2).every((f) => f.ids().filter((e) => e.task?.id === 'rec-ev-1').length >= 6),
        'history',
      );
      const sns = new SNSClient({
        endpoint: stack.info.sqsEndpoint,
        region: stack.info.region,
        credentials: LOCAL_CREDENTIALS,
      });
      const base = {
        appKey: 'app-fl',
        recordId: 'rec-fl-1',
        roomId: 'room-fl',
        sessionId: 's-fl',
        userId: '',
        mode: 3,
      };
      const lifecycle = [
        { ...base, timestamp: now - 5000, type: 1, code: 200, config: { trigger: 1 } },
        { ...base, timestamp: now - 4000, type: 3, code: 200, output: { fileName: 'fl.mp4', fileSize: 10 } },
        { ...base, timestamp: now - 3000, type: 4, code: 200, output: { fileName: 'fl.mp4', fileUrl: 'https://s/fl' } },
      ];
      const res = await processBatch(
        sqsEvent(lifecycle.map((b) => sqsRecord('recording', JSON.stringify(b), { receivedAt: now }))),
        { store, log: createLogger('test'), events: snsEventPublisher(sns, stack.info.eventsTopicArn!) },
      );
      sns.destroy();
      expect(res.batchItemFailures).toEqual([]);
      const published = ['task.started', 'task.ended', 'file.uploaded', 'task.completed'];
      await until(
        () => followers.every((f) => f.ids().filter((e) => e.task?.id === 'rec-fl-1').length === published.length),
        'the new events',
      );
      const seen = followers.map((f) =>
        f
          .ids()
          .filter((e) => e.task?.id === 'rec-fl-1')
          .map((e) => (e as unknown as { type: string }).type)
          .sort(),
      );
      expect(seen).toEqual([[...published].sort(), [...published].sort(), [...published].sort()]);
      // The follower started with --new-only printed nothing published before it started: none of the history's task
      // events (storage events, which name no task, may be published by the verifier at any time).
      expect(newOnly.ids().filter((e) => e.task !== undefined && e.task.id !== 'rec-fl-1')).toEqual([]);
      // Following holds none of the shared queue's messages: a plain tail sees every one of them meanwhile.
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: stack.info.eventsQueueUrl!, AttributeNames: ['All'] }),
      );
      expect(Attributes?.ApproximateNumberOfMessagesNotVisible).toBe('0');
      const plain = await cli(['events', 'tail', '--json', '--task', 'rec-fl-1']);
      expect(plain.stdout.trimEnd().split('\n')).toHaveLength(published.length);
    } finally {
      for (const f of followers) f.child.kill('SIGINT');
    }
    expect(await Promise.all(followers.map((f) => f.exit))).toEqual([0, 0, 0]);
    expect(followers.map((f) => f.out.stderr)).toEqual(['', '', '']);
    expect(await followQueues()).toBe(0);
  });

  test('a deployed table without --queue-url: one sentence saying what to pass; with it, the events', async () => {
    const deployed = {
      TASKS_TABLE: stack.info.tableName,
      AWS_REGION: stack.info.region,
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      AWS_ENDPOINT_URL_DYNAMODB: stack.info.dynamoEndpoint,
      AWS_ENDPOINT_URL_SQS: stack.info.sqsEndpoint,
    };
    const run = await cli(['events', 'tail'], deployed);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^callbacks: table .+: no queue subscribed to the task-events topic is known; pass --queue-url/,
    );
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    const given = await cli(['events', 'tail', '--json', '--queue-url', stack.info.eventsQueueUrl!], deployed);
    expect(given).toMatchObject({ code: 0, stderr: '' });
    expect(given.stdout).toContain('"rec-ev-1"');
  });
});

describe('quarantine apply', () => {
  test('went newest first: the forged replay is reported as a replay, the genuine callback applied', async () => {
    // On a whole second, as the summary prints it.
    const receivedAt = Math.floor(now / 1000) * 1000 - 60_000;
    const nonce = 'n-cli-replay';
    const timestamp = String(Math.floor(receivedAt / 1000));
    const heldSignature = {
      nonce,
      timestamp,
      signature: computeSignature(DEFAULT_SECRETS['demo-app'][0], nonce, timestamp),
      from: { nonce: 'header', timestamp: 'header', signature: 'header' } as const,
    };
    const genuine = {
      timestamp: receivedAt - 500,
      type: 1,
      appKey: 'demo-app',
      recordId: 'rec-cli-replay',
      roomId: 'room-q',
      sessionId: 's-q',
      code: 200,
    };
    const set = (messageId: string, body: object, at: number, sourceIp: string) =>
      sqsRecord('recording', body, {
        messageId,
        verdict: 'invalid',
        mode: 'report',
        receivedAt: at,
        heldSignature,
        sender: { sourceIp },
      });
    const res = await processBatch(
      sqsEvent([
        set('m-genuine', genuine, receivedAt, '203.0.113.7'),
        set('m-forged', { ...genuine, roomId: 'room-forged' }, receivedAt + 2000, '198.51.100.66'),
        // The same signature on a body that names another task.
        set('m-elsewhere', { ...genuine, recordId: 'rec-cli-elsewhere' }, receivedAt + 3000, '198.51.100.66'),
      ]),
      { store, log: createLogger('test') },
    );
    expect(res.outcomes).toEqual(['quarantined', 'quarantined', 'quarantined']);

    // A filter that leaves out the genuine callback does not let a replay of it through.
    const elsewhere = await cliJson<any>(['quarantine', 'apply', '--task', 'rec-cli-elsewhere', '--dry-run']);
    expect(elsewhere).toMatchObject({ matched: 1, wouldApply: 0, stillFailing: 1 });
    expect(elsewhere.entries[0]).toMatchObject({ messageId: 'm-elsewhere', kind: 'replay', replayOf: 'm-genuine' });

    const dry = await cliJson<any>(['quarantine', 'apply', '--task', 'rec-cli-replay', '--dry-run']);
    expect(dry).toMatchObject({ matched: 2, wouldApply: 1, stillFailing: 1 });
    expect(dry.entries.map((e: any) => [e.messageId, e.outcome, e.kind, e.replayOf, e.sourceIp])).toEqual([
      ['m-genuine', 'would_apply', undefined, undefined, '203.0.113.7'],
      ['m-forged', 'failing', 'replay', 'm-genuine', '198.51.100.66'],
    ]);

    // The local stack's own topic: the TASK_EVENTS_TOPIC_ARN the stack set in this process names it without
    // its endpoint.
    const run = await cli(['quarantine', 'apply', '--task', 'rec-cli-replay', '--yes'], { TASK_EVENTS_TOPIC_ARN: '' });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/: 1 applied, 0 duplicate \(already applied\), 1 still failing\.\n/);
    expect(run.stdout).toContain(
      `  replay: m-forged (received ${new Date(receivedAt + 2000).toISOString().replace(/\.\d{3}Z$/, 'Z')}, ` +
        'task rec-cli-replay, source 198.51.100.66) repeats the signature of m-genuine\n',
    );
    expect((await store.getTask('rec-cli-replay'))?.roomId).toBe('room-q');
  });

  test('--source: only with --accept-unverified, and a range that does not parse is named', async () => {
    expect(await cli(['quarantine', 'apply', '--source', '203.0.113.0/24'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'callbacks: --source narrows --accept-unverified: give both, or neither\n',
    });
    const bad = await cli([
      'quarantine',
      'apply',
      '--accept-unverified',
      '--source',
      '203.0.113.0/24',
      '--source',
      '10.0.0.0/33',
    ]);
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    // Refused as the option is read, as --allow-cidr's ranges are.
    expect(bad.stderr).toMatch(/^error: option '--source <cidr>' argument '10\.0\.0\.0\/33' is invalid\./);
    expect(bad.stderr).toContain('"10.0.0.0/33" has a prefix length outside 0 to 32');
  });

  test('--accept-unverified alone accepted every unsigned entry: --source, --reason or --all-unverified', async () => {
    const alone = await cli(['quarantine', 'apply', '--accept-unverified', '--yes']);
    expect(alone).toMatchObject({ code: 1, stdout: '' });
    expect(alone.stderr).toBe(
      'callbacks: --accept-unverified applies callbacks whose signature does not verify, forgeries included: narrow ' +
        "it with --source <cidr> (the sender's addresses) or --reason <reason>, or give --all-unverified to accept " +
        'every one\n',
    );
    // Nothing was applied: the forged callback is still only in the quarantine.
    expect(await store.getTask('rec-forged')).toBeNull();
    expect(await cli(['quarantine', 'apply', '--all-unverified', '--dry-run'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'callbacks: --all-unverified goes with --accept-unverified: give both, or neither\n',
    });
    const forged = (run: any) => run.entries.find((e: any) => e.sourceIp === '198.51.100.23');
    // Narrowed by the reason it was set aside for, or accepted whole on purpose: each says what it would apply.
    for (const narrowing of [['--reason', 'invalid_signature'], ['--all-unverified']]) {
      const dry = await cliJson<any>(['quarantine', 'apply', '--accept-unverified', ...narrowing, '--dry-run']);
      expect({ narrowing, outcome: forged(dry)?.outcome }).toEqual({ narrowing, outcome: 'would_apply' });
    }
    // By the sender's address: the forgery came from elsewhere.
    const fromSender = await cliJson<any>([
      'quarantine',
      'apply',
      '--accept-unverified',
      '--source',
      '203.0.113.0/24',
      '--task',
      'rec-forged',
      '--dry-run',
    ]);
    expect(fromSender).toMatchObject({ matched: 1, wouldApply: 0, stillFailing: 1 });
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
