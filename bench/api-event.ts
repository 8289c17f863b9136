// A read-API request as API Gateway hands it to the function, and a logger that writes nothing: what the bench's
// read-API parts send through handleApiRequest.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { ApiRouteKey } from '../lib/api/routes.ts';
import type { Logger } from '../lib/log.ts';

export const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A read-API request as API Gateway hands it to the function. */
export function event(routeKey: ApiRouteKey, id: string | null, rawQueryString = ''): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey,
    rawPath: id === null ? '/tasks' : `/tasks/${id}`,
    rawQueryString,
    headers: {},
    ...(id === null ? {} : { pathParameters: { id } }),
    requestContext: { requestId: 'bench', routeKey } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  };
}
