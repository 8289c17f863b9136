import { CreateQueueCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsServer } from 'fauxqs';
import { LOCAL_CREDENTIALS } from '../../../devkit/local/deployed-settings.ts';
import { startLocalSqs } from '../../../devkit/local/fauxqs.ts';
import { EventQueueReader } from './event-queue.ts';

let server: FauxqsServer;
let sqs: SQSClient;

beforeAll(async () => {
  server = await startLocalSqs({ port: 0, logger: false });
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

/** A queue holding `count` task events, as raw deliveries. */
async function queueOfEvents(name: string, count: number): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  for (let i = 0; i < count; i += 10) {
    const entries = Array.from({ length: Math.min(10, count - i) }, (_, j) => ({
      Id: String(j),
      MessageBody: JSON.stringify({ id: `event-${i + j}`, type: 'task.started' }),
    }));
    await sqs.send(new SendMessageBatchCommand({ QueueUrl, Entries: entries }));
  }
  return QueueUrl!;
}

test('two readers at once each see every event: one hiding messages while it reads left the other a part', async () => {
  const queueUrl = await queueOfEvents('events-two-readers', 65);
  const readers = Array.from({ length: 3 }, () => new EventQueueReader(sqs, queueUrl));
  const passes = await Promise.all(readers.map((r) => r.poll()));
  for (const events of passes) {
    expect(new Set(events.map((e) => e.body.id)).size).toBe(65);
  }
  // And they leave every message in the queue for the next reader.
  expect(await new EventQueueReader(sqs, queueUrl).poll()).toHaveLength(65);
});

test('readers started together each read a long history whole: a pass gave up a while after it began', async () => {
  // Longer to read, with three readers taking messages from each other, than the while a reader waits for what
  // the others hold: that while counts from when the others last moved, not from the start of the pass.
  const queueUrl = await queueOfEvents('events-long-history', 1200);
  const readers = Array.from({ length: 3 }, () => new EventQueueReader(sqs, queueUrl, { contendedWaitMs: 1000 }));
  const passes = await Promise.all(readers.map((r) => r.poll()));
  expect(passes.map((events) => new Set(events.map((e) => e.body.id)).size)).toEqual([1200, 1200, 1200]);
});

test('a pass returns only what is new to its reader', async () => {
  const queueUrl = await queueOfEvents('events-fresh', 12);
  const reader = new EventQueueReader(sqs, queueUrl);
  expect(await reader.poll()).toHaveLength(12);
  expect(await reader.poll()).toEqual([]);
});
