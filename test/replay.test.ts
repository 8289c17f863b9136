// `callbacks replay`: the archived callbacks of a window sent back to the callback queue of a local stack whose worker
// archives what it stores (test/support/archive-stack.ts), as the ingest sent them and marked as a replay; a dry run
// sends nothing; a window already applied changes no task and publishes no new event id; callbacks the table lost
// (restored from an older backup) are applied again, a window at a time, --limit at a time, continued by the cursor.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS, SERVICE } from '../devkit/local/deployed-settings.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { EventQueueReader } from '../lib/aws/sqs/event-queue.ts';
import { type ArchiveLine, partitionOf } from '../lib/domain/archive.ts';
import { setAsideGroupId, taskGroupId } from '../lib/fifo-ids.ts';
import { setLogSink } from '../lib/log.ts';
import { REPLAYED_COLUMNS } from '../lib/aws/sqs/replay.ts';
import { startAthenaStandIn } from './support/athena-stand-in.ts';
import { type ArchivingStack, startArchivingStack } from './support/archive-stack.ts';
import { postSigned, runCliHere } from './support/cli-process.ts';
import { terminalIo } from './support/terminal-io.ts';
import { run as runCallbacks } from '../cli/main.ts';
import { eventually } from './support/eventually.ts';

type Body = Record<string, any>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;

let cwd: string;
let archiving: ArchivingStack;
let target: Target;
/** The test's own client of the stack's queues (the CLI's holds to the operators' policy). */
let sqs: SQSClient;
let events: EventQueueReader;
const logLines: Body[] = [];
let restoreSink: ReturnType<typeof setLogSink>;
/** The window of the callbacks posted: from before the first to after the last. */
let from: string;
let to: string;

const cli = (args: string[]) => runCliHere(args, { cwd });
const replay = async (args: string[]) => {
  const res = await cli(['replay', '--from', from, '--to', to, ...args]);
  expect(res).toMatchObject({ code: 0, stderr: '' });
  return res.stdout;
};
const replayJson = async (args: string[]) => JSON.parse(await replay([...args, '--json']));

/** Every message of the stack's mapped queues taken (the callbacks, the verifier's events), every batch done. */
async function settled(): Promise<void> {
  const { stack } = archiving;
  const mapped = stack.settings.queues.filter((q) => stack.settings.mappings.some((m) => m.queue === q.logicalId));
  const waiting = async () => {
    let messages = 0;
    for (const queue of mapped) {
      const { Attributes: a = {} } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['All'] }),
      );
      messages +=
        Number(a.ApproximateNumberOfMessages ?? 0) +
        Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
        Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
    }
    return messages + stack.pollers.reduce((n, p) => n + p.busy(), 0);
  };
  await eventually('the queues empty and the functions idle', waiting, (n) => n === 0, { timeoutMs: 30_000 });
}

/** The contract's task object, as `tasks get --json` prints it. */
const taskJson = async (id: string) => {
  const res = await cli(['tasks', 'get', id, '--json']);
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout) as Body;
};

const archivedCount = async (where: string) => {
  const res = await cli(['archive', 'query', '--json', `SELECT count(*) AS n FROM raw WHERE ${where}`]);
  return (JSON.parse(res.stdout) as { n: number }[])[0]!.n;
};

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-replay-'));
  // The worker's log lines, to read what it says of a replay.
  restoreSink = setLogSink((line) => {
    try {
      logLines.push(JSON.parse(line) as Body);
    } catch {
      // Not a JSON line.
    }
  });
  archiving = await startArchivingStack({
    port: 0,
    memory: true,
    cwd,
    scheduleEveryMs: 0,
    secrets: { 'demo-app': ['demo-secret'], 'app-2': ['secret-2'] },
  });
  target = await openTarget({ cwd, env: {} });
  const { info } = archiving.stack;
  sqs = new SQSClient({ endpoint: info.sqsEndpoint, region: info.region, credentials: LOCAL_CREDENTIALS });
  events = new EventQueueReader(target.sqs, archiving.stack.info.eventsQueueUrl!, { contendedWaitMs: 0 });
  from = new Date(Date.now() - 1000).toISOString();
  const url = archiving.stack.url;
  const rec = (name: string) => ({ ...fixture(name), recordId: 'rec-rp-1' });
  for (const name of ['recording-1-start-mix', 'recording-2-slice', 'recording-3-end', 'recording-4-upload-ok'])
    expect((await postSigned(url, 'recording', rec(name))).status).toBe(200);
  const shot = (name: string) => ({ ...fixture(name), appKey: 'app-2', imageId: 'img-rp-1' });
  for (const name of ['screenshot-1-start', 'screenshot-4-upload-ok', 'screenshot-3-end'])
    expect((await postSigned(url, 'screenshot', shot(name), 'secret-2')).status).toBe(200);
  const other = { ...fixture('recording-1-start-single'), appKey: 'app-2', recordId: 'rec-rp-2' };
  expect((await postSigned(url, 'recording', other, 'secret-2')).status).toBe(200);
  await settled();
  await eventually(
    'the 8 callbacks archived',
    () => archivedCount('true'),
    (n) => n === 8,
    { timeoutMs: 30_000 },
  );
  to = new Date(Date.now() + 1000).toISOString();
}, 90_000);

afterAll(async () => {
  sqs?.destroy();
  await target?.close();
  await archiving?.stop();
  if (restoreSink) setLogSink(restoreSink);
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

test('a dry run prints the exact count and each message it would send, and sends nothing', async () => {
  const before = { ...archiving.stack.poller.stats };
  const dry = await replayJson(['--dry-run']);
  expect(dry).toMatchObject({ dryRun: true, count: 8, more: false, filters: { appKey: null, cursor: null } });
  expect(dry.wouldSend).toHaveLength(8);
  // In the order of receipt; each in its task's message group, with the attributes the ingest gave it.
  const first = dry.wouldSend[0];
  expect(first).toMatchObject({
    service: 'recording',
    app_key: 'demo-app',
    task_id: 'rec-rp-1',
    type: 1,
    verdict: 'valid',
    outcome: 'applied',
    groupId: taskGroupId('demo-app', 'rec-rp-1'),
    body: JSON.stringify({ ...fixture('recording-1-start-mix'), recordId: 'rec-rp-1' }),
  });
  expect(first.attributes).toMatchObject({
    service: { DataType: 'String', StringValue: 'recording' },
    appKey: { DataType: 'String', StringValue: 'demo-app' },
    receivedAt: { DataType: 'Number', StringValue: String(Date.parse(first.received_at)) },
    requestId: { DataType: 'String', StringValue: first.request_id },
    signatureVerdict: { DataType: 'String', StringValue: 'valid' },
    signatureMode: { DataType: 'String', StringValue: 'enforce' },
    resentBy: { DataType: 'String', StringValue: 'archive-replay' },
  });
  expect(first.request_id).toBe(first.delivery_id);
  const times = dry.wouldSend.map((r: Body) => r.received_at);
  expect(times).toEqual([...times].sort());
  expect(dry.cursor).toBe(`${dry.wouldSend[7].received_at}/${dry.wouldSend[7].delivery_id}`);
  // A filter by appKey and type, in words; the limit cuts what would be sent, not the count.
  const human = await replay(['--dry-run', '--app-key', 'app-2', '--type', '1', '--limit', '1']);
  const lines = human.split('\n');
  expect(lines[0]).toBe(
    `2 archived callbacks match (received ${from} to ${to}, appKey ` +
      'app-2, type 1 start): a dry run, nothing is sent.',
  );
  expect(lines[1]).toMatch(/^RECEIVED +SERVICE +APP KEY +TYPE +TASK +VERDICT +OUTCOME +DELIVERY$/);
  expect(lines[2]).toMatch(/^\S+Z +screenshot +app-2 +1 start +img-rp-1 +valid +applied +\S+$/);
  expect(lines[3]).toMatch(
    new RegExp(
      "^The first 1 callback \\(--limit 1\\) would be sent to \\S+callbacks\\.fifo, each in its task's message " +
        'group, marked as a replay \\(resentBy archive-replay\\); the rest after --cursor \\S+Z/\\S+\\.$',
    ),
  );
  expect(lines).toHaveLength(5);
  // Nothing reached the queue.
  expect(archiving.stack.poller.stats).toEqual(before);
  expect(await target.queue.depth()).toEqual({ visible: 0, inFlight: 0, delayed: 0 });
});

test('replaying a window already applied changes no task and publishes no event: no file checked again', async () => {
  const ids = ['rec-rp-1', 'img-rp-1', 'rec-rp-2'];
  const tasks = await Promise.all(ids.map(taskJson));
  const published = new Set((await events.poll()).map((e) => e.body.id));
  expect(published.size).toBeGreaterThan(0);
  const lines = logLines.length;

  const result = await replayJson(['--yes']);
  expect(result).toMatchObject({ sent: 8, more: false });
  expect(result.waited).toMatchObject({ applied: 0, duplicate: 8, setAside: 0, failed: 0, unseen: 0 });
  await settled();

  // The verifier checked no file again (a republished file.uploaded made it, and moved its checkedAt).
  expect(await Promise.all(ids.map(taskJson))).toEqual(tasks);
  // No new event id; nor any event published again, which every subscriber would take again.
  const after = await events.poll();
  expect(after.filter((e) => !published.has(e.body.id))).toEqual([]);
  expect(after).toEqual([]);
  // The worker logs each as a replay, with the request id the ingest gave it.
  const replayed = logLines.slice(lines).filter((l) => l.event === 'callback_applied' && l.resentBy);
  expect(replayed).toHaveLength(8);
  for (const line of replayed) expect(line).toMatchObject({ resentBy: 'archive-replay', outcome: 'duplicate' });
  expect(new Set(replayed.map((l) => l.requestId))).toEqual(
    new Set(result.waited.messages.map((m: Body) => m.deliveryId)),
  );
  // Archived again, as copies sent again: `raw` keeps one row per delivery, the first archived.
  expect(await archivedCount('true')).toBe(8);
  expect(await archivedCount('resent')).toBe(0);
});

test('callbacks the table lost are applied again: a window, --limit at a time, continued by the cursor', async () => {
  // Two callbacks of a task the table never got (restored from a backup older than they are), an hour before the
  // window of the others, and one just before them that a narrower window leaves out.
  const at = Date.parse(from) - 3_600_000;
  const start = { ...fixture('recording-1-start-mix'), recordId: 'rec-lost-1', timestamp: at };
  const end = { ...fixture('recording-3-end'), recordId: 'rec-lost-1', timestamp: at + 60_000 };
  const line = (id: string, body: Body, receivedAt: number): ArchiveLine => ({
    delivery_id: id,
    message_id: `m-${id}`,
    request_id: id,
    app_key: 'demo-app',
    received_at: new Date(receivedAt).toISOString(),
    archived_at: new Date(receivedAt + 100).toISOString(),
    verdict: 'valid',
    mode: 'enforce',
    outcome: 'applied',
    reason: null,
    type: body.type,
    task_id: 'rec-lost-1',
    file_name: null,
    upload_code: null,
    source_ip: '203.0.113.7',
    user_agent: 'platform/1.0',
    resent: false,
    body: JSON.stringify(body),
    partition: partitionOf('recording', 'demo-app', receivedAt),
  });
  await archiving.archiveLines([
    line('lost-0', { ...start, recordId: 'rec-lost-0' }, at - 1000),
    line('lost-1', start, at),
    line('lost-2', end, at + 60_000),
  ]);
  const window = ['--from', new Date(at).toISOString(), '--to', new Date(at + 120_000).toISOString()];
  const run = async (args: string[]) => {
    const res = await cli(['replay', ...window, '--yes', '--json', ...args]);
    expect(res).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(res.stdout);
  };
  expect((await run(['--dry-run'])).count).toBe(2);
  expect((await run(['--dry-run', '--task', 'rec-lost-1', '--service', 'recording'])).count).toBe(2);
  expect((await run(['--dry-run', '--task', 'rec-lost-0'])).count).toBe(0);
  expect((await run(['--dry-run', '--service', 'screenshot'])).count).toBe(0);

  const first = await run(['--limit', '1']);
  expect(first).toMatchObject({ sent: 1, more: true, cursor: `${new Date(at).toISOString()}/lost-1` });
  expect(first.waited).toMatchObject({ applied: 1, duplicate: 0, failed: 0, unseen: 0 });
  expect(await taskJson('rec-lost-1')).toMatchObject({ id: 'rec-lost-1', status: 'recording' });

  const rest = await run(['--cursor', first.cursor]);
  expect(rest).toMatchObject({ sent: 1, more: false, cursor: `${new Date(at + 60_000).toISOString()}/lost-2` });
  expect(rest.waited).toMatchObject({ applied: 1, duplicate: 0 });
  const task = await taskJson('rec-lost-1');
  expect(task).toMatchObject({ id: 'rec-lost-1', status: 'ended' });
  // The sender the ingest saw travels with it: the raw callback is the one archived.
  const stored = JSON.parse((await cli(['tasks', 'events', 'rec-lost-1', '--json'])).stdout) as Body[];
  expect(stored.map((e) => e.requestId)).toEqual(['lost-1', 'lost-2']);

  // Outside the window: not sent. The whole window again: duplicates, the task unchanged.
  expect((await cli(['tasks', 'get', 'rec-lost-0'])).code).toBe(1);
  const again = await run([]);
  expect(again.waited).toMatchObject({ applied: 0, duplicate: 2 });
  expect(await taskJson('rec-lost-1')).toEqual(task);
  // On a terminal, a progress bar on stderr while they are sent.
  const terminal = terminalIo({ cwd });
  expect(await runCallbacks(['replay', ...window, '--yes', '--no-wait'], terminal.io)).toBe(0);
  expect(terminal.stderr()).toContain('replay [');
  expect(terminal.stderr()).toContain('2/2 callbacks');
  expect(terminal.stdout()).toMatch(/^Sent 2 archived callbacks \(received .*\) to \S+\.\n/);
});

test('a callback set aside for its signature is set aside again, in the group beside its task', async () => {
  const at = Date.parse(from) - 7_200_000;
  const body = { ...fixture('screenshot-1-start'), imageId: 'img-aside-1' };
  await archiving.archiveLines([
    {
      delivery_id: 'aside-1',
      message_id: 'm-aside-1',
      request_id: 'aside-1',
      app_key: 'demo-app',
      received_at: new Date(at).toISOString(),
      archived_at: new Date(at).toISOString(),
      verdict: 'invalid',
      mode: 'report',
      outcome: 'quarantined',
      reason: 'invalid_signature',
      type: 1,
      task_id: 'img-aside-1',
      file_name: null,
      upload_code: null,
      source_ip: null,
      user_agent: null,
      resent: false,
      body: JSON.stringify(body),
      partition: partitionOf('screenshot', 'demo-app', at),
    },
  ]);
  const window = ['--from', new Date(at).toISOString(), '--to', new Date(at + 1000).toISOString()];
  const dry = JSON.parse((await cli(['replay', ...window, '--dry-run', '--json'])).stdout);
  expect(dry.wouldSend[0].groupId).toBe(setAsideGroupId('demo-app', 'img-aside-1'));
  const res = await cli(['replay', ...window, '--yes']);
  expect(res).toMatchObject({ code: 0, stderr: '' });
  expect(res.stdout.split('\n')).toEqual([
    `Sent 1 archived callback (received ${new Date(at).toISOString()} to ` +
      `${new Date(at + 1000).toISOString()}) to ${archiving.stack.info.queueUrl}.`,
    `Cursor of the last one sent: ${new Date(at).toISOString()}/aside-1`,
    'The worker took them: 0 applied, 0 duplicate (applied before), 1 set aside, 0 failed.',
    '',
  ]);
  expect((await cli(['tasks', 'get', 'img-aside-1'])).code).toBe(1);
});

test('without --yes off a terminal, or with a time that does not parse, nothing is sent', async () => {
  const res = await cli(['replay', '--from', from, '--to', to]);
  expect(res).toMatchObject({
    code: 1,
    stdout: '',
    stderr: 'callbacks: replay sends callbacks to the queue: pass --yes to confirm when not at a terminal\n',
  });
  expect((await cli(['replay', '--from', 'yesterday-ish', '--to', to])).stderr).toMatch(/^callbacks: --from: /);
  expect((await cli(['replay', '--from', to, '--to', from])).stderr).toBe(
    'callbacks: --from is not before --to: the window is empty\n',
  );
  expect((await cli(['replay', '--from', from, '--to', to, '--cursor', 'nope'])).stderr).toMatch(
    /^error: option '--cursor <cursor>' argument 'nope' is invalid\. a cursor as replay printed it is needed/,
  );
});

test('on a stage: the rows Athena answers go to the stage queue, how they came out read from its table', async () => {
  // The local stack is the stage `local` of the service: its queues and table by their deployed names, at the
  // emulators' endpoints. Athena (its stand-in) answers what the local archive holds of app-2 in the window.
  const { info } = archiving.stack;
  const columns = REPLAYED_COLUMNS.join(', ');
  const held = JSON.parse(
    (
      await cli([
        'archive',
        'query',
        '--json',
        `SELECT ${columns} FROM raw WHERE app_key = 'app-2' AND received_at >= '${from}' AND received_at < '${to}' ` +
          'ORDER BY received_at, delivery_id',
      ])
    ).stdout,
  ) as Body[];
  expect(held).toHaveLength(4);
  const athena = await startAthenaStandIn({
    stackName: `${SERVICE}-local`,
    outputs: { ArchiveWorkgroupName: 'local-archive', ArchiveDatabaseName: 'local_archive' },
    answer: () => ({
      columns: REPLAYED_COLUMNS.map((name) => ({ name, type: name === 'type' ? 'integer' : 'varchar' })),
      rows: held.map((row) => REPLAYED_COLUMNS.map((c) => (row[c] === null ? null : String(row[c])))),
      running: 0,
    }),
  });
  try {
    const env = {
      AWS_ENDPOINT_URL_ATHENA: athena.url,
      AWS_ENDPOINT_URL_CLOUDFORMATION: athena.url,
      AWS_ENDPOINT_URL_SQS: info.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: info.dynamoEndpoint,
      AWS_ACCESS_KEY_ID: 'operator',
      AWS_SECRET_ACCESS_KEY: 'operator-secret',
    };
    const args = ['--from', from, '--to', to, '--app-key', 'app-2', '--limit', '3', '--yes', '--json'];
    const res = await runCliHere(['replay', ...args, '--stage', 'local', '--region', info.region], { cwd, env });
    expect(res.code).toBe(0);
    // A window that ends within Firehose's delay: the archive may not hold all of it yet.
    expect(res.stderr).toBe(
      'note: callbacks stored in the last 8 minutes may not be in the archive yet (Data Firehose writes its objects ' +
        'within about that): replay the window again later for them.\n',
    );
    const result = JSON.parse(res.stdout);
    const third = held[2]!;
    expect(result).toMatchObject({
      sent: 3,
      more: true,
      cursor: `${third.received_at}/${third.delivery_id}`,
      queue: expect.stringMatching(/\/rtc-callbacks-receiver-local-callbacks\.fifo$/),
      archive: `Athena workgroup local-archive of stage local in ${info.region} (database local_archive)`,
    });
    expect(result.waited).toMatchObject({ applied: 0, duplicate: 3, setAside: 0, failed: 0, unseen: 0 });
    // The selection as Athena got it: the days first, the window, the appKey, in order, one more than --limit.
    const [start] = athena.requests.filter((r) => r.operation === 'StartQueryExecution');
    expect(start!.input).toMatchObject({
      WorkGroup: 'local-archive',
      QueryExecutionContext: { Database: 'local_archive' },
    });
    expect(start!.input.QueryString).toContain('FROM "local_archive"."raw"');
    expect(start!.input.QueryString.split('\n').at(-1)).toBe(
      `SELECT ${columns} FROM raw WHERE dt BETWEEN '${from.slice(0, 10)}' AND '${to.slice(0, 10)}' ` +
        `AND received_at >= '${from}' AND received_at < '${to}' AND app_key = 'app-2' ` +
        'ORDER BY received_at, delivery_id LIMIT 4',
    );
  } finally {
    await athena.stop();
  }
});
