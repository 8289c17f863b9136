// SQS events as Lambda receives them, built from callback bodies the way the ingest enqueues them.
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { toSqsRecord } from '../../devkit/local/sqs-poller.ts';
import type { Service } from '../../lib/platform/services.ts';
import type { ReplayClaim } from '../../lib/domain/replay-claim.ts';
import { Attr } from '../../lib/queue-message.ts';
import type { HeldSignature, Sender } from '../../lib/signature/held.ts';
import type { SignatureMode, SignatureVerdict } from '../../lib/signature/verdicts.ts';

let counter = 0;

export interface RecordOptions {
  messageId?: string;
  verdict?: SignatureVerdict;
  mode?: SignatureMode;
  replayKey?: string;
  receivedAt?: number;
  receiveCount?: number;
  /** The signature values the ingest keeps for a verdict other than `valid`. */
  heldSignature?: HeldSignature;
  /** Who sent the request, as the ingest saw it. */
  sender?: Sender;
  /** A FIFO queue's MessageGroupId (absent: a standard queue's record). */
  groupId?: string;
  /** The SQS SequenceNumber of a FIFO queue's message (a decimal string of up to 20+ digits). */
  sequenceNumber?: string;
  /** The ingest's replay claim of the message (with `replayKey`). */
  claim?: ReplayClaim;
}

export function sqsRecord(service: Service, body: string | object, opts: RecordOptions = {}): SQSRecord {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const s = (v: string) => ({ stringValue: v, dataType: 'String', stringListValues: [], binaryListValues: [] });
  const attrs: SQSRecord['messageAttributes'] = {
    [Attr.service]: s(service),
    [Attr.receivedAt]: {
      stringValue: String(opts.receivedAt ?? 1763800000000),
      dataType: 'Number',
      stringListValues: [],
      binaryListValues: [],
    },
    [Attr.verdict]: s(opts.verdict ?? 'valid'),
    [Attr.mode]: s(opts.mode ?? 'enforce'),
    [Attr.requestId]: s(`req-${counter}`),
  };
  if (opts.replayKey) attrs[Attr.replayKey] = s(opts.replayKey);
  if (opts.claim) attrs[Attr.claim] = s(opts.claim);
  if (opts.heldSignature) attrs[Attr.signatureValues] = s(JSON.stringify(opts.heldSignature));
  if (opts.sender) attrs[Attr.sender] = s(JSON.stringify(opts.sender));
  return {
    messageId: opts.messageId ?? `msg-${++counter}`,
    receiptHandle: `rh-${counter}`,
    body: raw,
    attributes: {
      ApproximateReceiveCount: String(opts.receiveCount ?? 1),
      SentTimestamp: String(opts.receivedAt ?? 1763800000000),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(opts.receivedAt ?? 1763800000000),
      ...(opts.groupId === undefined ? {} : { MessageGroupId: opts.groupId }),
      ...(opts.sequenceNumber
        ? { SequenceNumber: opts.sequenceNumber, ...(opts.groupId === undefined ? { MessageGroupId: 'test' } : {}) }
        : {}),
    },
    messageAttributes: attrs,
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:callbacks',
    awsRegion: 'us-east-1',
  };
}

export function sqsEvent(records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/** The record as SQS hands it out again after a failure or a lost answer: its receive count one higher. */
export function receivedAgain(record: SQSRecord): SQSRecord {
  const count = Number(record.attributes.ApproximateReceiveCount) || 1;
  return { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(count + 1) } };
}

/**
 * The record as `callbacks dlq redrive` sends it back: a new message (id, sequence number, first receive) with the
 * same body and attributes, marked as sent again.
 */
export function redriven(record: SQSRecord, sequenceNumber: string): SQSRecord {
  const s = (v: string) => ({ stringValue: v, dataType: 'String', stringListValues: [], binaryListValues: [] });
  return {
    ...record,
    messageId: `${record.messageId}-redriven-${sequenceNumber}`,
    attributes: { ...record.attributes, ApproximateReceiveCount: '1', SequenceNumber: sequenceNumber },
    messageAttributes: { ...record.messageAttributes, [Attr.resentBy]: s('dlq-redrive') },
  };
}

/** One receive of `queueUrl` (up to ten messages, deleted), as the records Lambda builds of them. */
export async function receiveOnce(sqs: SQSClient, queueUrl: string, queueArn: string): Promise<SQSRecord[]> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
      WaitTimeSeconds: 0,
    }),
  );
  const messages = out.Messages ?? [];
  for (const m of messages)
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
  return messages.map((m) => toSqsRecord(m, queueArn, 'us-east-1'));
}

/** Every message `queueUrl` holds, received as `receiveOnce` does until none is left, in the order received. */
export async function drainQueue(sqs: SQSClient, queueUrl: string, queueArn: string): Promise<SQSRecord[]> {
  const all: SQSRecord[] = [];
  for (let batch = await receiveOnce(sqs, queueUrl, queueArn); batch.length > 0; ) {
    all.push(...batch);
    batch = await receiveOnce(sqs, queueUrl, queueArn);
  }
  return all;
}
