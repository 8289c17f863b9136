// DynamoDB in-process (dynalite): for the local stack (kept on disk or in memory), and a throw-away one on a
// free port with the project's table, for tests and benchmarks.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { tableDefinition } from '../../lib/aws/dynamo/table.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from './deployed-settings.ts';
import { withoutSdkLogging } from '../../lib/aws/clients.ts';

/** A dynalite server, not yet listening. Tables are usable at once, as the project's tests expect. */
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
 * above, and sends no user agent, which the SDK builds again for each request and nothing here reads.
 */
export function dynamoClient(endpoint: string, maxAttempts = 3): DynamoDBClient {
  const client = withoutSdkLogging(
    new DynamoDBClient({
      endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      maxAttempts,
      signer: unverifiedSignature,
    }),
  );
  client.middlewareStack.remove('getUserAgentMiddleware');
  return client;
}

/** A DynamoDB in memory on a free port, with the project's table created. */
export async function startDynamo(tableName = 'tasks-test'): Promise<LocalDynamo> {
  const server = createDynalite();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = dynamoClient(endpoint);
  await client.send(new CreateTableCommand(tableDefinition(tableName)));
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
