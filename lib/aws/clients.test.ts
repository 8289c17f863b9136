import { GetItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { MANY_CALLS, functionClient, setClientHook } from './clients.ts';

/** A client whose calls are answered at once, before any request is built, and whose SDK logger keeps its lines. */
function answeredClient(extra: Record<string, unknown> = {}) {
  const logged: unknown[] = [];
  const client = new DynamoDBClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 's' },
    logger: { debug() {}, info: (line: unknown) => void logged.push(line), warn() {}, error() {} },
    ...extra,
  });
  // Innermost at its step: the SDK's logging middleware, where present, wraps it.
  client.middlewareStack.add(() => async () => ({ output: { $metadata: {} }, response: {} }), {
    step: 'initialize',
    priority: 'low',
    name: 'answerAtOnce',
  });
  return { client, logged };
}

const get = new GetItemCommand({ TableName: 't', Key: { pk: { S: 'p' }, sk: { S: 's' } } });

describe('functionClient', () => {
  test("a function's client has no SDK request logging (the function logs its own lines)", async () => {
    const plain = answeredClient();
    await plain.client.send(get);
    // The SDK's own middleware logs every call (its input and output filtered for sensitive fields).
    expect(plain.logged).toHaveLength(1);

    const own = answeredClient();
    expect(functionClient(own.client)).toBe(own.client);
    await own.client.send(get);
    expect(own.logged).toEqual([]);
  });

  test('the hook still gets every client the functions build', () => {
    const seen: object[] = [];
    const previous = setClientHook((client) => void seen.push(client));
    try {
      const { client } = answeredClient();
      functionClient(client);
      expect(seen).toEqual([client]);
    } finally {
      setClientHook(previous);
    }
  });
});

test('a client of many calls resolves a command’s middleware once, not on every call', async () => {
  const resolve = GetItemCommand.prototype.resolveMiddleware;
  let resolved = 0;
  GetItemCommand.prototype.resolveMiddleware = function (this: GetItemCommand, ...args) {
    resolved += 1;
    return resolve.apply(this, args);
  };
  try {
    const once = answeredClient(MANY_CALLS).client;
    for (let i = 0; i < 3; i++) await once.send(get);
    expect(resolved).toBe(1);

    resolved = 0;
    const every = answeredClient().client;
    for (let i = 0; i < 3; i++) await every.send(get);
    expect(resolved).toBe(3);
  } finally {
    GetItemCommand.prototype.resolveMiddleware = resolve;
  }
});
