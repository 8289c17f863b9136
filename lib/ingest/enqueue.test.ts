import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { CallbackMessage } from '../queue-message.ts';
import { createSqsClient, enqueueCallback, sqsLimits } from './enqueue.ts';

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

const ids = { groupId: 'group', deduplicationId: 'dedup' };

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

  // The deployed limits but a tenth of the request time-out, so that two attempts time out in 0.4 s, not 4 s.
  const client = () =>
    createSqsClient(
      {
        region: 'us-east-1',
        endpoint: `http://127.0.0.1:${port}`,
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      },
      { ...sqsLimits, requestTimeoutMs: sqsLimits.requestTimeoutMs / 10 },
    );

  test('the overall deadline aborts the call', async () => {
    const sqs = client();
    await expect(
      enqueueCallback(sqs, `http://127.0.0.1:${port}/000000000000/q`, message, ids, 100),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    sqs.destroy();
  });

  test('without the deadline, each attempt times out and the call gives up after two', async () => {
    const sqs = client();
    await expect(
      enqueueCallback(sqs, `http://127.0.0.1:${port}/000000000000/q`, message, ids, 60_000),
    ).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(sockets).toHaveLength(2);
    sqs.destroy();
  });
});
