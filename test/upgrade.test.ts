// The upgrade of a live stage from the standard callback queue to the FIFO one, replayed on the local stack in
// the order docs/deployment.md gives ("Upgrading to the FIFO queue"), over one data folder:
// 0. the earlier version: callbacks wait in the standard queue and its dead-letter queue;
// 1. deployed with legacyQueue=true (the template packaged with it): the standard queue drains into the worker
//    while the ingest sends new callbacks of the same tasks to the FIFO queue; the dead letters are redriven
//    into the FIFO queue, and once both standard queues are empty the counts are recounted;
// 2. deployed again without the parameter: the stack reads the FIFO queue alone, and more callbacks come.
// Then nothing acknowledged is lost, every task equals the fold of its callbacks, and every header's counts
// equal a recount of its items.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { openLocal, type Target } from '../devkit/local/target.ts';
import { countsOf } from '../lib/aws/dynamo/items.ts';
import { TaskQueries } from '../lib/aws/dynamo/queries.ts';
import { recountTasks } from '../lib/aws/dynamo/recount.ts';
import { queueDepth, redriveDeadLetters } from '../lib/aws/sqs/dlq.ts';
import { eventKey } from '../lib/domain/canonical.ts';
import { TableReader } from '../lib/aws/dynamo/table-client.ts';
import { countFiles } from '../lib/domain/task-parts.ts';
import { expectedTasks } from '../devkit/emulator/expect.ts';
import { generateRun, type ScheduledSend } from '../devkit/emulator/lifecycles.ts';
import { createRandom } from '../devkit/emulator/random.ts';
import { sendAll } from '../devkit/emulator/sender.ts';
import { replayKeyOf } from '../lib/signature/verify.ts';
import { LOCAL_ACCOUNT_ID, LOCAL_CREDENTIALS, LOCAL_REGION, SERVICE } from '../devkit/local/deployed-settings.ts';
import { startLocalSqs } from '../devkit/local/fauxqs.ts';
import { ResolvedTemplate } from '../devkit/local/resolved-template.ts';
import { ensureQueues } from '../devkit/local/stack-resources.ts';
import { stackSettings } from '../devkit/local/stack-template.ts';
import { type LocalStack, startLocalStack } from '../devkit/local/stack.ts';
import { loadTemplate, TEMPLATE_STAGE } from '../devkit/local/template.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { withoutVerifications } from './support/pending-verifications.ts';

const APP_KEY = 'upgrade-app';
const SECRET = 'upgrade-secret-5d1e';
let cwd: string;
let stack: LocalStack | null = null;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-upgrade-'));
});
afterAll(async () => {
  await stack?.stop();
  await rm(cwd, { recursive: true, force: true });
});

/** The handlers read their environment once per process: a stack started again keeps the emulators' ports. */
const start = async (legacyQueue: boolean, ports: { dynamoPort?: number; sqsPort?: number } = {}) => {
  stack = await startLocalStack({
    port: 0,
    ...ports,
    cwd,
    quiet: true,
    retryDelaySeconds: 1,
    secrets: { [APP_KEY]: [SECRET] },
    signatureMode: 'enforce',
    template: loadTemplate(undefined, legacyQueue ? { legacyQueue: 'true' } : {}).template,
  });
  return stack;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The queues that feed the worker, by name: every poller's but the verifier's (its own queue, of file events). */
const workerQueues = (s: LocalStack) =>
  s.pollers
    .map((p) => p.queueName)
    .filter((name) => !name.endsWith('-verify'))
    .sort();

/** Until every queue the stack reads is empty and no poller holds a batch (a few quiet probes in a row). */
async function drained(s: LocalStack, sqs: SQSClient, queueUrls: string[], timeoutMs = 120_000) {
  const until = Date.now() + timeoutMs;
  let quiet = 0;
  while (Date.now() < until) {
    const depths = await Promise.all(queueUrls.map((url) => queueDepth(sqs, url)));
    const idle = depths.every((d) => d.visible + d.inFlight === 0) && s.pollers.every((p) => p.busy() === 0);
    quiet = idle ? quiet + 1 : 0;
    if (quiet >= 4) return;
    await sleep(50);
  }
  throw new Error('the queues did not drain');
}

/** The standard queues of the earlier version, as the template packaged with legacyQueue=true declares them. */
function standardQueues(sqsEndpoint: string) {
  const resolved = new ResolvedTemplate(loadTemplate(undefined, { legacyQueue: 'true' }).template, {
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    stackName: `${SERVICE}-${TEMPLATE_STAGE}`,
    sqsEndpoint,
    parameters: {},
  });
  const queues = stackSettings(resolved).queues.filter((q) => !q.fifo);
  const main = queues.find((q) => q.deadLetterQueue !== undefined)!;
  return { queues, main, dlq: queues.find((q) => q.logicalId === main.deadLetterQueue)! };
}

/** SendMessage onto a standard queue as the earlier ingest did: no group, no deduplication id. */
async function enqueueAsBefore(sqs: SQSClient, queueUrl: string, sends: readonly ScheduledSend[]) {
  for (let i = 0; i < sends.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: sends.slice(i, i + 10).map((s, j) => ({
          Id: String(j),
          MessageBody: JSON.stringify(s.body),
          MessageAttributes: messageAttributes({
            body: JSON.stringify(s.body),
            service: s.service,
            appKey: APP_KEY,
            receivedAt: Date.now(),
            requestId: `before-${i + j}`,
            verdict: 'valid',
            mode: 'enforce',
            // Each delivery was signed anew: a replay key of its own.
            replayKey: replayKeyOf({ nonce: 'n', timestamp: '1', signature: randomBytes(32).toString('hex') }),
          }),
        })),
      }),
    );
  }
}

test('from the standard queue to the FIFO one in the documented order: nothing lost, tasks equal the fold, ' +
  'counts equal a recount', async () => {
  const run = generateRun({
    seed: 'upgrade',
    recordings: 8,
    screenshots: 6,
    appKey: APP_KEY,
    compress: 3600,
    duplicates: 0.05,
    reorderWindowMs: 200,
  });
  const sends = [...run.sends].sort((a, b) => a.at - b.at);
  const cut = (f: number) => Math.round(f * sends.length);
  // Each task's callbacks spread over every step: waiting in the standard queue, dead letters of it, sent
  // during the upgrade (while the standard queue drains), and after it.
  const waiting = sends.slice(0, cut(0.35));
  const deadLetters = sends.slice(cut(0.35), cut(0.4));
  const during = sends.slice(cut(0.4), cut(0.75));
  const after = sends.slice(cut(0.75));
  expect(new Set(waiting.map((s) => s.taskId)).size).toBeGreaterThan(5);
  const dataDir = join(cwd, '.data');

  // --- 0. the earlier version: the standard queues hold callbacks the platform was told were received --------
  const sqsBefore = await startLocalSqs({ port: 0, logger: false, dataDir: join(dataDir, 'sqs') });
  const endpointBefore = `http://127.0.0.1:${sqsBefore.port}`;
  const client = new SQSClient({ endpoint: endpointBefore, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const before = standardQueues(endpointBefore);
  await ensureQueues(client, before.queues);
  await enqueueAsBefore(client, before.main.url, waiting);
  await enqueueAsBefore(client, before.dlq.url, deadLetters);
  client.destroy();
  await sqsBefore.stop();

  // --- 1. deployed with legacyQueue=true: both queues feed the worker ------------------------------------
  let s = await start(true);
  expect(workerQueues(s)).toEqual([before.main.name, `${before.main.name}.fifo`].sort());
  let target: Target = openLocal(s.info);
  const standard = standardQueues(s.info.sqsEndpoint);
  const sent = await sendAll({
    url: s.url,
    sends: during,
    random: createRandom('upgrade/during'),
    secret: SECRET,
    followSchedule: false,
    concurrency: 8,
    maxAttempts: 5,
  });
  expect(sent.results.every((r) => r.delivered)).toBe(true);
  const { queueUrl } = await target.queues();
  await drained(s, target.sqs, [queueUrl!, standard.main.url]);
  // The standard queue drained into the worker: its own poller applied what it held.
  const legacyPoller = s.pollers.find((p) => p.queueName === standard.main.name)!;
  expect(legacyPoller.stats.succeeded).toBeGreaterThanOrEqual(waiting.length);
  // Its dead letters go to the FIFO queue, each to its task's group.
  const redriven = await redriveDeadLetters(target.sqs, { from: standard.dlq.url, to: queueUrl! });
  expect(redriven).toMatchObject({ moved: deadLetters.length, failed: [], notDeleted: [] });
  await drained(s, target.sqs, [queueUrl!, standard.main.url]);
  expect(await queueDepth(target.sqs, standard.dlq.url)).toEqual({ visible: 0, inFlight: 0 });
  // Both queues wrote the same tasks meanwhile: the counts are recounted once the standard ones are empty.
  const recounted = await recountTasks({ client: target.dynamo, tableName: target.tableName });
  expect(recounted.failed).toEqual([]);
  await target.close();
  await s.stop();
  stack = null;
  const port = (url: string) => Number(new URL(url).port);
  const ports = { dynamoPort: port(s.info.dynamoEndpoint), sqsPort: port(s.info.sqsEndpoint) };

  // --- 2. deployed again without it: the FIFO queue alone --------------------------------------------------
  s = await start(false, ports);
  expect(workerQueues(s)).toEqual([`${before.main.name}.fifo`]);
  target = openLocal(s.info);
  const last = await sendAll({
    url: s.url,
    sends: after,
    random: createRandom('upgrade/after'),
    secret: SECRET,
    followSchedule: false,
    concurrency: 8,
    maxAttempts: 5,
  });
  expect(last.results.every((r) => r.delivered)).toBe(true);
  await drained(s, target.sqs, [(await target.queues()).queueUrl!]);

  // --- nothing lost, every task the fold, every header a recount -------------------------------------------
  const all = [...waiting, ...deadLetters, ...during, ...after].map((x) => ({ ...x, delivered: true }));
  const expected = expectedTasks(all);
  const queries = new TaskQueries(new TableReader(target.dynamo, target.tableName), Date.now);
  for (const task of expected) {
    expect(withoutVerifications(await target.tasks.getTask(task.id, APP_KEY))).toEqual(task);
    const keys = new Set(all.filter((x) => x.taskId === task.id).map((x) => eventKey(x.body as object)));
    const stored = new Set((await target.tasks.listEvents(task.id, APP_KEY)).map((e) => e.key));
    expect([...keys].filter((k) => !stored.has(k))).toEqual([]);
    const header = (await queries.findHeader(task.id))!;
    const whole = (await queries.assembled(header)).parts;
    const files = countFiles(whole.files);
    expect(countsOf(header)).toEqual({
      files: files.fileCount,
      pending: files.pendingFiles,
      uploaded: files.fileCount - files.pendingFiles - files.failedFiles,
      failed: files.failedFiles,
      events: whole.eventCount,
    });
  }
  await target.close();
}, 240_000);
