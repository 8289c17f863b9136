// Reads task events from an SQS queue subscribed to the task-events topic (raw delivery or the SNS
// envelope alike), for `callbacks events tail` and `callbacks verify`. Reading leaves the messages in the
// queue: a pass receives until nothing is visible (each message hidden meanwhile, so that the pass sees
// it once), then makes what it read visible again for the next pass and for other readers. The reader
// remembers what it has returned, so each pass returns only what is new. Several readers at once each see
// every message: a reader that finds nothing visible while others hold messages gives its own back and waits
// for theirs, as long as the others' passes move (they take and give back messages), and at most a visibility
// time-out more once they stop: by then a message a reader gone away held is visible again.
import {
  ChangeMessageVisibilityBatchCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { CreateTopicCommand, SubscribeCommand, type SNSClient } from '@aws-sdk/client-sns';
import { chunks } from '../../in-parallel.ts';

/** A task event as read from the queue: the published body (not checked beyond JSON) and its attributes. */
export interface ReceivedEvent {
  /** The SNS message id (one per publish: a republished event has a new one). */
  messageId: string;
  body: { id: string; type: string; occurredAt?: number; task?: { id?: string; service?: string } } & Record<
    string,
    unknown
  >;
  attributes: Record<string, string>;
}

export interface EventQueueReaderOptions {
  /** Seconds a received message stays hidden from the next receive (default 30). */
  visibilityTimeoutS?: number;
  /**
   * How long a pass waits for messages other readers hold once their passes stop moving (default: the visibility
   * time-out and 5 s more, after which what a reader gone away held is visible again).
   */
  contendedWaitMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The first back-off of a pass that finds other readers' passes in its way, and the most it grows to. */
const CONTENDED_BACK_OFF_MS = 100;
const MAX_CONTENDED_BACK_OFF_MS = 1600;

export class EventQueueReader {
  private readonly seen = new Set<string>();
  /** Messages that were not a task event (not JSON, no id). */
  unreadable = 0;

  private readonly sqs: SQSClient;
  readonly queueUrl: string;
  private readonly opts: EventQueueReaderOptions;

  constructor(sqs: SQSClient, queueUrl: string, opts: EventQueueReaderOptions = {}) {
    this.sqs = sqs;
    this.queueUrl = queueUrl;
    this.opts = opts;
  }

  /** Receives until the queue shows nothing more; returns the events not returned before. */
  async poll(waitTimeS = 0): Promise<ReceivedEvent[]> {
    const fresh: ReceivedEvent[] = [];
    const handles: string[] = [];
    try {
      await this.pass(waitTimeS, fresh, handles);
    } finally {
      await this.release(handles);
    }
    return fresh;
  }

  private async pass(waitTimeS: number, fresh: ReceivedEvent[], handles: string[]): Promise<void> {
    const visibilityS = this.opts.visibilityTimeoutS ?? 30;
    const patienceMs = this.opts.contendedWaitMs ?? visibilityS * 1000 + 5000;
    // When the messages others hold last changed, or this pass last found one new: the wait is measured from
    // there, not from the start, so that a long history read by several readers at once is read whole by each.
    let movedAt = Date.now();
    let heldByOthers = -1;
    let contended = 0;
    for (let first = true; ; first = false) {
      const res = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: visibilityS,
          WaitTimeSeconds: first ? waitTimeS : 0,
          MessageAttributeNames: ['All'],
        }),
      );
      const messages = res.Messages ?? [];
      if (messages.length === 0) {
        const queue = await this.counts();
        const others = queue.hidden - handles.length;
        // Nothing visible and nothing hidden by another reader: this pass has seen the queue whole. (A message
        // another reader gave back after the receive above is visible here, and read on.)
        if (queue.visible === 0 && others <= 0) return;
        if (others !== heldByOthers) {
          heldByOthers = others;
          movedAt = Date.now();
        }
        if (Date.now() - movedAt >= patienceMs) return;
        if (others > 0) {
          // Another reader's pass hides them: ours go back first, so that two readers never wait for each other.
          await this.release(handles.splice(0));
        }
        // Then a random while, longer each time: readers that came back together would meet again and again.
        await sleep(Math.random() * Math.min(CONTENDED_BACK_OFF_MS * 2 ** contended++, MAX_CONTENDED_BACK_OFF_MS));
        continue;
      }
      const before = fresh.length;
      for (const m of messages) {
        if (m.ReceiptHandle) handles.push(m.ReceiptHandle);
        const event = readMessage(m);
        if (!event) {
          if (m.MessageId && !this.seen.has(m.MessageId)) this.unreadable += 1;
          if (m.MessageId) this.seen.add(m.MessageId);
          continue;
        }
        if (this.seen.has(event.messageId)) continue;
        this.seen.add(event.messageId);
        fresh.push(event);
      }
      if (fresh.length > before) movedAt = Date.now();
    }
  }

  /** The messages visible, and those hidden (by this reader and others in the middle of a pass). */
  private async counts(): Promise<{ visible: number; hidden: number }> {
    const res = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(res.Attributes?.ApproximateNumberOfMessages ?? 0),
      hidden: Number(res.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }

  /** Makes the messages of a pass visible again. Best effort: left alone, they reappear at their time-out. */
  private async release(handles: string[]): Promise<void> {
    for (const chunk of chunks(handles, 10)) {
      const entries = chunk.map((h, j) => ({ Id: String(j), ReceiptHandle: h, VisibilityTimeout: 0 }));
      await this.sqs
        .send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: this.queueUrl, Entries: entries }))
        .catch(() => undefined);
    }
  }
}

/** One SQS message as a task event: the raw body, or the SNS envelope's Message. */
export function readMessage(m: Message): ReceivedEvent | null {
  let outer: unknown;
  try {
    outer = JSON.parse(m.Body ?? '');
  } catch {
    return null;
  }
  const envelope = outer as { Type?: unknown; Message?: unknown; MessageId?: unknown; MessageAttributes?: unknown };
  let body: unknown = outer;
  let attributes: Record<string, string> = {};
  let messageId = m.MessageId ?? '';
  if (envelope?.Type === 'Notification' && typeof envelope.Message === 'string') {
    try {
      body = JSON.parse(envelope.Message);
    } catch {
      return null;
    }
    if (typeof envelope.MessageId === 'string') messageId = envelope.MessageId;
    const attrs = (envelope.MessageAttributes ?? {}) as Record<string, { Value?: unknown }>;
    attributes = Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, String(v?.Value ?? '')]));
  } else {
    attributes = Object.fromEntries(
      Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? '']),
    );
  }
  const b = body as ReceivedEvent['body'] | null;
  if (!b || typeof b !== 'object' || typeof b.id !== 'string' || typeof b.type !== 'string') return null;
  return { messageId, body: b, attributes };
}

/**
 * The task-events topic and a queue subscribed to it with raw delivery, created if absent (the local
 * stack's; tests use it too). Queue URLs are built on `endpoint`, as for the callback queues.
 */
export async function ensureEventsTopicAndQueue(
  sns: SNSClient,
  sqs: SQSClient,
  endpoint: string,
  names: { topic: string; queue: string },
  retentionS = 86_400,
): Promise<{ topicArn: string; queueUrl: string }> {
  const { TopicArn } = await sns.send(new CreateTopicCommand({ Name: names.topic }));
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: names.queue }));
  const queueUrl = new URL(new URL(QueueUrl!).pathname, endpoint).href;
  await sqs.send(
    new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { MessageRetentionPeriod: String(retentionS) } }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  // Subscribing again with the same attributes returns the existing subscription.
  await sns.send(
    new SubscribeCommand({
      TopicArn,
      Protocol: 'sqs',
      Endpoint: Attributes!.QueueArn!,
      Attributes: { RawMessageDelivery: 'true' },
    }),
  );
  return { topicArn: TopicArn!, queueUrl };
}
