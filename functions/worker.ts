// SQS -> DynamoDB. The settings, client and store are built once per container, at load (a bad setting
// stops the function there); the logic is lib/worker/.
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { buildWorkerDependencies } from '../lib/worker/config.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

const dependencies = buildWorkerDependencies(process.env);

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const { batchItemFailures } = await processBatch(event, dependencies);
  return { batchItemFailures };
}
