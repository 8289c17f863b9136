// The read API's Lambda handler (GET /tasks, /tasks/{id}, /tasks/{id}/events), built from an environment:
// functions/api.ts builds it once per container from process.env; the local stack one per stack.
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import type { JsonResponse } from '../http-responses.ts';
import { invocationRunner } from '../log.ts';
import { buildApiDependencies } from './config.ts';
import { handleApiRequest } from './handle-request.ts';
import type { ClientSettings } from '../aws/clients.ts';

export type ApiHandler = (
  event: APIGatewayProxyEventV2,
  context?: Pick<Context, 'awsRequestId'>,
) => Promise<JsonResponse>;

/** The DynamoDB client is built here, once: without a table the function does not start. */
export function createApiHandler(
  env: Readonly<Record<string, string | undefined>>,
  clients: ClientSettings = {},
): ApiHandler {
  const dependencies = buildApiDependencies(env, undefined, clients);
  const invocation = invocationRunner();
  return (event, context) => invocation(context, () => handleApiRequest(event, dependencies));
}
