// The event API Gateway hands the read API for `GET /tasks?<query>`, for tests that call its handler directly.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { ApiRoutes } from '../../lib/api/routes.ts';

export function listTasksEvent(rawQueryString: string, userAgent = 'test'): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: ApiRoutes.tasks,
    rawPath: '/tasks',
    rawQueryString,
    headers: {},
    requestContext: {
      http: { method: 'GET', path: '/tasks', protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent },
      requestId: `${userAgent}-list`,
      routeKey: ApiRoutes.tasks,
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
  };
}
