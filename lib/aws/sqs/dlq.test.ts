import {
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { taskGroupId } from '../../fifo-ids.ts';
import { peekDeadLetters, queueDepth, redriveDeadLetters } from './dlq.ts';
import { LOCAL_CREDENTIALS } from '../../../devkit/local/deployed-settings.ts';

let server: FauxqsServer;
let sqs: SQSClient;
let n = 0;

beforeAll(async () => {
  server = await startFauxqs({ port: 0, logger: false });
  sqs = new SQSClient({
    endpoint: `http://127.0.0.1:${server.port}`,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
});
afterAll(async () => {
  sqs.destroy();
  await server.stop();
});

/** A main queue whose messages go to its dead-letter queue after one receive. */
function queues() {
  n += 1;
  const dlq = server.createQueue(`dlq-test-${n}-dlq`);
  const main = server.createQueue(`dlq-test-${n}`, {
    attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: 1 }) },
  });
  return { main: main.queueUrl, dlq: dlq.queueUrl };
}

const body = (i: number) =>
  JSON.stringify({ timestamp: 1763798400000 + i, type: 4, appKey: 'demo-app', recordId: `rec-${i}`, code: 500 });
const attributes = (i: number) => ({
  service: { DataType: 'String', StringValue: 'recording' },
  appKey: { DataType: 'String', StringValue: 'demo-app' },
  receivedAt: { DataType: 'Number', StringValue: String(1763798400000 + i) },
  signatureVerdict: { DataType: 'String', StringValue: 'valid' },
});

/** Sends `count` callbacks and fails each once, so that SQS moves them all to the dead-letter queue. */
async function deadLetter(q: { main: string; dlq: string }, count: number) {
  for (let i = 0; i < count; i++) {
    await sqs.send(
      new SendMessageCommand({ QueueUrl: q.main, MessageBody: body(i), MessageAttributes: attributes(i) }),
    );
  }
  // Receives that hide nothing: each message's second receive moves it to the dead-letter queue.
  for (let d = await queueDepth(sqs, q.main); d.visible + d.inFlight > 0; d = await queueDepth(sqs, q.main)) {
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.main, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
  }
  expect((await queueDepth(sqs, q.dlq)).visible).toBe(count);
}

async function drain(url: string): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 30,
        MessageAttributeNames: ['All'],
      }),
    );
    if (!res.Messages?.length) return out;
    out.push(...res.Messages);
  }
}

test('a look at the dead-letter queue shows every message and leaves them all there', async () => {
  const q = queues();
  await deadLetter(q, 13);
  const seen = await peekDeadLetters(sqs, q.dlq, { waitSeconds: 0 });
  expect(seen).toHaveLength(13);
  expect(new Set(seen.map((m) => m.taskId))).toEqual(new Set(Array.from({ length: 13 }, (_, i) => `rec-${i}`)));
  const first = seen.find((m) => m.taskId === 'rec-0')!;
  expect(first).toMatchObject({ service: 'recording', appKey: 'demo-app', type: 4, body: body(0) });
  expect(first.attributes.receivedAt).toBe('1763798400000');
  // The first receive in the main queue, then the second, which found it over the limit: two before this look.
  expect(first.receiveCount).toBe(2);
  expect(first.sentAt).toEqual(expect.any(Number));
  // Visible again right away: nothing was consumed.
  expect(await queueDepth(sqs, q.dlq)).toEqual({ visible: 13, inFlight: 0 });
  const again = await peekDeadLetters(sqs, q.dlq, { waitSeconds: 0, limit: 4 });
  expect(again).toHaveLength(4);
  expect(again.every((m) => m.receiveCount === 3)).toBe(true);
  expect(await queueDepth(sqs, q.dlq)).toEqual({ visible: 13, inFlight: 0 });
});

test('a body that is not JSON is shown without type or task id', async () => {
  const q = queues();
  await sqs.send(new SendMessageCommand({ QueueUrl: q.dlq, MessageBody: 'not json' }));
  const [m] = await peekDeadLetters(sqs, q.dlq, { waitSeconds: 0 });
  expect(m).toMatchObject({ body: 'not json', type: null, taskId: null, service: null, appKey: null });
});

test('a redrive moves every message back with its body and attributes, and loses none', async () => {
  const q = queues();
  await deadLetter(q, 12);
  const progress: number[] = [];
  const result = await redriveDeadLetters(sqs, {
    from: q.dlq,
    to: q.main,
    waitSeconds: 0,
    onMoved: (k) => progress.push(k),
  });
  expect(result).toMatchObject({ moved: 12, failed: [], notDeleted: [] });
  // Each message moved has a copy of its own in the main queue, whose id the worker notes its outcome under.
  expect(new Set(result.copies.map((c) => c.copyId)).size).toBe(12);
  expect(progress).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  expect(await queueDepth(sqs, q.dlq)).toEqual({ visible: 0, inFlight: 0 });
  const back = await drain(q.main);
  expect(back.map((m) => m.Body).sort()).toEqual(Array.from({ length: 12 }, (_, i) => body(i)).sort());
  for (const m of back) {
    const i = Number(JSON.parse(m.Body!).recordId.slice(4));
    const attrs = Object.fromEntries(
      Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [
        k,
        { DataType: v.DataType, StringValue: v.StringValue },
      ]),
    );
    // Marked as sent again: the worker recounts the task of a copy with a new sequence number.
    expect(attrs).toEqual({ ...attributes(i), resentBy: { DataType: 'String', StringValue: 'dlq-redrive' } });
  }
});

test('--max moves only that many and leaves the rest in the dead-letter queue', async () => {
  const q = queues();
  await deadLetter(q, 5);
  const result = await redriveDeadLetters(sqs, { from: q.dlq, to: q.main, max: 3, waitSeconds: 0 });
  expect(result.moved).toBe(3);
  expect((await queueDepth(sqs, q.dlq)).visible).toBe(2);
  expect(await drain(q.main)).toHaveLength(3);
});

test('when the main queue cannot be reached, nothing is deleted from the dead-letter queue', async () => {
  const q = queues();
  await deadLetter(q, 3);
  const result = await redriveDeadLetters(sqs, { from: q.dlq, to: `${q.main}-missing`, waitSeconds: 0 });
  expect(result.moved).toBe(0);
  expect(result.failed).toHaveLength(3);
  expect(await queueDepth(sqs, q.dlq)).toEqual({ visible: 3, inFlight: 0 });
});

describe('FIFO queues', () => {
  function fifoQueues() {
    n += 1;
    const dlq = server.createQueue(`dlq-test-${n}-dlq.fifo`, { attributes: { FifoQueue: 'true' } });
    const main = server.createQueue(`dlq-test-${n}.fifo`, {
      attributes: {
        FifoQueue: 'true',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount: 1 }),
      },
    });
    return { main: main.queueUrl, dlq: dlq.queueUrl };
  }

  /** Dead letters as SQS leaves them: each keeps the message group it was sent with. */
  async function deadLetters(dlq: string, letters: Array<[group: string, i: number]>) {
    for (const [group, i] of letters)
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: dlq,
          MessageBody: body(i),
          MessageAttributes: attributes(i),
          MessageGroupId: group,
          MessageDeduplicationId: `letter-${i}`,
        }),
      );
  }

  /** Receives the main queue until it is empty, deleting nothing: each group one message after the other. */
  async function drainFifo(url: string): Promise<Message[]> {
    const out: Message[] = [];
    for (;;) {
      const res = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ['MessageGroupId', 'MessageDeduplicationId'],
        }),
      );
      if (!res.Messages?.length) return out;
      out.push(...res.Messages);
      for (const m of res.Messages)
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle! }));
    }
  }

  test('a redrive sends each dead letter back to its message group, in its group order', async () => {
    const q = fifoQueues();
    await deadLetters(q.dlq, [
      ['g', 0],
      ['h', 1],
      ['g', 2],
      ['g', 3],
      ['h', 4],
    ]);
    const result = await redriveDeadLetters(sqs, { from: q.dlq, to: q.main, waitSeconds: 0 });
    expect(result).toMatchObject({ moved: 5, failed: [], notDeleted: [] });
    const back = await drainFifo(q.main);
    const inGroup = (g: string) =>
      back.filter((m) => m.Attributes?.MessageGroupId === g).map((m) => JSON.parse(m.Body!).recordId);
    expect(inGroup('g')).toEqual(['rec-0', 'rec-2', 'rec-3']);
    expect(inGroup('h')).toEqual(['rec-1', 'rec-4']);
    expect(new Set(back.map((m) => m.Attributes?.MessageDeduplicationId)).size).toBe(5);
  });

  test('a dead letter redriven twice within five minutes is enqueued once', async () => {
    const q = fifoQueues();
    await deadLetters(q.dlq, [['g', 0]]);
    // The first redrive sends the message and fails to delete it: it stays in the dead-letter queue.
    const failingDeletes = Object.create(sqs) as SQSClient;
    failingDeletes.send = ((command: unknown) =>
      command instanceof DeleteMessageCommand
        ? Promise.reject(new Error('delete refused'))
        : sqs.send(command as never)) as SQSClient['send'];
    const first = await redriveDeadLetters(failingDeletes, { from: q.dlq, to: q.main, holdSeconds: 1, waitSeconds: 0 });
    expect(first).toMatchObject({ moved: 1, notDeleted: [{ error: 'delete refused' }] });
    // Visible again in the dead-letter queue once the first redrive's hold is over.
    await new Promise((r) => setTimeout(r, 1100));
    const second = await redriveDeadLetters(sqs, { from: q.dlq, to: q.main, waitSeconds: 0 });
    expect(second).toMatchObject({ moved: 1, failed: [], notDeleted: [] });
    expect(await queueDepth(sqs, q.dlq)).toEqual({ visible: 0, inFlight: 0 });
    expect((await drainFifo(q.main)).map((m) => m.Body)).toEqual([body(0)]);
  });

  test("a dead letter of a standard queue goes to its task's group, as the ingest would have sent it", async () => {
    const q = fifoQueues();
    const legacy = server.createQueue(`dlq-test-${n}-legacy-dlq`).queueUrl;
    await sqs.send(
      new SendMessageCommand({ QueueUrl: legacy, MessageBody: body(7), MessageAttributes: attributes(7) }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: legacy, MessageBody: 'not json' }));
    const result = await redriveDeadLetters(sqs, { from: legacy, to: q.main, waitSeconds: 0 });
    expect(result).toMatchObject({ moved: 2, failed: [] });
    const groups = new Map((await drainFifo(q.main)).map((m) => [m.Body, m.Attributes?.MessageGroupId]));
    expect(groups.get(body(7))).toBe(taskGroupId('demo-app', 'rec-7'));
    expect(groups.get('not json')).toMatch(/^[0-9a-f]{64}$/);
    expect(groups.get('not json')).not.toBe(groups.get(body(7)));
  });
});
