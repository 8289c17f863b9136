import { Buffer } from 'node:buffer';
import {
  fromHandlerResult,
  isTextContentType,
  requestTime,
  toApiGatewayEvent,
  type HttpRequestParts,
} from './apigw-event.ts';

const request = (over: Partial<HttpRequestParts> = {}): HttpRequestParts => ({
  method: 'post',
  url: '/callbacks/recording?nonce=n1&timestamp=1763798400&a=1&a=2&sp=x%20y',
  rawHeaders: [
    'Host',
    'localhost:3000',
    'Content-Type',
    'application/json',
    'X-Multi',
    'one',
    'x-multi',
    'two',
    'User-Agent',
    'curl/8',
    'Cookie',
    'a=1; b=2',
  ],
  body: Buffer.from('{"appKey":"demo-app","é":1}', 'utf8'),
  sourceIp: '127.0.0.1',
  now: Date.UTC(2026, 10, 22, 10, 52, 7),
  requestId: 'req-1',
  ...over,
});

test('a request becomes a payload 2.0 event for the $default route', () => {
  const event = toApiGatewayEvent(request());
  expect(event).toMatchObject({
    version: '2.0',
    routeKey: '$default',
    rawPath: '/callbacks/recording',
    rawQueryString: 'nonce=n1&timestamp=1763798400&a=1&a=2&sp=x%20y',
    cookies: ['a=1', 'b=2'],
    queryStringParameters: { nonce: 'n1', timestamp: '1763798400', a: '1,2', sp: 'x y' },
    isBase64Encoded: false,
    body: '{"appKey":"demo-app","é":1}',
    requestContext: {
      domainName: 'localhost',
      http: {
        method: 'POST',
        path: '/callbacks/recording',
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'curl/8',
      },
      requestId: 'req-1',
      routeKey: '$default',
      stage: '$default',
      time: '22/Nov/2026:10:52:07 +0000',
      timeEpoch: Date.UTC(2026, 10, 22, 10, 52, 7),
    },
  });
  // Names lower-cased, repeats joined with commas, the cookie header moved to `cookies`.
  expect(event.headers).toMatchObject({
    host: 'localhost:3000',
    'content-type': 'application/json',
    'x-multi': 'one,two',
    'x-forwarded-for': '127.0.0.1',
    'x-forwarded-port': '3000',
  });
  expect(event.headers).not.toHaveProperty('cookie');
});

test('a body that is not text or JSON is base64-encoded, as API Gateway does for binary types', () => {
  const bytes = Buffer.from([0xff, 0xfe, 0x7b, 0x00]);
  for (const contentType of ['application/octet-stream', 'application/x-www-form-urlencoded', undefined]) {
    const rawHeaders = contentType ? ['Content-Type', contentType] : [];
    const event = toApiGatewayEvent(request({ rawHeaders, body: bytes }));
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body!, 'base64')).toEqual(bytes);
  }
});

test('without a body or a query string those fields are left out', () => {
  const event = toApiGatewayEvent(request({ method: 'GET', url: '/health', body: Buffer.alloc(0) }));
  expect(event.body).toBeUndefined();
  expect(event.isBase64Encoded).toBe(false);
  expect(event.queryStringParameters).toBeUndefined();
  expect(event.rawQueryString).toBe('');
});

test('text content types', () => {
  expect(isTextContentType('application/json; charset=utf-8')).toBe(true);
  expect(isTextContentType('Application/JSON')).toBe(true);
  expect(isTextContentType('application/vnd.api+json')).toBe(true);
  expect(isTextContentType('text/plain')).toBe(true);
  expect(isTextContentType('application/octet-stream')).toBe(false);
  expect(isTextContentType('')).toBe(false);
  expect(isTextContentType(undefined)).toBe(false);
});

test('request ids differ from one request to the next', () => {
  const a = toApiGatewayEvent(request({ requestId: undefined }));
  const b = toApiGatewayEvent(request({ requestId: undefined }));
  expect(a.requestContext.requestId).not.toBe(b.requestContext.requestId);
});

test('requestTime pads every field', () => {
  expect(requestTime(Date.UTC(2026, 0, 2, 3, 4, 5))).toBe('02/Jan/2026:03:04:05 +0000');
});

test('a structured result is answered as it is; anything else becomes a 200 JSON body', () => {
  expect(
    fromHandlerResult({
      statusCode: 413,
      headers: { 'Content-Type': 'application/json', Allow: 'POST' },
      body: '{"x":1}',
    }),
  ).toEqual({
    statusCode: 413,
    headers: { 'content-type': 'application/json', allow: 'POST' },
    cookies: [],
    body: Buffer.from('{"x":1}'),
  });
  expect(
    fromHandlerResult({
      statusCode: 200,
      body: Buffer.from('bin').toString('base64'),
      isBase64Encoded: true,
      cookies: ['s=1'],
    }),
  ).toMatchObject({
    body: Buffer.from('bin'),
    cookies: ['s=1'],
  });
  expect(fromHandlerResult({ ok: true } as never)).toEqual({
    statusCode: 200,
    headers: { 'content-type': 'application/json' },
    cookies: [],
    body: Buffer.from('{"ok":true}'),
  });
});
