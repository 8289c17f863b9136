// One SendMessage per accepted callback: the raw body as the message body, what the ingest learned about
// the request as message attributes (names from lib/queue-message.ts). The platform's sender gives up after
// a few seconds, so the client fails fast: a 503 it can retry beats an answer it never sees.
import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { MessageAttributeValue, SQSClientConfig } from '@aws-sdk/client-sqs';
import { Attr } from '../queue-message.ts';
import type { Service, SignatureMode, SignatureVerdict } from '../queue-message.ts';

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

/** The SQS client of the ingest, with the short time-outs above; `overrides` serve tests and emulators. */
export function createSqsClient(overrides: SQSClientConfig = {}): SQSClient {
  return new SQSClient({
    maxAttempts: sqsLimits.maxAttempts,
    requestHandler: {
      connectionTimeout: sqsLimits.connectionTimeoutMs,
      requestTimeout: sqsLimits.requestTimeoutMs,
      // Without this the request time-out only logs a warning and the call keeps waiting.
      throwOnRequestTimeout: true,
    },
    ...overrides,
  });
}

export interface CallbackMessage {
  /** The callback body exactly as received (after base64 decoding). */
  body: string;
  service: Service;
  appKey: string;
  receivedAt: number;
  requestId: string | null;
  verdict: SignatureVerdict;
  mode: SignatureMode;
  /** See replayKeyOf (lib/ingest/signature.ts). */
  replayKey: string | null;
}

// Characters SQS accepts in a message body or a String attribute: #x9 | #xA | #xD | #x20-#xD7FF |
// #xE000-#xFFFD | #x10000-#x10FFFF. Anything else makes SendMessage fail for good, not transiently.
const outsideSqsCharacters = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

export function isQueueSafe(text: string): boolean {
  return !outsideSqsCharacters.test(text);
}

const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

export function messageAttributes(message: CallbackMessage): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {
    [Attr.service]: text(message.service),
    [Attr.appKey]: text(message.appKey),
    [Attr.receivedAt]: { DataType: 'Number', StringValue: String(message.receivedAt) },
    [Attr.verdict]: text(message.verdict),
    [Attr.mode]: text(message.mode),
  };
  // SQS refuses empty attribute values: absent ones are left out.
  if (message.requestId) attributes[Attr.requestId] = text(message.requestId);
  if (message.replayKey) attributes[Attr.replayKey] = text(message.replayKey);
  return attributes;
}

/** Sends the message; resolves with its id once SQS accepted it, rejects on any error or time-out. */
export async function enqueueCallback(
  sqs: SQSClient,
  queueUrl: string,
  message: CallbackMessage,
  deadlineMs: number = sqsLimits.deadlineMs,
): Promise<string> {
  const output = await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: message.body,
      MessageAttributes: messageAttributes(message),
    }),
    { abortSignal: AbortSignal.timeout(deadlineMs) },
  );
  if (!output.MessageId) throw new Error('SendMessage returned no MessageId');
  return output.MessageId;
}
