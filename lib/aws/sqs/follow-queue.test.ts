import { SNSClient, CreateTopicCommand, ListSubscriptionsByTopicCommand, PublishCommand } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { LOCAL_CREDENTIALS } from '../../../devkit/local/deployed-settings.ts';
import {
  FollowQueue,
  STALE_AFTER_MS,
  followQueueName,
  followQueuePrefix,
  removeStaleFollowQueues,
  type FollowClients,
} from './follow-queue.ts';

let server: FauxqsServer;
let clients: FollowClients;
let topicArn: string;

beforeAll(async () => {
  server = await startFauxqs({ port: 0, logger: false });
  const endpoint = `http://127.0.0.1:${server.port}`;
  const config = { endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS };
  clients = { sns: new SNSClient(config), sqs: new SQSClient(config), endpoint };
  ({ TopicArn: topicArn } = (await clients.sns.send(new CreateTopicCommand({ Name: 'svc-test-task-events' }))) as {
    TopicArn: string;
  });
});
afterAll(async () => {
  clients.sns.destroy();
  clients.sqs.destroy();
  await server.stop();
});

const event = (id: string) => JSON.stringify({ version: 1, id, type: 'task.started', occurredAt: 1 });

async function followQueues(): Promise<string[]> {
  const { QueueUrls } = await clients.sqs.send(new ListQueuesCommand({ QueueNamePrefix: followQueuePrefix(topicArn) }));
  return (QueueUrls ?? []).map((u) => u.split('/').pop()!).sort();
}

async function subscribedQueues(): Promise<string[]> {
  const { Subscriptions } = await clients.sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn }));
  return (Subscriptions ?? []).map((s) => s.Endpoint!.split(':').pop()!).sort();
}

describe('follow queues', () => {
  test('a name says whose follower it is, within the 80 characters SQS allows', () => {
    const name = followQueueName(topicArn, { host: 'ops.laptop.example.com', pid: 4242 }, 'a1b2c3');
    expect(name).toBe('svc-test-task-events-follow-ops_laptop_example_com-4242-a1b2c3');
    const long = followQueueName(`arn:aws:sns:eu-west-1:1:${'t'.repeat(70)}`, { host: 'h'.repeat(40), pid: 1 }, 'ff');
    expect(long.length).toBeLessThanOrEqual(80);
    expect(long).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  test('two followers each receive every event published, then remove their queue and subscription', async () => {
    const a = await FollowQueue.open(clients, topicArn, followQueueName(topicArn, { host: 'h', pid: 1 }, 'aaa'));
    const b = await FollowQueue.open(clients, topicArn, followQueueName(topicArn, { host: 'h', pid: 2 }, 'bbb'));
    const ids = Array.from({ length: 25 }, (_, i) => `ev-${i}`);
    for (const id of ids) await clients.sns.send(new PublishCommand({ TopicArn: topicArn, Message: event(id) }));
    for (const follower of [a, b]) {
      const seen: string[] = [];
      while (seen.length < ids.length) seen.push(...(await follower.receive()).map((e) => e.body.id));
      expect(seen.sort()).toEqual([...ids].sort());
      // Taken out of the follower's own queue: nothing is left for it to hold or release.
      const { Attributes } = await clients.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: follower.queueUrl, AttributeNames: ['All'] }),
      );
      expect([Attributes?.ApproximateNumberOfMessages, Attributes?.ApproximateNumberOfMessagesNotVisible]).toEqual([
        '0',
        '0',
      ]);
    }
    await a.close();
    await b.close();
    expect(await followQueues()).toEqual([]);
    expect(await subscribedQueues()).toEqual([]);
  });

  test('an idle receive waits in a long poll, and stops at once when aborted', async () => {
    const q = await FollowQueue.open(clients, topicArn, followQueueName(topicArn, { host: 'h', pid: 3 }, 'ccc'));
    // The wait each receive asks SQS for.
    const waits: unknown[] = [];
    clients.sqs.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'ReceiveMessageCommand')
          waits.push((args.input as { WaitTimeSeconds?: number }).WaitTimeSeconds);
        return next(args);
      },
      { step: 'initialize', name: 'receiveWaits' },
    );
    const stop = new AbortController();
    const started = Date.now();
    // A receive that did not wait would resolve (with nothing) long before the abort.
    setTimeout(() => stop.abort(), 300);
    try {
      await expect(q.receive(stop.signal)).rejects.toThrow();
    } finally {
      clients.sqs.middlewareStack.remove('receiveWaits');
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(Date.now() - started).toBeLessThan(3300);
    // The longest long poll SQS allows.
    expect(waits).toEqual([20]);
    await q.close();
  });

  test('a follower gone without cleaning up: its stale queue and subscription go, a live one stays', async () => {
    const now = Date.now();
    const gone = followQueueName(topicArn, { host: 'h', pid: 4 }, 'ddd');
    const live = followQueueName(topicArn, { host: 'h', pid: 5 }, 'eee');
    await FollowQueue.open(clients, topicArn, gone, now - STALE_AFTER_MS - 60_000);
    const kept = await FollowQueue.open(clients, topicArn, live, now - STALE_AFTER_MS - 60_000);
    await kept.touch(now - 60_000);
    expect(await removeStaleFollowQueues(clients, topicArn, { now })).toEqual([gone]);
    expect(await followQueues()).toEqual([live]);
    expect(await subscribedQueues()).toEqual([live]);
    await kept.close();
  });
});
