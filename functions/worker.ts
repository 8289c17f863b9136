// SQS -> DynamoDB. The client and store are built once per container; the logic is lib/worker/.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { DynamoTaskStore } from '../lib/aws/dynamo/task-store.ts';
import { eventPublisherFromEnv } from '../lib/aws/sns/task-events.ts';
import { createLogger, invocationRunner } from '../lib/log.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

// Short per-call time-outs: a stuck call fails its record (retried through SQS), not the whole 30 s batch.
const timeouts = { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true };
const client = new DynamoDBClient({ maxAttempts: 3, requestHandler: timeouts });
const store = new DynamoTaskStore({
  client,
  tableName: process.env.TASKS_TABLE ?? 'tasks',
  rawEventTtlDays: Number(process.env.RAW_EVENT_TTL_DAYS ?? 90),
});
const log = createLogger('worker');
const invocation = invocationRunner();
const concurrency = Number(process.env.WORKER_RECORD_CONCURRENCY ?? 5);
const deps = { store, log, concurrency, events: eventPublisherFromEnv(process.env, timeouts) };

export async function handler(event: SQSEvent, context?: Pick<Context, 'awsRequestId'>): Promise<SQSBatchResponse> {
  const { batchItemFailures } = await invocation(context, () => processBatch(event, deps));
  return { batchItemFailures };
}
