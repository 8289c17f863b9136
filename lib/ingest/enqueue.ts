// One SendMessage per accepted callback: the raw body as the message body, what the ingest learned about
// the request as message attributes (written by lib/queue-message.ts). The platform's sender gives up after
// a few seconds, so the client fails fast: a 503 it can retry beats an answer it never sees. The queue is FIFO:
// each message names its group and deduplication id (lib/fifo-ids.ts).
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSClientConfig } from '@aws-sdk/client-sqs';
import { functionClient } from '../aws/clients.ts';
import type { FifoIds } from '../fifo-ids.ts';
import { type CallbackMessage, messageAttributes } from '../queue-message.ts';

/** The bounds of one enqueue. Worst case before a 503: `deadlineMs` (plus the time to notice the abort). */
export const sqsLimits = {
  /** TCP (and TLS) connection set-up, per attempt. */
  connectionTimeoutMs: 1000,
  /** From sending the request to the response headers, per attempt. */
  requestTimeoutMs: 2000,
  /** The first try and one retry. */
  maxAttempts: 2,
  /** The whole SendMessage, retries included. */
  deadlineMs: 3000,
} as const;

/**
 * The SQS client of the ingest, with the short time-outs above; `overrides` serve tests and emulators, `limits`
 * tests that wait for a time-out.
 */
export function createSqsClient(
  overrides: SQSClientConfig = {},
  limits: Record<keyof typeof sqsLimits, number> = sqsLimits,
): SQSClient {
  return functionClient(
    new SQSClient({
      maxAttempts: limits.maxAttempts,
      requestHandler: {
        connectionTimeout: limits.connectionTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        // Without this the request time-out only logs a warning and the call keeps waiting.
        throwOnRequestTimeout: true,
      },
      ...overrides,
    }),
  );
}

/** Sends the message; resolves with its id once SQS accepted it, rejects on any error or time-out. */
export async function enqueueCallback(
  sqs: SQSClient,
  queueUrl: string,
  message: CallbackMessage,
  ids: FifoIds,
  deadlineMs: number = sqsLimits.deadlineMs,
): Promise<string> {
  const output = await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: message.body,
      MessageAttributes: messageAttributes(message),
      MessageGroupId: ids.groupId,
      MessageDeduplicationId: ids.deduplicationId,
    }),
    { abortSignal: AbortSignal.timeout(deadlineMs) },
  );
  if (!output.MessageId) throw new Error('SendMessage returned no MessageId');
  return output.MessageId;
}
