import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { startLocalSqs } from './fauxqs.ts';
import { LOCAL_CREDENTIALS } from './deployed-settings.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fauxqs-data-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function client(server: FauxqsServer): SQSClient {
  return new SQSClient({
    endpoint: `http://127.0.0.1:${server.port}`,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
  });
}

async function receive(sqs: SQSClient, queueUrl: string): Promise<Message[]> {
  const res = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 60,
      WaitTimeSeconds: 0,
      MessageSystemAttributeNames: ['ApproximateReceiveCount'],
    }),
  );
  return res.Messages ?? [];
}

const counts = (messages: Message[]) => messages.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount]).sort();

test('with a data folder, a message made visible again keeps its receive count, also after a restart', async () => {
  let server = await startLocalSqs({ port: 0, logger: false, dataDir: dir });
  let sqs = client(server);
  const { queueUrl } = server.createQueue('visible-again');
  for (const body of ['a', 'b', 'c']) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));

  const first = await receive(sqs, queueUrl);
  expect(counts(first)).toEqual([
    ['a', '1'],
    ['b', '1'],
    ['c', '1'],
  ]);
  // One at a time and as a batch, as the dead-letter look does.
  await sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: queueUrl,
      ReceiptHandle: first[0]!.ReceiptHandle,
      VisibilityTimeout: 0,
    }),
  );
  const batch = await sqs.send(
    new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queueUrl,
      Entries: first.slice(1).map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 })),
    }),
  );
  expect(batch.Failed ?? []).toEqual([]);
  const second = await receive(sqs, queueUrl);
  expect(counts(second)).toEqual([
    ['a', '2'],
    ['b', '2'],
    ['c', '2'],
  ]);
  await sqs.send(
    new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queueUrl,
      Entries: second.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 })),
    }),
  );

  sqs.destroy();
  await server.stop();
  server = await startLocalSqs({ port: 0, logger: false, dataDir: dir });
  sqs = client(server);
  const url = new URL(new URL(queueUrl).pathname, `http://127.0.0.1:${server.port}`).href;
  expect(counts(await receive(sqs, url))).toEqual([
    ['a', '3'],
    ['b', '3'],
    ['c', '3'],
  ]);
  sqs.destroy();
  await server.stop();
});

test('listens on loopback; a server other code starts meanwhile on every interface keeps its address', async () => {
  const other = createServer();
  const [server] = await Promise.all([
    startLocalSqs({ port: 0, logger: false }),
    new Promise<void>((resolve) => other.listen({ port: 0, host: '0.0.0.0' }, resolve)),
  ]);
  try {
    expect(server.address).toBe(`http://127.0.0.1:${server.port}`);
    expect((other.address() as AddressInfo).address).toBe('0.0.0.0');
    // And net.Server is itself again once the start is over.
    const later = createServer();
    await new Promise<void>((resolve) => later.listen({ port: 0, host: '0.0.0.0' }, resolve));
    expect((later.address() as AddressInfo).address).toBe('0.0.0.0');
    later.close();
  } finally {
    other.close();
    await server.stop();
  }
});

describe('a FIFO queue delivers as SQS FIFO does', () => {
  let server: FauxqsServer;
  let sqs: SQSClient;
  beforeAll(async () => {
    server = await startLocalSqs({ port: 0, logger: false });
    sqs = client(server);
  });
  afterAll(async () => {
    sqs.destroy();
    await server.stop();
  });

  async function fifo(name: string, maxReceiveCount?: number) {
    const dlq = server.createQueue(`${name}-dlq.fifo`, { attributes: { FifoQueue: 'true' } });
    const attributes: Record<string, string> = { FifoQueue: 'true', VisibilityTimeout: '60' };
    if (maxReceiveCount !== undefined)
      attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.queueArn, maxReceiveCount });
    const { queueUrl } = server.createQueue(`${name}.fifo`, { attributes });
    return { queueUrl, dlqUrl: dlq.queueUrl };
  }

  async function send(queueUrl: string, sends: [group: string, body: string][]) {
    for (const [group, body] of sends)
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: `${group}-${body}`,
        }),
      );
  }

  const bodies = (messages: Message[]) => messages.map((m) => m.Body);

  test('a receive holds as many messages of a group as fit, in order, the oldest group first', async () => {
    const { queueUrl } = await fifo('several-per-group');
    await send(queueUrl, [
      ['t1', 'a1'],
      ['t2', 'b1'],
      ['t1', 'a2'],
      ['t2', 'b2'],
      ['t1', 'a3'],
    ]);
    expect(bodies(await receive(sqs, queueUrl))).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    // Both groups are in flight: nothing more until they are done.
    expect(await receive(sqs, queueUrl)).toEqual([]);
  });

  test("a group's messages made visible again come back in their order, past maxReceiveCount to the DLQ", async () => {
    const { queueUrl, dlqUrl } = await fifo('back-in-order', 2);
    await send(queueUrl, [
      ['t1', 'a1'],
      ['t1', 'a2'],
      ['t1', 'a3'],
    ]);
    for (let receive_ = 1; receive_ <= 2; receive_++) {
      const got = await receive(sqs, queueUrl);
      expect(bodies(got)).toEqual(['a1', 'a2', 'a3']);
      expect(got.map((m) => m.Attributes?.ApproximateReceiveCount)).toEqual(['1', '1', '1'].map(() => `${receive_}`));
      await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
        }),
      );
    }
    // Received twice, as many times as the policy allows: the next receive moves them, and hands out none.
    expect(await receive(sqs, queueUrl)).toEqual([]);
    expect(bodies(await receive(sqs, dlqUrl))).toEqual(['a1', 'a2', 'a3']);
  });
});
