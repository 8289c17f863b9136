// A callback as the worker receives it: the SQS record of a send, with the attributes the ingest sets for a
// valid signature. Shared by the bench's worker part and its seed tasks.
import type { SQSRecord } from 'aws-lambda';
import type { ScheduledSend } from '../emulator/lifecycles.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { Attr } from '../../lib/queue-message.ts';
import { replayKeyOf } from '../../lib/signature/verify.ts';

/** The secret the bench's callbacks are signed with. */
export const BENCH_SECRET = 'bench-secret';

/**
 * The SQS record the event source mapping would hand the worker for a send, with the attributes the
 * ingest sets for a valid signature in enforce mode (every delivery signed with its own nonce).
 */
export function toSqsRecord(
  send: Pick<ScheduledSend, 'service' | 'body'>,
  index: number,
  receivedAt: number,
): SQSRecord {
  const raw = JSON.stringify(send.body);
  const text = (value: string) => ({
    stringValue: value,
    stringListValues: [],
    binaryListValues: [],
    dataType: 'String',
  });
  const nonce = `n${index.toString(36).padStart(8, '0')}`;
  const timestamp = String(Math.floor(receivedAt / 1000));
  return {
    messageId: `bench-${index}`,
    receiptHandle: `rh-${index}`,
    body: raw,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(receivedAt),
      SenderId: '000000000000',
      ApproximateFirstReceiveTimestamp: String(receivedAt),
    },
    messageAttributes: {
      [Attr.service]: text(send.service),
      [Attr.appKey]: text(String(send.body.appKey)),
      [Attr.receivedAt]: { ...text(String(receivedAt)), dataType: 'Number' },
      [Attr.requestId]: text(`req-${index}`),
      [Attr.verdict]: text('valid'),
      [Attr.mode]: text('enforce'),
      [Attr.replayKey]: text(
        replayKeyOf({ nonce, timestamp, signature: computeSignature(BENCH_SECRET, nonce, timestamp) }) ?? '',
      ),
    },
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:bench',
    awsRegion: 'us-east-1',
  };
}
