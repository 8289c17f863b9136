// The event source mapping stand-in against a real SQS emulator (fauxqs): batches, deletes, retries and
// the dead-letter queue after maxReceiveCount.
import {
  type Message,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import type { Logger } from '../../lib/log.ts';
import { failedMessageIds, startSqsPoller, type SqsPoller, type SqsPollerOptions } from './sqs-poller.ts';
import { LOCAL_CREDENTIALS } from './deployed-settings.ts';
import { failedInGroupOrder } from '../../lib/worker/process-batch.ts';
import { eventually } from '../../test/support/eventually.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
let server: FauxqsServer;
let sqs: SQSClient;
let endpoint: string;
let n = 0;
const pollers: SqsPoller[] = [];
/** The long-poll wait of the pollers here. */
const SHORT_POLL_S = 0.05;

beforeAll(async () => {
  server = await startFauxqs({ port: 0, logger: false });
  endpoint = `http://127.0.0.1:${server.port}`;
  sqs = new SQSClient({
    endpoint,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
});
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  sqs.destroy();
  await server.stop();
});

function queues(maxReceiveCount: number) {
  n += 1;
  const dlq = server.createQueue(`poller-${n}-dlq`);
  const main = server.createQueue(`poller-${n}`, {
    attributes: {
      VisibilityTimeout: '180',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount }),
    },
  });
  const local = (url: string) => new URL(new URL(url).pathname, endpoint).href;
  return { main: local(main.queueUrl), mainArn: main.queueArn, dlq: local(dlq.queueUrl) };
}

async function send(queueUrl: string, bodies: string[]) {
  for (let i = 0; i < bodies.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: bodies.slice(i, i + 10).map((body, j) => ({
          Id: String(j),
          MessageBody: body,
          MessageAttributes: {
            service: { DataType: 'String', StringValue: 'recording' },
            receivedAt: { DataType: 'Number', StringValue: '1763798400000' },
          },
        })),
      }),
    );
  }
}

async function depth(queueUrl: string) {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return { visible: Number(a.ApproximateNumberOfMessages), inFlight: Number(a.ApproximateNumberOfMessagesNotVisible) };
}

function poller(
  q: ReturnType<typeof queues>,
  handler: SqsPollerOptions['handler'],
  over: Partial<SqsPollerOptions> = {},
) {
  const p = startSqsPoller({
    sqs,
    queueUrl: q.main,
    queueArn: q.mainArn,
    region: 'us-east-1',
    handler,
    batchSize: 25,
    batchingWindowMs: 5000,
    concurrency: 1,
    retryDelaySeconds: 0,
    // fauxqs takes a fraction of a second (SQS whole seconds): an idle poller, and so stop(), waits 50 ms.
    waitTimeSeconds: SHORT_POLL_S,
    log: silent,
    ...over,
  });
  pollers.push(p);
  return p;
}

test(
  'messages are gathered into one batch up to the batch size, shaped as Lambda shapes them, and deleted once ' +
    'handled',
  async () => {
    const q = queues(5);
    const bodies = Array.from({ length: 25 }, (_, i) => `body-${i}`);
    await send(q.main, bodies);
    const events: SQSEvent[] = [];
    const p = poller(q, async (event) => {
      events.push(event);
      return { batchItemFailures: [] };
    });
    await eventually('all 25 records handled', () => p.stats.succeeded === 25);
    await eventually('deletes done', async () => (await depth(q.main)).inFlight === 0);

    // The batch was full before the window ended: one invocation with all of them.
    expect(events).toHaveLength(1);
    expect(events[0]!.Records.map((r) => r.body).sort()).toEqual([...bodies].sort());
    const record: SQSRecord = events[0]!.Records[0]!;
    expect(record).toMatchObject({
      eventSource: 'aws:sqs',
      eventSourceARN: q.mainArn,
      awsRegion: 'us-east-1',
      attributes: { ApproximateReceiveCount: '1', SenderId: expect.any(String) },
      messageAttributes: {
        service: { stringValue: 'recording', dataType: 'String', stringListValues: [], binaryListValues: [] },
        receivedAt: { stringValue: '1763798400000', dataType: 'Number' },
      },
    });
    expect(record.messageId).toMatch(/\S/);
    expect(record.receiptHandle).toMatch(/\S/);
    expect(Number(record.attributes.SentTimestamp)).toBeGreaterThan(1.7e12);
    expect(await depth(q.main)).toEqual({ visible: 0, inFlight: 0 });
    expect(p.stats).toMatchObject({ batches: 1, records: 25, succeeded: 25, failed: 0, largestBatch: 25 });
  },
);

test(
  'a record reported in batchItemFailures comes back, and after maxReceiveCount receives it is in the ' +
    'dead-letter queue',
  async () => {
    const q = queues(3);
    await send(q.main, ['good-1', 'poison', 'good-2']);
    const seen: Array<{ body: string; receiveCount: string }> = [];
    const p = poller(
      q,
      async (event): Promise<SQSBatchResponse> => {
        for (const r of event.Records) seen.push({ body: r.body, receiveCount: r.attributes.ApproximateReceiveCount });
        return {
          batchItemFailures: event.Records.filter((r) => r.body === 'poison').map((r) => ({
            itemIdentifier: r.messageId,
          })),
        };
      },
      { batchingWindowMs: 0 },
    );

    await eventually('the poison message in the dead-letter queue', async () => (await depth(q.dlq)).visible === 1);
    await p.stop();

    expect(seen.filter((s) => s.body === 'poison').map((s) => s.receiveCount)).toEqual(['1', '2', '3']);
    expect(
      seen
        .filter((s) => s.body !== 'poison')
        .map((s) => s.body)
        .sort(),
    ).toEqual(['good-1', 'good-2']);
    expect(await depth(q.main)).toEqual({ visible: 0, inFlight: 0 });
    const dead = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.dlq, MessageAttributeNames: ['All'] }));
    expect(dead.Messages?.map((m) => m.Body)).toEqual(['poison']);
    expect(dead.Messages?.[0]?.MessageAttributes?.service?.StringValue).toBe('recording');
    expect(p.stats).toMatchObject({ succeeded: 2, failed: 3, batchFailures: 0 });
  },
);

test('a handler that throws fails the whole batch: every record comes back', async () => {
  const q = queues(5);
  await send(q.main, ['a', 'b', 'c']);
  const calls: SQSEvent[] = [];
  const p = poller(
    q,
    async (event) => {
      calls.push(event);
      if (calls.length === 1) throw new Error('worker crashed');
      return { batchItemFailures: [] };
    },
    // The batch is full at once: no window to wait out, the first time or the second.
    { batchSize: 3, batchingWindowMs: 300 },
  );
  await eventually('the three records handled after the failure', () => p.stats.succeeded === 3);
  await eventually('deletes done', async () => (await depth(q.main)).inFlight === 0);

  expect(calls[0]!.Records.map((r) => r.body).sort()).toEqual(['a', 'b', 'c']);
  const retried = calls.slice(1).flatMap((e) => e.Records);
  expect(retried.map((r) => r.body).sort()).toEqual(['a', 'b', 'c']);
  expect(retried.every((r) => r.attributes.ApproximateReceiveCount === '2')).toBe(true);
  expect(p.stats.batchFailures).toBe(1);
  expect(await depth(q.main)).toEqual({ visible: 0, inFlight: 0 });
});

describe('a FIFO queue, as the FIFO event source mapping sees it', () => {
  function fifoQueues(maxReceiveCount: number) {
    n += 1;
    const dlq = server.createQueue(`poller-${n}-dlq.fifo`, { attributes: { FifoQueue: 'true' } });
    const main = server.createQueue(`poller-${n}.fifo`, {
      attributes: {
        FifoQueue: 'true',
        VisibilityTimeout: '180',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount }),
      },
    });
    const local = (url: string) => new URL(new URL(url).pathname, endpoint).href;
    return { main: local(main.queueUrl), mainArn: main.queueArn, dlq: local(dlq.queueUrl) };
  }

  async function sendToGroup(queueUrl: string, group: string, bodies: string[]) {
    for (const body of bodies)
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: body,
        }),
      );
  }

  test(
    'a failed record holds back the rest of its group until it is retried, other groups go on; a group is ' +
      'never in two batches at once; at most 10 records a batch',
    async () => {
      const q = fifoQueues(5);
      await sendToGroup(q.main, 'g', ['g-1', 'g-2', 'g-3', 'g-4']);
      await sendToGroup(q.main, 'h', ['h-1', 'h-2', 'h-3']);
      await sendToGroup(
        q.main,
        'many',
        Array.from({ length: 3 }, (_, i) => `many-${i}`),
      );
      for (let i = 0; i < 12; i++) await sendToGroup(q.main, `single-${i}`, [`single-${i}`]);
      const handled: string[] = [];
      const inFlight = new Set<string>();
      const overlaps: string[] = [];
      const batchSizes: number[] = [];
      let failedOnce = false;
      const p = poller(
        q,
        async (event) => {
          batchSizes.push(event.Records.length);
          const groups = event.Records.map((r) => r.attributes.MessageGroupId!);
          for (const g of groups) if (inFlight.has(g)) overlaps.push(g);
          for (const g of groups) inFlight.add(g);
          await new Promise((r) => setTimeout(r, 20));
          for (const g of groups) inFlight.delete(g);
          const failures = [];
          for (const r of event.Records) {
            if (r.body === 'g-2' && !failedOnce) {
              failedOnce = true;
              failures.push({ itemIdentifier: r.messageId });
              handled.push('g-2 failed');
            } else handled.push(r.body);
          }
          return { batchItemFailures: failures };
        },
        // Long enough for h to go on meanwhile (fauxqs takes a fraction of a second).
        { batchSize: 10, batchingWindowMs: 0, concurrency: 3, retryDelaySeconds: 0.5 },
      );
      await eventually('every record handled', () => p.stats.succeeded === 22);
      await eventually('deletes done', async () => (await depth(q.main)).inFlight === 0);

      const ofGroup = (prefix: string) => handled.filter((b) => b.startsWith(prefix));
      // g-3 and g-4 waited for g-2's retry: the group's order held.
      expect(ofGroup('g-')).toEqual(['g-1', 'g-2 failed', 'g-2', 'g-3', 'g-4']);
      expect(ofGroup('h-')).toEqual(['h-1', 'h-2', 'h-3']);
      // h went on while g waited for its retry.
      expect(handled.indexOf('h-3')).toBeLessThan(handled.indexOf('g-2'));
      expect(overlaps).toEqual([]);
      expect(Math.max(...batchSizes)).toBeLessThanOrEqual(10);
      expect(Math.max(...batchSizes)).toBeGreaterThan(1);
      expect(await depth(q.main)).toEqual({ visible: 0, inFlight: 0 });
    },
  );

  test('records carry their message group, deduplication id and sequence number, as Lambda gives them', async () => {
    const q = fifoQueues(5);
    await sendToGroup(q.main, 'task-group', ['only']);
    const records: SQSRecord[] = [];
    const p = poller(
      q,
      async (event) => {
        records.push(...event.Records);
        return { batchItemFailures: [] };
      },
      { batchSize: 10, batchingWindowMs: 0 },
    );
    await eventually('the record handled', () => p.stats.succeeded === 1);
    expect(records[0]!.attributes).toMatchObject({
      MessageGroupId: 'task-group',
      MessageDeduplicationId: 'only',
      SequenceNumber: expect.stringMatching(/^\d+$/),
    });
  });

  test('a record that keeps failing goes to the FIFO dead-letter queue with its group; the group goes on', async () => {
    const q = fifoQueues(2);
    await sendToGroup(q.main, 'g', ['poison', 'after']);
    const seen: string[] = [];
    const p = poller(
      q,
      async (event) => {
        seen.push(...event.Records.map((r) => r.body));
        return {
          batchItemFailures: event.Records.filter((r) => r.body === 'poison').map((r) => ({
            itemIdentifier: r.messageId,
          })),
        };
      },
      { batchSize: 10, batchingWindowMs: 0 },
    );
    await eventually('the next record of the group handled', () => seen.includes('after'));
    await p.stop();
    expect(seen).toEqual(['poison', 'poison', 'after']);
    const dead = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: q.dlq, MessageSystemAttributeNames: ['MessageGroupId'] }),
    );
    expect(dead.Messages?.map((m) => [m.Body, m.Attributes?.MessageGroupId])).toEqual([['poison', 'g']]);
  });
});

/**
 * A FIFO queue as SQS keeps one, in the one respect fauxqs does not: a receive hands out several messages of a
 * group, in order, and no other of the group while any is in flight. Enough of SQS for the poller's calls.
 */
function sqsFifoDouble(messages: { group: string; body: string }[]) {
  let next = 0;
  const waiting = messages.map((m) => ({ ...m, id: `m-${++next}`, receives: 0 }));
  const inFlight = new Map<string, (typeof waiting)[number]>();
  const deleted: string[] = [];
  const send = async (command: { constructor: { name: string }; input: any }) => {
    const { input } = command;
    switch (command.constructor.name) {
      case 'ReceiveMessageCommand': {
        // A group with a message in flight gives none; the others give theirs in order (`waiting` keeps it).
        const busy = new Set([...inFlight.values()].map((m) => m.group));
        const out: Message[] = [];
        for (const m of [...waiting]) {
          if (out.length >= input.MaxNumberOfMessages) break;
          if (busy.has(m.group)) continue;
          waiting.splice(waiting.indexOf(m), 1);
          m.receives += 1;
          const handle = `${m.id}/${m.receives}`;
          inFlight.set(handle, m);
          out.push({
            MessageId: m.id,
            ReceiptHandle: handle,
            Body: m.body,
            Attributes: { MessageGroupId: m.group, ApproximateReceiveCount: String(m.receives) },
          });
        }
        // An empty receive waits, as a long poll does (else an idle poller would never yield).
        if (out.length === 0) await new Promise((r) => setTimeout(r, 20));
        return { Messages: out };
      }
      case 'DeleteMessageBatchCommand':
        for (const e of input.Entries) {
          deleted.push(inFlight.get(e.ReceiptHandle)!.body);
          inFlight.delete(e.ReceiptHandle);
        }
        return { Successful: input.Entries.map((e: { Id: string }) => ({ Id: e.Id })), Failed: [] };
      case 'ChangeMessageVisibilityBatchCommand': {
        // Visible again at once (the retry delay is 0 here), back at the head of their group, in order.
        const back = input.Entries.map((e: { ReceiptHandle: string }) => inFlight.get(e.ReceiptHandle)!);
        for (const e of input.Entries) inFlight.delete(e.ReceiptHandle);
        waiting.unshift(...back);
        return { Successful: [], Failed: [] };
      }
      default:
        throw new Error(`not in the double: ${command.constructor.name}`);
    }
  };
  return { client: { send } as unknown as SQSClient, deleted, idle: () => waiting.length === 0 && inFlight.size === 0 };
}

test(
  'on a FIFO queue that hands out several records of a group at once (as SQS may): the records the handler ' +
    'names, a failed one and the later ones of its group, stay and come back in order; the earlier ones go',
  async () => {
    const double = sqsFifoDouble([
      ...['g-1', 'g-2', 'g-3', 'g-4'].map((body) => ({ group: 'g', body })),
      ...['h-1', 'h-2'].map((body) => ({ group: 'h', body })),
    ]);
    const batches: string[][] = [];
    let failedOnce = false;
    const p = startSqsPoller({
      sqs: double.client,
      queueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/double.fifo',
      queueArn: 'arn:aws:sqs:us-east-1:000000000000:double.fifo',
      region: 'us-east-1',
      // The worker's own rule: a failed record fails the later records of its group in the batch.
      handler: async (event) => {
        batches.push(event.Records.map((r) => r.body));
        const failed = event.Records.map((r) => {
          const fails = r.body === 'g-2' && !failedOnce;
          if (fails) failedOnce = true;
          return fails;
        });
        const report = failedInGroupOrder(event.Records, failed);
        return {
          batchItemFailures: event.Records.filter((_, i) => report[i]).map((r) => ({ itemIdentifier: r.messageId })),
        };
      },
      batchSize: 10,
      batchingWindowMs: 0,
      concurrency: 2,
      retryDelaySeconds: 0,
      log: silent,
    });
    pollers.push(p);
    await eventually('every record applied', () => double.idle() && p.busy() === 0);
    // The first batch held the whole of both groups; g-2 failed, so g-3 and g-4 stayed with it.
    expect(batches[0]).toEqual(['g-1', 'g-2', 'g-3', 'g-4', 'h-1', 'h-2']);
    expect(batches.slice(1)).toEqual([['g-2', 'g-3', 'g-4']]);
    expect(double.deleted).toEqual(['g-1', 'h-1', 'h-2', 'g-2', 'g-3', 'g-4']);
    expect(p.stats).toMatchObject({ batches: 2, records: 9, succeeded: 6, failed: 3, batchFailures: 0 });
  },
);

test('after stop() nothing more is received', async () => {
  const q = queues(5);
  // The poller's own client, counting its receives.
  const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  let receives = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'ReceiveMessageCommand') receives += 1;
      return next(args);
    },
    { step: 'initialize' },
  );
  const p = poller(q, async () => ({ batchItemFailures: [] }), { sqs: client });
  await eventually('a first receive', () => receives > 0);
  await p.stop();
  const receivesAtStop = receives;
  await sqs.send(new SendMessageCommand({ QueueUrl: q.main, MessageBody: 'late' }));
  // Give a poller that wrongly kept running the time of a few long polls to take it.
  await new Promise((r) => setTimeout(r, 5 * SHORT_POLL_S * 1000));
  expect(receives).toBe(receivesAtStop);
  expect(await depth(q.main)).toEqual({ visible: 1, inFlight: 0 });
  expect(p.stats.records).toBe(0);
  client.destroy();
});

test('idle pollers take turns: one long poll waits at a time, and a message still comes through', async () => {
  const q = queues(5);
  // The poller's own client, counting the receives in flight at once.
  const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  let inFlight = 0;
  let mostAtOnce = 0;
  let receives = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'ReceiveMessageCommand') return next(args);
      receives += 1;
      mostAtOnce = Math.max(mostAtOnce, ++inFlight);
      try {
        return await next(args);
      } finally {
        inFlight -= 1;
      }
    },
    { step: 'initialize' },
  );
  const handled: string[] = [];
  const p = poller(
    q,
    async (event) => {
      handled.push(...event.Records.map((r) => r.body));
      return { batchItemFailures: [] };
    },
    { sqs: client, concurrency: 5, batchingWindowMs: 0 },
  );
  await eventually('ten idle receives', () => receives >= 10);
  expect(mostAtOnce).toBe(1);
  await send(q.main, ['wake']);
  await eventually('the message handled', () => handled.includes('wake'));
  await p.stop();
  client.destroy();
});

describe('failedMessageIds reads a partial batch response as Lambda does', () => {
  const event = { Records: [{ messageId: 'm1' }, { messageId: 'm2' }] } as SQSEvent;
  test('no response or an empty list: everything succeeded', () => {
    expect(failedMessageIds(undefined, event)).toEqual({ ids: new Set(), wholeBatch: false });
    expect(failedMessageIds({ batchItemFailures: [] }, event)).toEqual({ ids: new Set(), wholeBatch: false });
  });
  test('the reported items fail', () => {
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: 'm2' }] }, event)).toEqual({
      ids: new Set(['m2']),
      wholeBatch: false,
    });
  });
  test('an item not in the batch, or empty, fails the whole batch', () => {
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: 'other' }] }, event)).toEqual({
      ids: new Set(['m1', 'm2']),
      wholeBatch: true,
    });
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: '' }] }, event)).toEqual({
      ids: new Set(['m1', 'm2']),
      wholeBatch: true,
    });
  });
});
