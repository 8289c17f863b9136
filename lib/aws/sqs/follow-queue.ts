// A queue of one's own on the task-events topic, for a reader that follows the events as they are published
// (`callbacks events tail --follow`): created and subscribed when the reader starts, consumed by long polling
// (an idle reader makes one request every 20 s and holds nothing another reader needs), unsubscribed and
// deleted when it stops. A reader that could not clean up (killed, machine asleep) leaves a queue that says
// when it was last alive; the next reader to start removes such queues once they are stale.
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  ListSubscriptionsByTopicCommand,
  SubscribeCommand,
  UnsubscribeCommand,
  type SNSClient,
} from '@aws-sdk/client-sns';
import { readMessage, type ReceivedEvent } from './event-queue.ts';

/** The tag holding the epoch ms a follower last said it was alive. */
const ALIVE_TAG = 'callbacks-follow-alive-at';
/** How often a follower says it is alive. */
export const TOUCH_EVERY_MS = 5 * 60_000;
/** A follow queue not touched for this long belongs to a follower that is gone. */
export const STALE_AFTER_MS = 60 * 60_000;
/** The longest wait SQS allows a receive: the follower's only traffic while nothing is published. */
const LONG_POLL_S = 20;
/** Seconds a message stays in a follow queue nobody reads (a follower gone without cleaning up). */
const RETENTION_S = 3600;
const MAX_QUEUE_NAME = 80;

export interface FollowClients {
  sns: SNSClient;
  sqs: SQSClient;
  /** The SQS endpoint queue URLs are built on (an emulator's); the URLs SQS returns when absent. */
  endpoint?: string;
}

/** `<topic name>-follow-`: the names of every follower's queue on this topic start with it. */
export function followQueuePrefix(topicArn: string): string {
  return `${topicArn.split(':').pop()}-follow-`;
}

/**
 * The queue name of one follower: the topic, then the host and process that follow, then a random tag (two
 * followers of one process, or a pid reused, never share a queue). At most 80 characters, as SQS allows.
 */
export function followQueueName(topicArn: string, who: { host: string; pid: number }, random: string): string {
  const prefix = followQueuePrefix(topicArn);
  const suffix = `${who.pid}-${random}`;
  const room = Math.max(0, MAX_QUEUE_NAME - prefix.length - suffix.length - 1);
  const host = who.host.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, Math.min(room, 24));
  return `${prefix}${host ? `${host}-` : ''}${suffix}`.slice(0, MAX_QUEUE_NAME);
}

function onEndpoint(url: string, endpoint: string | undefined): string {
  return endpoint ? new URL(new URL(url).pathname, endpoint).href : url;
}

/** The SQS policy that lets the topic, and only it, send to the queue. */
function topicMayPublish(queueArn: string, topicArn: string): string {
  return JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { Service: 'sns.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: queueArn,
        Condition: { ArnEquals: { 'aws:SourceArn': topicArn } },
      },
    ],
  });
}

export class FollowQueue {
  private readonly clients: FollowClients;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly subscriptionArn: string;

  private constructor(clients: FollowClients, queueUrl: string, queueArn: string, subscriptionArn: string) {
    this.clients = clients;
    this.queueUrl = queueUrl;
    this.queueArn = queueArn;
    this.subscriptionArn = subscriptionArn;
  }

  /** Creates the queue (tagged alive now), lets the topic send to it and subscribes it, envelope and all. */
  static async open(clients: FollowClients, topicArn: string, name: string, now = Date.now()): Promise<FollowQueue> {
    const { sqs, sns, endpoint } = clients;
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { MessageRetentionPeriod: String(RETENTION_S) },
        tags: { [ALIVE_TAG]: String(now) },
      }),
    );
    const queueUrl = onEndpoint(created.QueueUrl!, endpoint);
    try {
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
      );
      const queueArn = Attributes!.QueueArn!;
      await sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: queueUrl,
          Attributes: { Policy: topicMayPublish(queueArn, topicArn) },
        }),
      );
      // Not raw: the envelope carries the SNS message id, the same for every subscriber of one publish.
      const sub = await sns.send(
        new SubscribeCommand({ TopicArn: topicArn, Protocol: 'sqs', Endpoint: queueArn, ReturnSubscriptionArn: true }),
      );
      return new FollowQueue(clients, queueUrl, queueArn, sub.SubscriptionArn!);
    } catch (err) {
      await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Waits up to 20 s for events and takes them out of the queue (it is this reader's alone). Rejects with an
   * AbortError when `signal` aborts first.
   */
  async receive(signal?: AbortSignal): Promise<ReceivedEvent[]> {
    const { sqs } = this.clients;
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: LONG_POLL_S,
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: signal },
    );
    const messages = res.Messages ?? [];
    if (messages.length === 0) return [];
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: this.queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
    return messages.map(readMessage).filter((e): e is ReceivedEvent => e !== null);
  }

  /** Says the follower is alive, so that no other follower removes its queue as stale. */
  async touch(now = Date.now()): Promise<void> {
    await this.clients.sqs.send(new TagQueueCommand({ QueueUrl: this.queueUrl, Tags: { [ALIVE_TAG]: String(now) } }));
  }

  /** Unsubscribes and deletes the queue; both are tried, the first failure is thrown. */
  async close(): Promise<void> {
    const { sns, sqs } = this.clients;
    const results = await Promise.allSettled([
      sns.send(new UnsubscribeCommand({ SubscriptionArn: this.subscriptionArn })),
      sqs.send(new DeleteQueueCommand({ QueueUrl: this.queueUrl })),
    ]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/**
 * Removes what followers of the topic left behind: their queues not touched for `staleAfterMs`, and the
 * topic's subscriptions of follow queues that no longer exist. Returns the names of the queues removed.
 */
export async function removeStaleFollowQueues(
  clients: FollowClients,
  topicArn: string,
  opts: { now?: number; staleAfterMs?: number } = {},
): Promise<string[]> {
  const { sns, sqs, endpoint } = clients;
  const now = opts.now ?? Date.now();
  const staleAfterMs = opts.staleAfterMs ?? STALE_AFTER_MS;
  const prefix = followQueuePrefix(topicArn);
  const nameOf = (urlOrArn: string) => urlOrArn.split(/[/:]/).pop()!;
  const living = new Set<string>();
  const removed: string[] = [];
  let next: string | undefined;
  do {
    const page = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: prefix, NextToken: next, MaxResults: 1000 }));
    for (const listed of page.QueueUrls ?? []) {
      const url = onEndpoint(listed, endpoint);
      const { Tags } = await sqs.send(new ListQueueTagsCommand({ QueueUrl: url }));
      const aliveAt = Number(Tags?.[ALIVE_TAG]);
      // A queue without the tag is not a follower's: left alone.
      if (Number.isFinite(aliveAt) && now - aliveAt > staleAfterMs) {
        await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
        removed.push(nameOf(url));
      } else {
        living.add(nameOf(url));
      }
    }
    next = page.NextToken;
  } while (next);
  // A follower that started since the listing has a queue not in `living`: only a queue that is gone has
  // its subscription removed.
  const gone = async (queue: string) => {
    try {
      await sqs.send(new GetQueueUrlCommand({ QueueName: queue }));
      return false;
    } catch (err) {
      if (isQueueMissing(err)) return true;
      throw err;
    }
  };
  let token: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, NextToken: token }));
    for (const sub of page.Subscriptions ?? []) {
      const queue = sub.Protocol === 'sqs' && sub.Endpoint ? nameOf(sub.Endpoint) : '';
      if (!queue.startsWith(prefix) || living.has(queue) || !sub.SubscriptionArn?.startsWith('arn:')) continue;
      if (removed.includes(queue) || (await gone(queue))) {
        await sns.send(new UnsubscribeCommand({ SubscriptionArn: sub.SubscriptionArn }));
      }
    }
    token = page.NextToken;
  } while (token);
  return removed;
}

/** SQS says the queue does not exist (deleted, or never created). */
export function isQueueMissing(err: unknown): boolean {
  const e = err as { name?: string; Code?: string; message?: string };
  return (
    e?.name === 'QueueDoesNotExist' ||
    e?.name === 'AWS.SimpleQueueService.NonExistentQueue' ||
    e?.Code === 'AWS.SimpleQueueService.NonExistentQueue' ||
    /does not exist|NonExistentQueue/i.test(e?.message ?? '')
  );
}
