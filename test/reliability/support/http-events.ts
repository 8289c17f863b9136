// API Gateway HTTP API (payload 2.0) events as the ingest receives them, and an in-memory stand-in for
// the SQS client so that thousands of requests can be fuzzed in seconds: the handler only ever calls
// `send(SendMessageCommand)` on it (lib/ingest/enqueue.ts).
import { Buffer } from 'node:buffer';
import type { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';

export interface EventInput {
  method?: string;
  path?: string;
  /** The body as the sender posted it: text, or bytes (then sent base64-encoded, as API Gateway does). */
  body?: string | Uint8Array;
  /** Sends a text body base64-encoded too. */
  base64?: boolean;
  headers?: Record<string, string>;
  rawQueryString?: string;
  requestId?: string;
  now?: number;
}

let counter = 0;

export function httpApiEvent(input: EventInput = {}): APIGatewayProxyEventV2 {
  const method = input.method ?? 'POST';
  const path = input.path ?? '/callbacks/recording';
  const body = input.body;
  const binary = body instanceof Uint8Array;
  const base64 = binary || input.base64 === true;
  const encoded =
    body === undefined
      ? undefined
      : base64
        ? Buffer.from(body as string | Uint8Array).toString('base64')
        : (body as string);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: input.rawQueryString ?? '',
    headers: { ...input.headers },
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'example.com',
      domainPrefix: 'example',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'fuzz' },
      requestId: input.requestId ?? `fuzz-${++counter}`,
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: input.now ?? 0,
    },
    isBase64Encoded: base64,
    ...(encoded === undefined ? {} : { body: encoded }),
  };
}

/** The body text the handler should enqueue for an event: base64 decoded, as UTF-8. */
export function bodyText(body: string | Uint8Array | undefined): string {
  if (body === undefined) return '';
  return typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
}

export interface SentMessage {
  QueueUrl: string | undefined;
  MessageBody: string | undefined;
  MessageAttributes: Record<string, { DataType?: string; StringValue?: string }>;
}

export interface MemoryQueue {
  client: SQSClient;
  sent: SentMessage[];
  /** While set, every SendMessage fails as an unreachable queue would. */
  failing: boolean;
}

/** Only `send` is used by the ingest; anything else would be a change worth noticing, so it throws. */
export function memoryQueue(): MemoryQueue {
  const queue: MemoryQueue = { client: undefined as unknown as SQSClient, sent: [], failing: false };
  const client = {
    async send(command: SendMessageCommand) {
      if (queue.failing)
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { name: 'Error', code: 'ECONNREFUSED' });
      const input = command.input;
      queue.sent.push({
        QueueUrl: input.QueueUrl,
        MessageBody: input.MessageBody,
        MessageAttributes: (input.MessageAttributes ?? {}) as SentMessage['MessageAttributes'],
      });
      return { MessageId: `mem-${queue.sent.length}` };
    },
  };
  queue.client = client as unknown as SQSClient;
  return queue;
}
