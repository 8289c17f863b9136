// Lambda entry for POST /callbacks/recording and POST /callbacks/screenshot (API Gateway HTTP API,
// payload format 2.0). The SQS client and the settings are built once per container, at load; the
// secrets are read on the first request that needs them. The logic lives in lib/ingest/.
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { buildIngestDependencies } from '../lib/ingest/config.ts';
import { handleCallbackRequest } from '../lib/ingest/handle-request.ts';
import type { IngestResponse } from '../lib/http-responses.ts';
import { invocationRunner } from '../lib/log.ts';

const dependencies = buildIngestDependencies(process.env);
const invocation = invocationRunner();

export function handler(
  event: APIGatewayProxyEventV2,
  context?: Pick<Context, 'awsRequestId'>,
): Promise<IngestResponse> {
  return invocation(context, () => handleCallbackRequest(event, dependencies));
}
