// An in-process DynamoDB (dynalite) on a free port, with the project's table created.
import dynalite from 'dynalite';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../../lib/aws/dynamo/table.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/deployed-settings.ts';

export interface LocalDynamo {
  endpoint: string;
  client: DynamoDBClient;
  tableName: string;
  stop(): Promise<void>;
}

export function dynamoClient(endpoint: string, maxAttempts = 3): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    maxAttempts,
  });
}

export async function startDynamo(tableName = 'tasks-test'): Promise<LocalDynamo> {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
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
