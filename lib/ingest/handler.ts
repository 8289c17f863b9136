// The ingest's Lambda handler, built from an environment: functions/ingest.ts builds it once per container
// from process.env; the local stack builds one per stack from the function's environment in the template.
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { invocationRunner } from '../log.ts';
import { buildIngestDependencies } from './config.ts';
import { handleCallbackRequest } from './handle-request.ts';
import type { IngestResponse } from '../http-responses.ts';
import type { ClientSettings } from '../aws/clients.ts';

export type IngestHandler = (
  event: APIGatewayProxyEventV2,
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<IngestResponse>;

/** The SQS client and the settings are built here, once; the secrets on the first request that needs them. */
export function createIngestHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): IngestHandler {
  const dependencies = buildIngestDependencies(env, {}, clients);
  const invocation = invocationRunner();
  return (event, context) => invocation(context, () => handleCallbackRequest(event, dependencies));
}
