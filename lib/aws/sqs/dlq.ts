// The dead-letter queue as an operator sees it: a look at its messages that leaves them in place, and a
// redrive that sends them back to the main queue. The redrive sends each copy before it deletes the
// original, so a crash between the two leaves a duplicate (harmless: the worker applies a callback once),
// never a loss. StartMessageMoveTask would do the same on AWS, but not on every emulator, and it cannot
// be limited to N messages. Both queues are FIFO: a dead letter goes back to its message group, in its
// group's order, with a deduplication id of its own (lib/fifo-ids.ts).
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { ID_FIELD_OF, isService } from '../../platform/services.ts';
import { ownGroupId, redriveDeduplicationId, taskGroupId } from '../../fifo-ids.ts';
import { Attr } from '../../queue-message.ts';
import { REDRIVE_SENDER } from '../../domain/message-notes.ts';
import { errorSentence } from '../../text.ts';
import { chunks } from '../../in-parallel.ts';

export interface DeadLetter {
  messageId: string;
  body: string;
  /** The message attributes the ingest set (service, appKey, receivedAt, ...), as strings. */
  attributes: Record<string, string>;
  service: string | null;
  appKey: string | null;
  /** The callback's `type` and task id (recordId or imageId), when the body is a JSON object. */
  type: number | null;
  taskId: string | null;
  /** Receives of the message before this look (SQS counts the look itself as one more). */
  receiveCount: number | null;
  /** When the message was first sent, epoch ms. */
  sentAt: number | null;
}

export interface PeekOptions {
  /** At most this many messages (default 100). */
  limit?: number;
  /** Seconds the messages stay hidden while they are being read, at worst (default 20). */
  holdSeconds?: number;
  /** Long-poll wait of each receive that may find nothing (default 1). */
  waitSeconds?: number;
}

/**
 * Reads up to `limit` messages without consuming them: each is received (so hidden from others for a
 * moment), and all are made visible again as soon as the reading is over. On a FIFO queue a message group
 * gives nothing more while some of its messages are being read, so the look shows the first messages of
 * each group (on AWS up to ten a receive, on fauxqs one), not always all of them.
 */
export async function peekDeadLetters(sqs: SQSClient, queueUrl: string, opts: PeekOptions = {}): Promise<DeadLetter[]> {
  const limit = opts.limit ?? 100;
  const seen = new Map<string, DeadLetter>();
  const handles: string[] = [];
  const expected = (await queueDepth(sqs, queueUrl)).visible;
  try {
    while (seen.size < limit && seen.size < expected) {
      const res = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: Math.min(10, limit - seen.size),
          VisibilityTimeout: opts.holdSeconds ?? 20,
          WaitTimeSeconds: opts.waitSeconds ?? 1,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      const messages = res.Messages ?? [];
      let fresh = 0;
      for (const m of messages) {
        if (m.ReceiptHandle) handles.push(m.ReceiptHandle);
        if (!m.MessageId || seen.has(m.MessageId)) continue;
        seen.set(m.MessageId, describeMessage(m));
        fresh += 1;
      }
      if (fresh === 0) break;
    }
  } finally {
    await release(sqs, queueUrl, handles);
  }
  return [...seen.values()].sort((a, b) => (a.sentAt ?? 0) - (b.sentAt ?? 0)).slice(0, limit);
}

export interface RedriveOptions {
  from: string;
  to: string;
  /** At most this many messages (default: until the dead-letter queue is empty). */
  max?: number;
  /** Seconds a message being moved stays hidden, at worst (default 60). */
  holdSeconds?: number;
  waitSeconds?: number;
  /** Called after each message moved. */
  onMoved?: (moved: number) => void;
}

export interface RedriveResult {
  moved: number;
  /** Each message moved, and the id of its copy in the main queue (the worker notes how the copy came out). */
  copies: { messageId: string; copyId: string }[];
  /** Messages that could not be sent: still in the dead-letter queue. */
  failed: { messageId: string; error: string }[];
  /** Sent to the main queue but not deleted from the dead-letter queue: they will come up again. */
  notDeleted: { messageId: string; error: string }[];
}

/**
 * The message group a dead letter goes back to: its own, or, for one from a standard queue (which has
 * none), the group the ingest gives its task (lib/fifo-ids.ts), else a group of its own.
 */
function groupOfDeadLetter(m: Message): string {
  const group = m.Attributes?.MessageGroupId;
  if (group) return group;
  const service = m.MessageAttributes?.[Attr.service]?.StringValue;
  const appKey = m.MessageAttributes?.[Attr.appKey]?.StringValue;
  if (isService(service) && appKey) {
    let taskId: unknown;
    try {
      taskId = (JSON.parse(m.Body ?? '') as Record<string, unknown> | null)?.[ID_FIELD_OF[service]];
    } catch {
      // Not JSON: no task to name.
    }
    if (typeof taskId === 'string' && taskId.trim() !== '') return taskGroupId(appKey, taskId);
  }
  return ownGroupId(m.MessageId ?? m.Body ?? '');
}

/**
 * Moves messages from the dead-letter queue back to the main queue, body and attributes unchanged, each to
 * its message group. The messages of one group are sent one after the other, in the order received; after
 * a send that fails, the rest of its group is not sent either.
 */
export async function redriveDeadLetters(sqs: SQSClient, opts: RedriveOptions): Promise<RedriveResult> {
  const max = opts.max ?? Infinity;
  const result: RedriveResult = { moved: 0, copies: [], failed: [], notDeleted: [] };
  const handled = new Set<string>();
  while (result.moved < max) {
    const res = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: opts.from,
        MaxNumberOfMessages: Math.min(10, max - result.moved),
        VisibilityTimeout: opts.holdSeconds ?? 60,
        WaitTimeSeconds: opts.waitSeconds ?? 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['MessageGroupId'],
      }),
    );
    const received = res.Messages ?? [];
    const messages = received.filter((m) => m.MessageId && !handled.has(m.MessageId));
    // Received again (a copy sent by this redrive, given up again meanwhile): visible again at once, not moved twice.
    const again = received.filter((m) => !messages.includes(m) && m.ReceiptHandle).map((m) => m.ReceiptHandle!);
    if (again.length) await release(sqs, opts.from, again);
    if (messages.length === 0) break;
    const unsent: string[] = [];
    const groups = new Map<string, Message[]>();
    for (const m of messages) {
      const group = groupOfDeadLetter(m);
      groups.set(group, [...(groups.get(group) ?? []), m]);
    }
    await Promise.all(
      [...groups].map(async ([group, inOrder]) => {
        for (const [i, m] of inOrder.entries()) {
          handled.add(m.MessageId!);
          try {
            const sent = await sqs.send(
              new SendMessageCommand({
                QueueUrl: opts.to,
                MessageBody: m.Body ?? '',
                MessageAttributes: markedSentAgain(resendableAttributes(m.MessageAttributes)),
                MessageGroupId: group,
                MessageDeduplicationId: redriveDeduplicationId(m.MessageId!),
              }),
            );
            result.copies.push({ messageId: m.MessageId!, copyId: sent.MessageId ?? '' });
            // A copy that fails again and comes back to the dead-letter queue meanwhile is not moved twice.
            if (sent.MessageId) handled.add(sent.MessageId);
          } catch (err) {
            result.failed.push({ messageId: m.MessageId!, error: errorSentence(err) });
            for (const left of inOrder.slice(i)) if (left.ReceiptHandle) unsent.push(left.ReceiptHandle);
            return;
          }
          try {
            await sqs.send(new DeleteMessageCommand({ QueueUrl: opts.from, ReceiptHandle: m.ReceiptHandle }));
          } catch (err) {
            result.notDeleted.push({ messageId: m.MessageId!, error: errorSentence(err) });
          }
          result.moved += 1;
          opts.onMoved?.(result.moved);
        }
      }),
    );
    if (unsent.length) {
      // A send that fails (permissions, a wrong queue) fails for the rest too: stop, and leave what was
      // not sent visible again in the dead-letter queue.
      await release(sqs, opts.from, unsent);
      break;
    }
  }
  return result;
}

export async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const res = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Number(res.Attributes?.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(res.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Makes received messages visible again at once. */
async function release(sqs: SQSClient, queueUrl: string, receiptHandles: string[]): Promise<void> {
  for (const chunk of chunks(receiptHandles, 10)) {
    await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((h, j) => ({ Id: String(j), ReceiptHandle: h, VisibilityTimeout: 0 })),
      }),
    );
  }
}

/**
 * The copy's attributes, marked as sent again: it has a new sequence number, so the worker recounts its task
 * (lib/queue-message.ts). SQS takes ten attributes: a message that carries ten already (signature mode `off` with
 * its signature values and its replay claim) goes without the mark, and is known as sent again by its send time.
 */
function markedSentAgain(
  attributes: Record<string, MessageAttributeValue> = {},
): Record<string, MessageAttributeValue> {
  if (Object.keys(attributes).length >= 10) return attributes;
  return { ...attributes, [Attr.resentBy]: { DataType: 'String', StringValue: REDRIVE_SENDER } };
}

/** Attributes as SendMessage accepts them: received ones carry empty list fields SendMessage refuses. */
function resendableAttributes(
  attrs: Record<string, MessageAttributeValue> | undefined,
): Record<string, MessageAttributeValue> | undefined {
  if (!attrs || Object.keys(attrs).length === 0) return undefined;
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, v] of Object.entries(attrs)) {
    out[name] =
      v.BinaryValue !== undefined
        ? { DataType: v.DataType, BinaryValue: v.BinaryValue }
        : { DataType: v.DataType, StringValue: v.StringValue };
  }
  return out;
}

function describeMessage(m: Message): DeadLetter {
  const attributes: Record<string, string> = {};
  for (const [name, v] of Object.entries(m.MessageAttributes ?? {})) {
    if (v.StringValue !== undefined) attributes[name] = v.StringValue;
  }
  let parsed: Record<string, unknown> | null = null;
  try {
    const value = JSON.parse(m.Body ?? '');
    if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value;
  } catch {
    // Not JSON: shown as it is, without type or task id.
  }
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : null);
  const typeValue = Number(parsed?.type);
  const system = m.Attributes ?? {};
  return {
    messageId: m.MessageId!,
    body: m.Body ?? '',
    attributes,
    service: attributes[Attr.service] ?? null,
    appKey: attributes[Attr.appKey] ?? text(parsed?.appKey),
    type: parsed && parsed.type !== undefined && parsed.type !== '' && Number.isFinite(typeValue) ? typeValue : null,
    taskId: text(parsed?.recordId) ?? text(parsed?.imageId),
    receiveCount: system.ApproximateReceiveCount ? Math.max(0, Number(system.ApproximateReceiveCount) - 1) : null,
    sentAt: system.SentTimestamp ? Number(system.SentTimestamp) : null,
  };
}
