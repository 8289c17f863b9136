// The worker's Lambda handler (SQS -> DynamoDB), built from an environment: functions/worker.ts builds it once
// per container from process.env; the local stack builds one per stack from the template's environment.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { invocationRunner } from '../log.ts';
import { buildWorkerDependencies } from './config.ts';
import { processBatch } from './process-batch.ts';
import type { ClientSettings } from '../aws/clients.ts';

export type WorkerHandler = (event: SQSEvent, context?: Pick<Context, 'awsRequestId'>) => Promise<SQSBatchResponse>;

/** The settings, client and store are built here, once: a bad setting throws (the function does not start). */
export function createWorkerHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): WorkerHandler {
  const dependencies = buildWorkerDependencies(env, undefined, clients);
  const invocation = invocationRunner();
  return async (event, context) => {
    const { batchItemFailures } = await invocation(context, () => processBatch(event, dependencies));
    return { batchItemFailures };
  };
}
