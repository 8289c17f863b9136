// The gateway over a real socket, with recording handlers in place of the ingest and the read API.
import { Buffer } from 'node:buffer';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { API_ROUTE_KEYS } from '../../lib/api/routes.ts';
import type { Logger } from '../../lib/log.ts';
import { createGateway, isLoopbackAddress } from './http-gateway.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const MAX_BODY = 1024;

let server: Server;
let base: string;
let ready = true;
let events: APIGatewayProxyEventV2[] = [];
let answer: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>;

beforeAll(async () => {
  server = createGateway({
    handler: (event) => {
      events.push(event);
      return answer(event);
    },
    maxBodyBytes: MAX_BODY,
    maxPayloadBytes: 64 * 1024,
    isReady: () => ready,
    log: silent,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  ready = true;
  events = [];
  answer = async (event) => {
    const size = event.isBase64Encoded
      ? Buffer.from(event.body ?? '', 'base64').length
      : Buffer.byteLength(event.body ?? '');
    return size > MAX_BODY
      ? {
          statusCode: 413,
          headers: { 'content-type': 'application/json' },
          body: '{"error":{"code":"body_too_large","message":"too large"}}',
        }
      : { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };
  };
});

test('GET /health answers 200 {"ok":true} without calling the handler', async () => {
  const res = await fetch(`${base}/health`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ ok: true });
  expect(events).toHaveLength(0);
});

test('every other request goes to the handler as an event, and its answer comes back', async () => {
  answer = async () => ({
    statusCode: 405,
    headers: { 'content-type': 'application/json', allow: 'POST' },
    body: '{"error":{"code":"method_not_allowed","message":"m"}}',
  });
  const res = await fetch(`${base}/callbacks/screenshot?nonce=n`, {
    method: 'PUT',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json', 'RC-Nonce': 'x' },
  });
  expect(res.status).toBe(405);
  expect(res.headers.get('allow')).toBe('POST');
  expect(res.headers.get('apigw-requestid')).toBe(events[0]!.requestContext.requestId);
  expect(await res.json()).toEqual({ error: { code: 'method_not_allowed', message: 'm' } });
  expect(events[0]).toMatchObject({
    rawPath: '/callbacks/screenshot',
    rawQueryString: 'nonce=n',
    body: '{"a":1}',
    isBase64Encoded: false,
    headers: { 'rc-nonce': 'x' },
    requestContext: { http: { method: 'PUT', sourceIp: '127.0.0.1' } },
  });
});

test('a body over the ingest limit reaches the handler cut one byte past the limit, and it answers 413', async () => {
  const res = await fetch(`${base}/callbacks/recording`, {
    method: 'POST',
    body: 'x'.repeat(20_000),
    headers: { 'content-type': 'text/plain' },
  });
  expect(res.status).toBe(413);
  expect(events).toHaveLength(1);
  expect(events[0]!.body).toHaveLength(MAX_BODY + 1);
});

test(
  'a body over the gateway payload limit is refused without calling the handler, and the server keeps ' + 'serving',
  async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        `${base}/callbacks/recording`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      // The client keeps sending; the server stops reading and closes the connection after its answer.
      req.on('error', reject);
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    }).catch((err: NodeJS.ErrnoException) => err.code);
    // Either the 413 is read before the connection closes, or the client sees the close while still writing.
    expect([413, 'EPIPE', 'ECONNRESET']).toContain(status);
    expect(events).toHaveLength(0);
    const after = await fetch(`${base}/health`);
    expect(after.status).toBe(200);
  },
);

test('while the stack is not ready, everything answers 503', async () => {
  ready = false;
  const health = await fetch(`${base}/health`);
  expect(health.status).toBe(503);
  expect(((await health.json()) as { error: { code: string } }).error.code).toBe('not_ready');
  const cb = await fetch(`${base}/callbacks/recording`, { method: 'POST', body: '{}' });
  expect(cb.status).toBe(503);
  expect(events).toHaveLength(0);
});

test("a handler that throws gets API Gateway's 500", async () => {
  answer = async () => {
    throw new Error('boom');
  };
  const res = await fetch(`${base}/callbacks/recording`, { method: 'POST', body: '{}' });
  expect(res.status).toBe(500);
  expect(await res.json()).toEqual({ message: 'Internal Server Error' });
});

describe('the read API routes', () => {
  let apiServer: Server;
  let apiEvents: APIGatewayProxyEventV2[];
  const ok = { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

  beforeAll(async () => {
    apiServer = createGateway({
      handler: async () => ok,
      routes: API_ROUTE_KEYS.map((routeKey) => ({
        routeKey,
        authorization: 'AWS_IAM',
        handler: async (event) => {
          apiEvents.push(event);
          return ok;
        },
      })),
      maxBodyBytes: MAX_BODY,
      isReady: () => true,
      log: silent,
    });
    // Every interface: the routes must still refuse clients that are not on loopback.
    await new Promise<void>((resolve) => apiServer.listen(0, '0.0.0.0', resolve));
  });
  afterAll(async () => {
    apiServer.closeAllConnections();
    await new Promise((resolve) => apiServer.close(resolve));
  });
  beforeEach(() => {
    apiEvents = [];
  });
  const port = () => (apiServer.address() as AddressInfo).port;

  test('go to the read API handler with the route key and the decoded id, as API Gateway sends them', async () => {
    for (const [path, routeKey, id] of [
      ['/tasks?room=r', 'GET /tasks', undefined],
      ['/tasks/rec%2F1%20x', 'GET /tasks/{id}', 'rec/1 x'],
      ['/tasks/img-1/events?limit=2', 'GET /tasks/{id}/events', 'img-1'],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${port()}${path}`);
      expect(res.status).toBe(200);
      const event = apiEvents.pop()!;
      expect(event.routeKey).toBe(routeKey);
      expect(event.requestContext.routeKey).toBe(routeKey);
      expect(event.pathParameters?.id).toBe(id);
    }
    // Not a read route: the ingest's $default.
    for (const [method, path] of [
      ['POST', '/tasks'],
      ['GET', '/tasks/'],
      ['GET', '/tasks/a/b'],
      ['GET', '/taskss'],
    ]) {
      await fetch(`http://127.0.0.1:${port()}${path}`, { method });
      expect(apiEvents).toHaveLength(0);
    }
  });

  (external ? test : test.skip)('refuse a client that is not on loopback with 403 source_not_allowed', async () => {
    const res = await fetch(`http://${external}:${port()}/tasks`);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      error: {
        code: 'source_not_allowed',
        message: 'The local read API answers loopback clients only: it has no authorization.',
      },
    });
    expect(apiEvents).toHaveLength(0);
    // The callback routes stay open to it, as deployed.
    expect((await fetch(`http://${external}:${port()}/callbacks/recording`, { method: 'POST' })).status).toBe(200);
  });

  test('loopback addresses', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) expect(isLoopbackAddress(a)).toBe(true);
    for (const a of [undefined, '', '10.0.0.1', '::ffff:192.0.2.1', '128.0.0.1', 'fe80::1', '127.0.0.1.evil'])
      expect(isLoopbackAddress(a)).toBe(false);
  });
});

test("an AWS_IAM route the caller's policy does not allow gets 403; other routes are not checked", async () => {
  const checked: string[] = [];
  const gateway = createGateway({
    handler: async () => ({ statusCode: 200, body: '{}' }),
    routes: [{ routeKey: 'GET /tasks/{id}', authorization: 'AWS_IAM', handler: async () => ({ statusCode: 200 }) }],
    authorizeIam: (method, path) => {
      checked.push(`${method} ${path}`);
      return path !== '/tasks/refused';
    },
    maxBodyBytes: MAX_BODY,
    isReady: () => true,
    log: silent,
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  const at = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  try {
    const refused = await fetch(`${at}/tasks/refused`);
    expect([refused.status, await refused.json()]).toEqual([403, { message: 'Forbidden' }]);
    expect((await fetch(`${at}/tasks/allowed`)).status).toBe(200);
    expect((await fetch(`${at}/callbacks/recording`, { method: 'POST' })).status).toBe(200);
    expect(checked).toEqual(['GET /tasks/refused', 'GET /tasks/allowed']);
  } finally {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway.close(resolve));
  }
});

test('the read API and the console answered any Host (DNS rebinding): loopback names and --host only', async () => {
  const served: string[] = [];
  const gateway = createGateway({
    handler: async () => ({ statusCode: 200, body: '{"ok":true}' }),
    routes: API_ROUTE_KEYS.map((routeKey) => ({
      routeKey,
      authorization: 'AWS_IAM',
      handler: async (event: APIGatewayProxyEventV2) => {
        served.push(event.rawPath);
        return { statusCode: 200, body: '{}' };
      },
    })),
    console: {
      serve: (req, res) => {
        served.push(req.url ?? '');
        res.end('page');
      },
    },
    hostNames: ['devbox.lan'],
    maxBodyBytes: MAX_BODY,
    isReady: () => true,
    log: silent,
  });
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
  const port = (gateway.address() as AddressInfo).port;
  /** A request from this machine addressed to `host` (no Host header at all for null). */
  const addressedTo = (host: string | null, path: string, method = 'GET') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        path,
        method,
        setHost: host !== null,
        headers: host === null ? {} : { host },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8');
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    for (const host of [`attacker.example:${port}`, 'attacker.example', `127.0.0.1.nip.io:${port}`]) {
      for (const path of ['/tasks', '/tasks/rec-1', '/console/']) {
        const res = await addressedTo(host, path);
        expect({ host, path, status: res.status, code: JSON.parse(res.body).error.code }).toEqual({
          host,
          path,
          status: 403,
          code: 'source_not_allowed',
        });
      }
    }
    // Without a Host at all, Node's server refuses an HTTP/1.1 request itself.
    expect((await addressedTo(null, '/tasks')).status).toBe(400);
    expect(served).toEqual([]);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, `devbox.lan:${port}`, 'LOCALHOST']) {
      expect({ host, status: (await addressedTo(host, '/tasks')).status }).toEqual({ host, status: 200 });
      expect({ host, status: (await addressedTo(host, '/console/')).status }).toEqual({ host, status: 200 });
    }
    // The callback routes are the platform's, whatever name it uses.
    expect((await addressedTo(`attacker.example:${port}`, '/callbacks/recording', 'POST')).status).toBe(200);
  } finally {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway.close(resolve));
  }
});
