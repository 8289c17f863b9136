// What the read API's Lambda builds once per container, from its environment: a read-only view of the
// task table (no write path is even bundled) and its logger.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { functionClient } from '../aws/clients.ts';
import { DynamoTaskReader } from '../aws/dynamo/read-pages.ts';
import { createLogger } from '../log.ts';
import type { ApiDependencies } from './handle-request.ts';

export function buildApiDependencies(env: NodeJS.ProcessEnv): ApiDependencies {
  // Short per-call time-outs: a caller waits on the answer, and a stuck call should end in a 503 it can
  // retry well before the function's own time-out.
  const client = functionClient(
    new DynamoDBClient({
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 1000, requestTimeout: 3000, throwOnRequestTimeout: true },
    }),
  );
  return {
    store: new DynamoTaskReader({ client, tableName: env.TASKS_TABLE ?? 'tasks' }),
    log: createLogger('api'),
    now: Date.now,
    // The function's time-out is 10 s (serverless.yml): answer 503 well before Lambda cuts it short.
    deadlineMs: 8000,
  };
}
