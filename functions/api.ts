// Lambda entry for the read API: GET /tasks, GET /tasks/{id} and GET /tasks/{id}/events (API Gateway HTTP
// API, payload format 2.0, behind its AWS_IAM authorizer). The DynamoDB client is built once per
// container, at load; the logic lives in lib/api/.
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { buildApiDependencies } from '../lib/api/config.ts';
import { handleApiRequest } from '../lib/api/handle-request.ts';
import type { JsonResponse } from '../lib/http-responses.ts';
import { invocationRunner } from '../lib/log.ts';

const dependencies = buildApiDependencies(process.env);
const invocation = invocationRunner();

export function handler(event: APIGatewayProxyEventV2, context?: Pick<Context, 'awsRequestId'>): Promise<JsonResponse> {
  return invocation(context, () => handleApiRequest(event, dependencies));
}
