// SQS -> DynamoDB. The settings, client and store are built once per container, at load (a bad setting
// stops the function there); the logic is lib/worker/.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { invocationRunner } from '../lib/log.ts';
import { buildWorkerDependencies } from '../lib/worker/config.ts';
import { processBatch } from '../lib/worker/process-batch.ts';

const dependencies = buildWorkerDependencies(process.env);
const invocation = invocationRunner();

export async function handler(event: SQSEvent, context?: Pick<Context, 'awsRequestId'>): Promise<SQSBatchResponse> {
  const { batchItemFailures } = await invocation(context, () => processBatch(event, dependencies));
  return { batchItemFailures };
}
