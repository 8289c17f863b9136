// The verifier's Lambda handler (SQS -> storage -> DynamoDB), built from an environment: functions/verifier.ts
// builds it once per container from process.env; the local stack builds one per stack from the template's.
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ClientSettings } from '../aws/clients.ts';
import { invocationRunner } from '../log.ts';
import { buildVerifierDependencies } from './config.ts';
import { processVerifyBatch } from './verify-batch.ts';

export type VerifierHandler = (event: SQSEvent, context?: Pick<Context, 'awsRequestId'>) => Promise<SQSBatchResponse>;

/** The settings, clients and storage checks are built once, here: a bad setting throws (the function won't start). */
export function createVerifierHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): VerifierHandler {
  const dependencies = buildVerifierDependencies(env, undefined, clients);
  const invocation = invocationRunner();
  return async (event, context) => {
    const { batchItemFailures } = await invocation(context, () => processVerifyBatch(event, dependencies));
    return { batchItemFailures };
  };
}
