import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Attr } from '../queue-message.ts';
import { createSqsClient, enqueueCallback, isQueueSafe, messageAttributes, sqsLimits } from './enqueue.ts';
import type { CallbackMessage } from './enqueue.ts';

const message: CallbackMessage = {
  body: '{"type":1}',
  service: 'recording',
  appKey: 'demo-app',
  receivedAt: 1_763_798_400_123,
  requestId: 'req-1',
  verdict: 'valid',
  mode: 'enforce',
  replayKey: 'f'.repeat(64),
};

describe('messageAttributes', () => {
  test('one attribute per Attr name, receivedAt as a Number', () => {
    expect(messageAttributes(message)).toEqual({
      [Attr.service]: { DataType: 'String', StringValue: 'recording' },
      [Attr.appKey]: { DataType: 'String', StringValue: 'demo-app' },
      [Attr.receivedAt]: { DataType: 'Number', StringValue: '1763798400123' },
      [Attr.requestId]: { DataType: 'String', StringValue: 'req-1' },
      [Attr.verdict]: { DataType: 'String', StringValue: 'valid' },
      [Attr.mode]: { DataType: 'String', StringValue: 'enforce' },
      [Attr.replayKey]: { DataType: 'String', StringValue: 'f'.repeat(64) },
    });
  });

  test('absent request id and replay key are left out (SQS refuses empty values)', () => {
    const attributes = messageAttributes({ ...message, requestId: null, replayKey: null });
    expect(Object.keys(attributes).sort()).toEqual(
      [Attr.appKey, Attr.receivedAt, Attr.service, Attr.mode, Attr.verdict].sort(),
    );
  });
});

describe('isQueueSafe', () => {
  test.each(['{"a":"b"}', 'tab\tnew\nline\r', 'é 日本 😀', '\uE000\uFFFD'])('%j can be queued', (text) => {
    expect(isQueueSafe(text)).toBe(true);
  });
  test.each(['\u0000', 'a\u0001b', '\u001f', '\uFFFE', '\uFFFF', '\uD800', 'x\uDC00'])('%j cannot', (text) => {
    expect(isQueueSafe(text)).toBe(false);
  });
});

describe('createSqsClient', () => {
  test('fails fast: two attempts, short connection and request time-outs that throw', async () => {
    const client = createSqsClient({ region: 'us-east-1' });
    expect(await client.config.maxAttempts()).toBe(2);
    // The handler resolves its configuration lazily; its provider holds what it will use.
    const handlerConfig = await (client.config.requestHandler as unknown as { configProvider: Promise<unknown> })
      .configProvider;
    expect(handlerConfig).toMatchObject({ connectionTimeout: 1000, requestTimeout: 2000, throwOnRequestTimeout: true });
    expect(sqsLimits.deadlineMs).toBeLessThan(5000);
    client.destroy();
  });
});

describe('enqueueCallback against an endpoint that accepts connections and never answers', () => {
  let server: Server;
  let port = 0;
  const sockets: Socket[] = [];
  const allSockets: Socket[] = [];

  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.push(socket);
      allSockets.push(socket);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of allSockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    sockets.length = 0;
  });

  const client = () =>
    createSqsClient({
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });

  test('the overall deadline aborts the call', async () => {
    const sqs = client();
    await expect(enqueueCallback(sqs, `http://127.0.0.1:${port}/000000000000/q`, message, 300)).rejects.toMatchObject({
      name: 'AbortError',
    });
    sqs.destroy();
  });

  test('without the deadline, each attempt times out and the call gives up after two', async () => {
    const sqs = client();
    await expect(
      enqueueCallback(sqs, `http://127.0.0.1:${port}/000000000000/q`, message, 60_000),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(sockets).toHaveLength(2);
    sqs.destroy();
  });
});
