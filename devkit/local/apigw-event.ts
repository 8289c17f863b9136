// What API Gateway HTTP API (payload format 2.0) hands a Lambda function for an HTTP request, and what it
// makes of the function's answer. The local stack runs the deployed ingest and read API handlers through
// this, so the handlers cannot tell the local stack from API Gateway.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';

export interface HttpRequestParts {
  method: string;
  /** The request target as received: path and query string. */
  url: string;
  /** Node's `rawHeaders`: names and values alternating, repeats kept. */
  rawHeaders: readonly string[];
  body: Buffer;
  sourceIp: string;
  /** e.g. `HTTP/1.1`. */
  protocol?: string;
  /** Epoch milliseconds; defaults to now. */
  now?: number;
  requestId?: string;
  /** The route the request matched (default `$default`), and its path parameters. */
  routeKey?: string;
  pathParameters?: Record<string, string>;
}

export interface HttpResponseParts {
  statusCode: number;
  headers: Record<string, string>;
  /** Each becomes a `set-cookie` header. */
  cookies: string[];
  body: Buffer;
}

/** API Gateway's request ids are 16 random characters, e.g. `JKJaXmPLvHcESHA=`. */
export function newRequestId(): string {
  return `${randomBytes(11).toString('base64').slice(0, 15)}=`;
}

/**
 * Whether API Gateway passes a body of this content type as a string (text) rather than base64. HTTP APIs
 * have no binaryMediaTypes setting: text and JSON types go as they are, everything else (a missing content
 * type included) is base64-encoded.
 */
export function isTextContentType(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (!type) return false;
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/xml' ||
    type.endsWith('+xml') ||
    type === 'application/javascript'
  );
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `requestContext.time`: `22/Nov/2026:10:52:07 +0000`. */
export function requestTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  const date = `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}`;
  return `${date}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

export function toApiGatewayEvent(req: HttpRequestParts): APIGatewayProxyEventV2 {
  const now = req.now ?? Date.now();
  const requestId = req.requestId ?? newRequestId();
  const queryAt = req.url.indexOf('?');
  const rawPath = queryAt === -1 ? req.url : req.url.slice(0, queryAt);
  const rawQueryString = queryAt === -1 ? '' : req.url.slice(queryAt + 1);

  // Lower-case names; a repeated header becomes one value joined with commas. Cookies get their own field.
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase();
    const value = req.rawHeaders[i + 1]!;
    if (name === 'cookie') {
      cookies.push(
        ...value
          .split(';')
          .map((c) => c.trim())
          .filter(Boolean),
      );
      continue;
    }
    headers[name] = name in headers ? `${headers[name]},${value}` : value;
  }
  const host = headers.host ?? 'localhost';
  const port = /:(\d+)$/.exec(host)?.[1] ?? '80';
  headers['x-forwarded-for'] = headers['x-forwarded-for']
    ? `${headers['x-forwarded-for']}, ${req.sourceIp}`
    : req.sourceIp;
  headers['x-forwarded-port'] = port;
  headers['x-forwarded-proto'] = 'http';

  const domainName = host.replace(/:\d+$/, '');
  const routeKey = req.routeKey ?? '$default';
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    headers,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName,
      domainPrefix: domainName.split('.')[0]!,
      http: {
        method: req.method.toUpperCase(),
        path: rawPath,
        protocol: req.protocol ?? 'HTTP/1.1',
        sourceIp: req.sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: requestTime(now),
      timeEpoch: now,
    },
    isBase64Encoded: false,
  };
  if (cookies.length > 0) event.cookies = cookies;
  if (req.pathParameters) event.pathParameters = { ...req.pathParameters };
  if (rawQueryString) {
    const params: Record<string, string> = {};
    for (const [name, value] of new URLSearchParams(rawQueryString)) {
      params[name] = name in params ? `${params[name]},${value}` : value;
    }
    event.queryStringParameters = params;
  }
  if (req.body.length > 0) {
    if (isTextContentType(headers['content-type'])) {
      event.body = req.body.toString('utf8');
    } else {
      event.body = req.body.toString('base64');
      event.isBase64Encoded = true;
    }
  }
  return event;
}

/**
 * The HTTP answer API Gateway builds from a function's result (format 2.0): a result with a `statusCode`
 * is taken as it is; anything else is the body of a 200 JSON answer.
 */
export function fromHandlerResult(result: APIGatewayProxyResultV2): HttpResponseParts {
  if (typeof result === 'object' && result !== null && typeof result.statusCode === 'number') {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = String(value);
    const text = result.body ?? '';
    return {
      statusCode: result.statusCode,
      headers,
      cookies: result.cookies ?? [],
      body: result.isBase64Encoded ? Buffer.from(text, 'base64') : Buffer.from(text, 'utf8'),
    };
  }
  const body = typeof result === 'string' ? result : JSON.stringify(result ?? null);
  return {
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    cookies: [],
    body: Buffer.from(body, 'utf8'),
  };
}
