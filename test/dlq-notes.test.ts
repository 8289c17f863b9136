// Dead letters with their reason, on a local stack whose SNS refuses every publish for a while (its faults): the
// worker gives a callback up at its last receive and notes why; `dlq list` shows that error, and `dlq redrive
// --wait` says how each copy came out once the worker took it: failed again while SNS still refuses, then applied,
// a duplicate (stored before) or quarantined once it takes them again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { messageAttributes } from '../lib/queue-message.ts';
import { postSigned, runCliHere } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

let cwd: string;
let stack: LocalStack;
let target: Target;
let sqs: SQSClient;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-dlq-notes-'));
  stack = await startLocalStack({
    port: 0,
    memory: true,
    cwd,
    quiet: true,
    retryDelaySeconds: 0,
    scheduleEveryMs: 0,
    faults: { rates: { sns: 1 }, seed: 'dlq-notes' },
  });
  target = await openTarget({ cwd, env: {} });
  sqs = new SQSClient({ endpoint: stack.info.sqsEndpoint, region: stack.info.region, credentials: LOCAL_CREDENTIALS });
}, 60_000);

afterAll(async () => {
  sqs?.destroy();
  await target?.close();
  await stack?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

const cli = (args: string[]) => runCliHere(args, { cwd });
const start = (recordId: string, timestamp = Date.now()) => ({
  timestamp,
  type: 1,
  appKey: 'demo-app',
  recordId,
  roomId: 'room-dn',
  sessionId: 'session-dn',
  userId: '',
  mode: 3,
  code: 200,
  errorMessage: 'success',
  config: {},
});
const deadLetters = async () => {
  const d = await target.dlq.depth();
  return d.visible + d.inFlight;
};
/** A callback put in the dead-letter queue as the ingest queues it (no note: the worker never saw it). */
async function deadLetter(service: 'recording' | 'screenshot', body: object, id: string) {
  const text = JSON.stringify(body);
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: stack.info.dlqUrl,
      MessageBody: text,
      MessageAttributes: messageAttributes({
        body: text,
        service,
        appKey: 'demo-app',
        receivedAt: Date.now(),
        requestId: null,
        verdict: 'valid',
        mode: 'enforce',
        replayKey: null,
      }),
      MessageGroupId: taskGroupId('demo-app', id),
      MessageDeduplicationId: `dn-${id}`,
    }),
  );
}

test('dlq list gave no reason: each message shows the error the worker gave it up on', async () => {
  expect((await postSigned(stack.url, 'recording', start('rec-dn-1'))).status).toBe(200);
  await eventually('the callback given up', deadLetters, (n) => n === 1, { timeoutMs: 60_000 });
  const [listed] = JSON.parse((await cli(['dlq', 'list', '--json'])).stdout) as any[];
  expect(listed).toMatchObject({ taskId: 'rec-dn-1', lastError: { outcome: 'given_up', receiveCount: 5 } });
  expect(listed.lastError.error).toMatch(/its task events could not be published: .*injected by --faults/);
  const human = await cli(['dlq', 'list']);
  expect(human).toMatchObject({ code: 0, stderr: '' });
  const lines = human.stdout.split('\n');
  expect(lines[1]).toContain('rec-dn-1');
  expect(lines[2]).toMatch(/^ {2}given up at receive 5, \S+: its task events could not be published/);
});

test('dlq redrive --wait: failed again while the cause lasts, then applied, duplicate and quarantined', async () => {
  // SNS still refuses: the copy fails again, and says why; the exit code says so too.
  const again = await cli(['dlq', 'redrive', '--yes', '--wait', '--timeout', '30s']);
  expect(again.code).toBe(1);
  const [moved, took] = again.stdout.split('\n');
  expect(moved).toMatch(/^Moved 1 message from .*dlq\.fifo to .*callbacks\.fifo\.$/);
  expect(took).toMatch(
    new RegExp(
      '^The worker took them: 0 applied, 0 duplicate \\(applied before\\), 0 quarantined, ' +
        '1 failed again \\(its task events could not be published: .*\\)\\.$',
    ),
  );
  // Given up again, it waits in the dead-letter queue; SNS is fixed, and two more dead letters join it: a callback
  // never applied, and one of a task id the other service uses.
  await eventually('given up again', deadLetters, (n) => n === 1, { timeoutMs: 60_000 });
  stack.faults!.set({});
  expect(
    (await postSigned(stack.url, 'screenshot', { ...start('x'), recordId: undefined, imageId: 'img-dn-2' })).status,
  ).toBe(200);
  await eventually(
    'the screenshot task',
    () => target.tasks.getTask('img-dn-2'),
    (t) => t !== null,
  );
  await deadLetter('recording', start('rec-dn-3'), 'rec-dn-3');
  await deadLetter('recording', { ...start('img-dn-2'), recordId: 'img-dn-2' }, 'img-dn-2');
  const waited = await cli(['dlq', 'redrive', '--yes', '--wait', '--timeout', '30s', '--json']);
  expect(waited).toMatchObject({ code: 0, stderr: '' });
  const result = JSON.parse(waited.stdout);
  // rec-dn-1 was stored by its first delivery, before its events failed to go out: the copy is a duplicate.
  expect(result.waited).toMatchObject({ applied: 1, duplicate: 1, quarantined: 1, failedAgain: 0, unseen: 0 });
  expect(result.waited.messages).toHaveLength(3);
  expect(await deadLetters()).toBe(0);
});
