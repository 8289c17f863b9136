// The local stand-in for Lambda's SQS event source mapping: pollers that gather up to `batchSize`
// messages within the batching window, hand them to the worker handler as a real-shaped SQSEvent, delete
// the records it did not report in `batchItemFailures`, and leave the others in the queue, where they
// come back after the visibility time-out and, after maxReceiveCount receives, go to the dead-letter queue
// (the queue does that itself: its RedrivePolicy, as deployed).
//
// As on AWS: a handler that throws, or that names an item that is not in the batch, fails the whole
// batch. Not emulated: the function time-out (a batch runs to its end) and the scaling of pollers (all
// `concurrency` pollers run from the start, and take turns to wait for a batch's first messages).
//
// On a FIFO queue the queue itself keeps the mapping's promises: a message group with a message in flight
// gives no other, so a group is in one batch at a time, and a failed record left in the queue holds back
// the rest of its group until it is retried. As on AWS the response is taken as it is: records it does not
// name are deleted, so the handler names the later records of a failed group too. A receive hands out as many
// messages of a group as fit, as SQS does (fauxqs hands out one; ./fauxqs.ts makes it deliver as SQS), so a local
// batch holds several callbacks of a task, as on AWS.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { Buffer } from 'node:buffer';
import type { Logger } from '../../lib/log.ts';
import { errorSentence } from '../../lib/text.ts';
import { chunks } from '../../lib/in-parallel.ts';

export type WorkerHandler = (event: SQSEvent) => Promise<SQSBatchResponse | undefined>;

export interface SqsPollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  region: string;
  handler: WorkerHandler;
  /** Most records per invocation. */
  batchSize: number;
  /** How long to keep gathering records after the first one arrives, before invoking. */
  batchingWindowMs: number;
  /** Batches processed at the same time (the mapping's maximum concurrency). */
  concurrency: number;
  /**
   * When set, a failed record is made visible again after this many seconds (ChangeMessageVisibility)
   * instead of after the queue's visibility time-out, to shorten the local retry loop. Its receive count
   * grows the same way, so it still reaches the dead-letter queue after maxReceiveCount receives.
   */
  retryDelaySeconds?: number;
  /** The queue's maxReceiveCount, only to say in the log that a failed record goes to the DLQ next. */
  maxReceiveCount?: number;
  /**
   * Long-poll wait of an idle poller, seconds (default 0.2: the pollers only read fauxqs, which takes fractions,
   * where SQS takes whole seconds). It bounds how long stop() waits for an idle poller (a receive under way is not
   * cut short: fauxqs would still hand it a message, left invisible until its visibility time-out); idle, the
   * stack's polls cost about 1% of a core more than at 1 s.
   */
  waitTimeSeconds?: number;
  /**
   * Longest pause between receives that fail (the queue unreachable), doubling from 100 ms (default 5000):
   * a test that brings the queue back wants the poller back within a moment of it.
   */
  maxReceiveBackoffMs?: number;
  log: Logger;
}

export interface PollerStats {
  /** Handler invocations. */
  batches: number;
  /** Records handed to the handler (a record retried counts once per delivery). */
  records: number;
  /** Records deleted after the handler succeeded with them. */
  succeeded: number;
  /** Records left in the queue because they failed (reported, or their whole batch failed). */
  failed: number;
  /** Invocations in which the handler threw or answered an unusable batchItemFailures. */
  batchFailures: number;
  /** Largest batch so far. */
  largestBatch: number;
  receiveErrors: number;
}

export interface SqsPoller {
  readonly stats: Readonly<PollerStats>;
  /** Batches being gathered or processed right now. */
  busy(): number;
  /** Stops receiving, lets the batches in hand finish, then resolves. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The record Lambda builds from a received message. */
export function toSqsRecord(message: Message, queueArn: string, region: string): SQSRecord {
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    const binary = value.BinaryValue;
    messageAttributes[name] = {
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
      ...(binary !== undefined ? { binaryValue: Buffer.from(binary as Uint8Array).toString('base64') } : {}),
      stringListValues: [],
      binaryListValues: [],
      dataType: value.DataType ?? 'String',
    };
  }
  const a = message.Attributes ?? {};
  const record: SQSRecord = {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
      SentTimestamp: a.SentTimestamp ?? String(Date.now()),
      SenderId: a.SenderId ?? '000000000000',
      ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? a.SentTimestamp ?? String(Date.now()),
      // A FIFO queue's record also says its group, deduplication id and place in the queue.
      ...(a.MessageGroupId === undefined ? {} : { MessageGroupId: a.MessageGroupId }),
      ...(a.MessageDeduplicationId === undefined ? {} : { MessageDeduplicationId: a.MessageDeduplicationId }),
      ...(a.SequenceNumber === undefined ? {} : { SequenceNumber: a.SequenceNumber }),
    },
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
  if (message.MD5OfMessageAttributes) record.md5OfMessageAttributes = message.MD5OfMessageAttributes;
  return record;
}

/**
 * The messageIds to keep in the queue, as Lambda reads a partial batch response: nothing (or an empty
 * list) means all succeeded; an item that is empty or not in the batch fails the whole batch.
 */
export function failedMessageIds(
  response: SQSBatchResponse | undefined | null | undefined,
  event: SQSEvent,
): { ids: Set<string>; wholeBatch: boolean } {
  const all = new Set(event.Records.map((r) => r.messageId));
  const items = response?.batchItemFailures;
  if (items === undefined || items === null) return { ids: new Set(), wholeBatch: false };
  if (!Array.isArray(items)) return { ids: all, wholeBatch: true };
  const ids = new Set<string>();
  for (const item of items) {
    const id = item?.itemIdentifier;
    if (typeof id !== 'string' || id === '' || !all.has(id)) return { ids: all, wholeBatch: true };
    ids.add(id);
  }
  return { ids, wholeBatch: false };
}

export function startSqsPoller(opts: SqsPollerOptions): SqsPoller {
  const stats: PollerStats = {
    batches: 0,
    records: 0,
    succeeded: 0,
    failed: 0,
    batchFailures: 0,
    largestBatch: 0,
    receiveErrors: 0,
  };
  const waitTimeSeconds = opts.waitTimeSeconds ?? 0.2;
  let stopping = false;
  let busy = 0;

  const receive = async (max: number, wait: number): Promise<Message[]> => {
    const out = await opts.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: opts.queueUrl,
        MaxNumberOfMessages: Math.min(10, max),
        WaitTimeSeconds: wait,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return out.Messages ?? [];
  };

  /**
   * The first receive of a batch, one poller at a time: the others wait their turn rather than each hold a long
   * poll of its own. Every message, or group made free, wakes every long poll of the queue, and all but one came
   * back empty, at once, to poll again; the batches in hand still run side by side.
   */
  let turn: Promise<unknown> = Promise.resolve();
  const firstReceive = (): Promise<Message[]> => {
    const mine = turn.then(() => (stopping ? [] : receive(opts.batchSize, waitTimeSeconds)));
    turn = mine.catch(() => undefined);
    return mine;
  };

  /**
   * Waits for a first message, then gathers more until the batch is full or the window has passed. Only
   * the first receive may throw: once messages are in hand they are invoked.
   */
  const gather = async (): Promise<Message[]> => {
    const batch = await firstReceive();
    if (batch.length === 0) return batch;
    busy += 1;
    const deadline = Date.now() + opts.batchingWindowMs;
    // Messages in hand are processed even when stop() comes meanwhile: they are already invisible.
    while (batch.length < opts.batchSize && !stopping) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      let more: Message[];
      try {
        more = await receive(opts.batchSize - batch.length, 0);
      } catch (err) {
        // Invoke with what is in hand rather than leave it invisible until the visibility time-out.
        opts.log.warn('receive_failed', { reason: errorSentence(err) });
        stats.receiveErrors += 1;
        break;
      }
      if (more.length > 0) batch.push(...more);
      else await sleep(Math.min(left, 50));
    }
    return batch;
  };

  const settle = async (records: SQSRecord[], failedIds: Set<string>) => {
    const done = records.filter((r) => !failedIds.has(r.messageId));
    const failed = records.filter((r) => failedIds.has(r.messageId));
    for (const chunk of chunks(done, 10)) {
      try {
        const out = await opts.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: opts.queueUrl,
            Entries: chunk.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })),
          }),
        );
        // Not deleted: it comes back and is applied again, which the worker tolerates (at-least-once).
        if (out.Failed?.length)
          opts.log.warn('delete_failed', { count: out.Failed.length, reason: out.Failed[0]?.Message });
      } catch (err) {
        opts.log.warn('delete_failed', {
          count: chunk.length,
          reason: errorSentence(err),
        });
      }
    }
    if (opts.retryDelaySeconds === undefined || failed.length === 0) return;
    for (const chunk of chunks(failed, 10)) {
      try {
        await opts.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: opts.queueUrl,
            Entries: chunk.map((r, i) => ({
              Id: String(i),
              ReceiptHandle: r.receiptHandle,
              VisibilityTimeout: opts.retryDelaySeconds,
            })),
          }),
        );
      } catch (err) {
        // The record then comes back after the queue's visibility time-out instead.
        opts.log.warn('retry_delay_failed', {
          count: chunk.length,
          reason: errorSentence(err),
        });
      }
    }
  };

  const invoke = async (messages: Message[]) => {
    const records = messages.map((m) => toSqsRecord(m, opts.queueArn, opts.region));
    const event: SQSEvent = { Records: records };
    stats.batches += 1;
    stats.records += records.length;
    stats.largestBatch = Math.max(stats.largestBatch, records.length);
    let failed: { ids: Set<string>; wholeBatch: boolean };
    try {
      failed = failedMessageIds(await opts.handler(event), event);
      if (failed.wholeBatch)
        opts.log.error('batch_failed', {
          records: records.length,
          reason: 'batchItemFailures names an item that is not in the batch',
        });
    } catch (err) {
      failed = { ids: new Set(records.map((r) => r.messageId)), wholeBatch: true };
      opts.log.error('batch_failed', {
        records: records.length,
        error: errorSentence(err),
      });
    }
    if (failed.wholeBatch) stats.batchFailures += 1;
    stats.failed += failed.ids.size;
    stats.succeeded += records.length - failed.ids.size;
    for (const r of records) {
      if (!failed.ids.has(r.messageId)) continue;
      const receiveCount = Number(r.attributes.ApproximateReceiveCount);
      opts.log.warn('record_retry', {
        messageId: r.messageId,
        receiveCount,
        // The queue moves it at its next receive once the count has reached maxReceiveCount.
        next:
          opts.maxReceiveCount !== undefined && receiveCount >= opts.maxReceiveCount ? 'dead-letter queue' : 'retry',
        retryInS: opts.retryDelaySeconds,
      });
    }
    await settle(records, failed.ids);
  };

  const maxBackoffMs = opts.maxReceiveBackoffMs ?? 5000;
  const loop = async () => {
    let backoffMs = Math.min(100, maxBackoffMs);
    while (!stopping) {
      let batch: Message[];
      try {
        batch = await gather();
        backoffMs = 100;
      } catch (err) {
        stats.receiveErrors += 1;
        if (stopping) break;
        opts.log.warn('receive_failed', {
          reason: errorSentence(err),
          retryInMs: backoffMs,
        });
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
        continue;
      }
      if (batch.length === 0) continue;
      try {
        await invoke(batch);
      } finally {
        busy -= 1;
      }
    }
  };

  const loops = Array.from({ length: Math.max(1, opts.concurrency) }, loop);

  return {
    stats,
    busy: () => busy,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}
