// SQS -> DynamoDB. The client and store are built once per container; the logic is lib/worker/.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

const store = new DynamoTaskStore({
  client: new DynamoDBClient({ maxAttempts: 3 }),
  tableName: process.env.TASKS_TABLE ?? 'tasks',
  rawEventTtlDays: Number(process.env.RAW_EVENT_TTL_DAYS ?? 90),
});
const log = createLogger('worker');
const concurrency = Number(process.env.WORKER_RECORD_CONCURRENCY ?? 5);

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const { batchItemFailures } = await processBatch(event, { store, log, concurrency });
  return { batchItemFailures };
}
