// SQS -> DynamoDB. The client and store are built once per container; the logic is lib/worker/.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { eventPublisherFromEnv } from '../lib/aws/sns/task-events.ts';
import { createLogger } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

// Short per-call time-outs: a stuck call fails that record (retried later through SQS) instead of
// holding the whole batch until the function's 30 s time-out.
const timeouts = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };
const client = new DynamoDBClient({ maxAttempts: 3, requestHandler: timeouts });
const store = new DynamoTaskStore({
  client,
  tableName: process.env.TASKS_TABLE ?? 'tasks',
  rawEventTtlDays: Number(process.env.RAW_EVENT_TTL_DAYS ?? 90),
});
const log = createLogger('worker');
const concurrency = Number(process.env.WORKER_RECORD_CONCURRENCY ?? 5);
const events = eventPublisherFromEnv(process.env, timeouts);

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const { batchItemFailures } = await processBatch(event, { store, log, concurrency, events });
  return { batchItemFailures };
}
