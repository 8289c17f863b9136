// What an operator woken at night reads, on a real terminal with colours on (a pseudo-terminal: test/support/
// terminal.ts) and piped: `status` saying what is wrong now, `tasks list` fitting the terminal and its PURGE column,
// `recount` saying what it changed, `dlq list` with each message's error, `verify` saying that only facts of time
// differ, and a big `send --lifecycle`. On the terminal the coloured parts are coloured, never escape codes written
// out as text; piped, the same output has no escape at all.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { writeExpectFile } from '../devkit/emulator/expect.ts';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { DynamoMessageNotes } from '../lib/aws/dynamo/write/message-notes.ts';
import { TableClient } from '../lib/aws/dynamo/table/table-client.ts';
import { Keys } from '../lib/aws/dynamo/table/table.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import { parseCallback } from '../lib/domain/callback.ts';
import { defaultTimeSettings } from '../lib/domain/deadlines.ts';
import { reduceTask } from '../lib/domain/reduce-task.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { createLogger } from '../lib/log.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { postSigned, runCli } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';
import { hasScript, onTerminal } from './support/terminal.ts';

type Body = Record<string, unknown>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const HOUR = 3_600_000;
const ESC = '\u001b[';
const ESCAPE_AS_TEXT = /\\x1b|\\u001b/;
const RED = `${ESC}31m`;
const YELLOW = `${ESC}33m`;
const GREEN = `${ESC}32m`;

let cwd: string;
let stack: LocalStack;
let target: Target;

/** A recording's start, end with one file, and upload, its upload at `uploadAt` (failed unless `ok`). */
function recording(recordId: string, startAt: number, uploadAt: number, ok = false): Body[] {
  const fileName = `${recordId}.mp4`;
  const body = (name: string, timestamp: number, output: Body) => ({ ...fixture(name), recordId, timestamp, output });
  return [
    body('recording-1-start-mix', startAt, { fileName }),
    body('recording-3-end', startAt + 30 * 60_000, { fileName, fileSize: 1024 }),
    body(ok ? 'recording-4-upload-ok' : 'recording-4-upload-failed', uploadAt, { fileName, fileUrl: '' }),
  ];
}

async function post(service: 'recording' | 'screenshot', bodies: Body[]): Promise<void> {
  for (const b of bodies) expect((await postSigned(stack.url, service, b)).status).toBe(200);
}

const applied = (id: string, events: number) =>
  eventually(
    `task ${id}`,
    () => target.tasks.getTask(id),
    (t) => t?.eventCount === events,
  );

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-operator-'));
  // New tasks armed at once (SETTLE_AFTER of 1 ms) and swept here, not on a schedule; report mode keeps an unsigned
  // callback aside.
  stack = await startLocalStack({
    port: 0,
    memory: true,
    cwd,
    quiet: true,
    signatureMode: 'report',
    scheduleEveryMs: 0,
    settleAfter: '1ms',
  });
  target = await openTarget({ cwd, env: {} });
  const now = Date.now();
  // An upload failing ten minutes ago, a file lost a day ago, a screenshot task silent for two hours.
  await post('recording', recording('rec-op-failing', now - 2 * HOUR, now - 10 * 60_000));
  await post('recording', recording('rec-op-lost', now - 27 * HOUR, now - 25 * HOUR));
  await post('screenshot', [
    { ...fixture('screenshot-1-start'), imageId: 'img-op-stalled', timestamp: now - 2 * HOUR },
  ]);
  const unsigned = await fetch(`${stack.url}/callbacks/screenshot`, {
    method: 'POST',
    body: JSON.stringify({ ...fixture('screenshot-1-start'), imageId: 'img-op-unsigned', timestamp: now }),
  });
  expect(unsigned.status).toBe(200);
  await Promise.all([applied('rec-op-failing', 3), applied('rec-op-lost', 3), applied('img-op-stalled', 1)]);
  const swept = await sweep(now + 6 * 60_000, {
    sweeps: new TaskSweeps(new TableClient(stack.tableClient(), stack.info.tableName)),
    events: { publish: async () => {} },
    time: { ...defaultTimeSettings, settleAfterMs: 1 },
    log: createLogger('test'),
    lookBackMs: 3 * HOUR,
  });
  expect(swept).toMatchObject({ stalled: 1, lost: 1 });
  // A dead letter, with the worker's note of why it gave it up.
  const sqs = new SQSClient({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
  });
  const text = JSON.stringify({ ...fixture('recording-1-start-mix'), recordId: 'rec-op-dead', timestamp: now });
  const sent = await sqs.send(
    new SendMessageCommand({
      QueueUrl: stack.info.dlqUrl,
      MessageBody: text,
      MessageAttributes: messageAttributes({
        body: text,
        service: 'recording',
        appKey: 'demo-app',
        receivedAt: now,
        requestId: null,
        verdict: 'valid',
        mode: 'enforce',
        replayKey: null,
      }),
      MessageGroupId: taskGroupId('demo-app', 'rec-op-dead'),
      MessageDeduplicationId: 'op-dead',
    }),
  );
  sqs.destroy();
  await new DynamoMessageNotes(stack.tableClient(), stack.info.tableName).write([
    {
      messageId: sent.MessageId!,
      outcome: 'given_up',
      error: 'ProvisionedThroughputExceededException: Rate of requests exceeds the allowed throughput.',
      at: now,
      receiveCount: 5,
      service: 'recording',
      appKey: 'demo-app',
      taskId: 'rec-op-dead',
      type: 1,
    },
  ]);
  // A task whose file is lost by now, after the sweep: the receiver has not found it yet, though the run that sent it
  // (the expect file) ended an hour ago.
  const late = recording('rec-op-late', now - 27 * HOUR, now - 25 * HOUR);
  await post('recording', late);
  await applied('rec-op-late', 3);
  const expected = reduceTask(
    late.map((b) => {
      const parsed = parseCallback('recording', b);
      if (!parsed.ok) throw new Error(parsed.errors.join());
      return parsed.callback;
    }),
  )!;
  await writeExpectFile(join(cwd, 'expect.json'), [expected], new Date(now - HOUR));
}, 120_000);

afterAll(async () => {
  await target?.close();
  await stack?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

const terminalTest = hasScript ? test : test.skip;
const lineWith = (shown: string, text: string) => shown.split('\n').find((l) => l.includes(text)) ?? '';
/** Piped: exit 0 (or `code`), and no escape of either kind. */
async function piped(args: string[], code = 0): Promise<string> {
  const run = await runCli(args, { cwd });
  expect({ args, code: run.code }).toEqual({ args, code });
  expect(run.stdout).not.toContain('\u001b');
  expect(run.stdout).not.toMatch(ESCAPE_AS_TEXT);
  return run.stdout;
}

terminalTest('status: what is wrong now, each part coloured by what it asks of the reader', async () => {
  const shown = await onTerminal(['status'], cwd, { columns: 200 });
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  expect(lineWith(shown, 'failing uploads')).toContain(
    `${YELLOW}1 file${ESC}39m failing in 1 task changed in the last`,
  );
  expect(lineWith(shown, 'lost files')).toContain(`${RED}1 file${ESC}39m in 1 task of the last 7 days`);
  expect(lineWith(shown, 'stalled tasks')).toContain(`${YELLOW}1 task${ESC}39m of the last 7 days`);
  // The file of the task the sweeper has not come to yet: its purge passed an hour ago.
  expect(lineWith(shown, 'next purge')).toMatch(
    /\u001b\[31m\S+ \(60 min ago\), passed: deleted by the platform, lost once swept\u001b\[39m: rec-op-late\.mp4 of/,
  );
  expect(lineWith(shown, 'dead letters')).toContain(`${YELLOW}1 message${ESC}39m: ${ESC}2mcallbacks dlq list${ESC}22m`);
  expect(lineWith(shown, 'quarantine')).toContain(`${YELLOW}1 callback${ESC}39m waiting`);
  const text = await piped(['status']);
  expect(text).toMatch(/failing uploads\s+1 file failing in 1 task changed in the last hour: callbacks tasks list/);
  expect(text).toMatch(/last callback\s+received by /);
});

terminalTest(
  'tasks list: a 100-column terminal gets the columns that fit, and is told which are left out',
  async () => {
    const shown = await onTerminal(['tasks', 'list'], cwd, { columns: 100 });
    expect(shown).not.toMatch(ESCAPE_AS_TEXT);
    const lines = shown.trimEnd().split('\n');
    for (const line of lines.slice(0, -1)) expect(stripVTControlCharacters(line).length).toBeLessThanOrEqual(100);
    expect(lines.at(-1)).toMatch(/left out to fit 100 columns: --wide shows them\./);
    expect(lineWith(shown, 'img-op-stalled')).toMatch(/\u001b\[33mstalled \d+ (min|h)/);
    // Piped, every column.
    const text = await piped(['tasks', 'list']);
    expect(text.split('\n')[0]!.split(/\s{2,}/)).toHaveLength(14);
    // --purge-before: the PURGE column, coloured, the soonest first.
    const purge = await onTerminal(['tasks', 'list', '--purge-before', '24h'], cwd, { columns: 100 });
    expect(lineWith(purge, 'rec-op-failing')).toMatch(/\u001b\[33m\S+ \(in 23 h [45]\d min\)\u001b\[39m$/);
    expect(lineWith(purge, 'rec-op-late')).toMatch(/\u001b\[31m\S+ \(passed\)\u001b\[39m$/);
    const rows = (await piped(['tasks', 'list', '--purge-before', '24h'])).split('\n');
    expect(rows[0]).toMatch(/ PURGE$/);
    expect(rows.slice(1, 3).map((r) => r.split(' ')[0])).toEqual(['rec-op-late', 'rec-op-failing']);
    // An empty --since listing says what --since reads.
    expect(await piped(['tasks', 'list', '--since', '1m', '--status', 'completed'])).toMatch(
      /^No task matches: --since 1m is by first callback, .* --updated-since 1m lists the tasks changed since \w+\.\n$/,
    );
  },
);

terminalTest('recount: each count it corrected, before in red and after in green; then that it was right', async () => {
  const key = { pk: { S: Keys.taskPk('rec-op-failing') }, sk: { S: Keys.headerSk('demo-app') } };
  await stack.tableClient().send(
    new UpdateItemCommand({
      TableName: stack.info.tableName,
      Key: key,
      UpdateExpression: 'SET nEvents = :e',
      ExpressionAttributeValues: { ':e': { N: '9' } },
    }),
  );
  const shown = await onTerminal(['recount', 'rec-op-failing'], cwd);
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  expect(shown).toContain(`${YELLOW}1 count${ESC}39m corrected`);
  expect(shown.split('\n').find((l) => l.startsWith('callbacks'))).toMatch(
    new RegExp(`^callbacks\\s+\\u001b\\[31m9\\u001b\\[39m\\s+${GREEN.replace('[', '\\[')}3`),
  );
  const right = await piped(['recount', 'rec-op-failing']);
  expect(right).toMatch(/^Task rec-op-failing \(appKey demo-app\) was counted right in .*: /);
  expect(right).toMatch(/: 1 file \(0 uploaded, 1 failed, 0 pending\), 3 callbacks; nothing changed\.\n$/);
});

terminalTest("dlq list: under each message, the worker's error in red", async () => {
  const shown = await onTerminal(['dlq', 'list'], cwd, { columns: 200 });
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  expect(shown).toContain(`${RED}ProvisionedThroughputExceededException: Rate of requests exceeds the allowed`);
  expect(await piped(['dlq', 'list'])).toMatch(
    /rec-op-dead\n {2}given up at receive 5, \S+: ProvisionedThroughputExceededException: Rate of requests/,
  );
});

terminalTest('verify: only facts of time differ, said in yellow with when to run it again', async () => {
  const args = ['verify', '--expect', 'expect.json', '--timeout', '1ms', '--no-progress'];
  const shown = await onTerminal(args, cwd);
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  expect(shown).toContain(`${YELLOW}Only facts of time differ (lost files, stalls, settles and their events)`);
  const text = await piped(args, 1);
  expect(text).toMatch(/^rec-op-late: counts\.lost: expected 1, got 0\n/);
  expect(text).toContain('rec-op-late: files[0] (rec-op-late.mp4).upload: expected "lost", got "failed"\n');
  expect(text).toMatch(
    /\nOnly facts of time differ .* Run verify again after \S+, or with a --timeout that reaches it\.\n$/,
  );
});

terminalTest('send --lifecycle of a big task: a progress bar on the terminal, then the count', async () => {
  const args = ['send', '--lifecycle', 'screenshot', '--images', '220', '--seed', 'op-big'];
  const shown = await onTerminal(args, cwd);
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  expect(shown).toMatch(/sending \[.*\] \d+\/\d+ callbacks/);
  expect(shown).toMatch(/\d+ callbacks of screenshot task \S+, all accepted \(beyond 200 callbacks, only those not/);
  expect(await piped([...args.slice(0, -1), 'op-big-2'])).toMatch(
    /^\d+ callbacks of screenshot task \S+, all accepted \(beyond 200 callbacks, only those not \w+ are \w+\)\.\n$/,
  );
});
