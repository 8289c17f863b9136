// DynamoDB in-process (dynalite): for the local stack (kept on disk or in memory), and a throw-away one on a
// free port with the project's table, for tests and benchmarks.
import { EventEmitter } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout } from 'node:timers/promises';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { tableDefinition } from '../../lib/aws/dynamo/table/table.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './deployed-settings.ts';
import { withoutSdkLogging } from '../../lib/aws/clients.ts';

/** A dynalite server, not yet listening. A table it creates is active within milliseconds (createActiveTable). */
export function createDynalite(path?: string): Server {
  return dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(path ? { path } : {}) });
}

export interface LocalDynamo {
  endpoint: string;
  client: DynamoDBClient;
  tableName: string;
  stop(): Promise<void>;
}

/**
 * dynalite requires a request to carry a SigV4 Authorization header and never checks its signature: this
 * client's requests carry a well-formed one with a signature of zeros, rather than compute each (the canonical
 * request, its hash and four HMACs: a sixth of the CPU of each of the hundreds of thousands of requests the tests
 * send). The functions' own clients, in the local stack as deployed, sign as the SDK does.
 */
const unverifiedSignature: NonNullable<DynamoDBClientConfig['signer']> = {
  async sign(request) {
    const at = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
    request.headers['x-amz-date'] = at;
    const scope = `${at.slice(0, 8)}/${LOCAL_REGION}/dynamodb/aws4_request`;
    request.headers.authorization =
      `AWS4-HMAC-SHA256 Credential=${LOCAL_CREDENTIALS.accessKeyId}/${scope}, ` +
      `SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`;
    return request;
  },
};

/**
 * A client of a local dynalite (whose table the tests, the benchmarks and the local stack's tools read): it signs as
 * above, and sends no user agent, which the SDK builds again for each request and nothing here reads. Given the
 * dynalite `server` of this process, it reaches it without a socket (inProcessTransport).
 */
export function dynamoClient(endpoint: string, maxAttempts = 3, server?: Server): DynamoDBClient {
  const client = withoutSdkLogging(
    new DynamoDBClient({
      endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      maxAttempts,
      signer: unverifiedSignature,
      ...(server ? { requestHandler: inProcessTransport(server) } : {}),
    }),
  );
  client.middlewareStack.remove('getUserAgentMiddleware');
  return client;
}

/** Creates a table, once it is active: dynalite answers CreateTable first (a few milliseconds before). */
export async function createActiveTable(client: DynamoDBClient, definition: CreateTableCommandInput): Promise<void> {
  await client.send(new CreateTableCommand(definition));
  for (let i = 0; i < 500; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: definition.TableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await setTimeout(2);
  }
  throw new Error(`table ${definition.TableName} did not become active`);
}

/** A DynamoDB in memory on a free port, with the project's table created. */
export async function startDynamo(tableName = 'tasks-test'): Promise<LocalDynamo> {
  const server = createDynalite();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = dynamoClient(endpoint, 3, server);
  await createActiveTable(client, tableDefinition(tableName));
  return {
    endpoint,
    client,
    tableName,
    async stop() {
      client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type RequestHandler = NonNullable<DynamoDBClientConfig['requestHandler']>;
interface SdkRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
}
interface Handled {
  response: { statusCode: number; headers: Record<string, string>; body: Uint8Array };
}

/**
 * Hands each request to dynalite's request listener in this process, without a socket: the same emulator and the
 * same SDK middleware (serialising, signing, retries, parsing), minus the HTTP client and server between them, whose
 * work is the largest part of a request's CPU here. For the clients of tests and tools in the emulator's own process
 * (a throw-away table's, a local stack's `tableClient()`): the stack's functions reach it over HTTP, as deployed.
 */
function inProcessTransport(server: Server): RequestHandler {
  const [listener] = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  return {
    metadata: { handlerProtocol: 'http/1.1' },
    handle: (request: SdkRequest) =>
      new Promise<Handled>((resolve) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) headers[name.toLowerCase()] = value;
        const req = Object.assign(new EventEmitter(), { method: request.method, url: request.path, headers });
        const answer: Record<string, string> = {};
        const res = {
          statusCode: 200,
          setHeader(name: string, value: unknown) {
            answer[name.toLowerCase()] = String(value);
          },
          end(body?: string) {
            resolve({
              response: { statusCode: this.statusCode, headers: answer, body: Buffer.from(body ?? '', 'utf8') },
            });
          },
        };
        // A turn of the event loop, as a socket would take: what a request sets off (a table becoming active)
        // happens before the next one is read.
        setImmediate(() => {
          listener!(req as unknown as IncomingMessage, res as unknown as ServerResponse);
          const body = request.body;
          if (body instanceof Uint8Array) req.emit('data', Buffer.from(body.buffer, body.byteOffset, body.byteLength));
          else if (body) req.emit('data', Buffer.from(String(body), 'utf8'));
          req.emit('end');
        });
      }),
    updateHttpClientConfig() {},
    httpHandlerConfigs: () => ({}),
    destroy() {},
  } as unknown as RequestHandler;
}
