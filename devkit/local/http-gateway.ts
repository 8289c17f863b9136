// The local stand-in for API Gateway: an HTTP server that turns each request into a payload 2.0 event
// and writes back what the handler answers. Requests are matched against the HTTP API's routes as the
// template declares them (devkit/local/stack-template.ts), each going to its function with its route key and
// path parameters; what no route takes goes to the `$default` route's handler. Routes with the AWS_IAM
// authorizer, and the console, answer loopback clients only, whatever address the server listens on (the local
// stack checks no caller's signature), and only requests addressed to a loopback name or the stack's own --host:
// a web page whose host name is made to resolve to 127.0.0.1 (DNS rebinding) is a loopback client too, but it
// addresses its own name. `GET /health` is answered here: it exists on the local stack only.
import { Buffer } from 'node:buffer';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { errorResponse } from '../../lib/http-responses.ts';
import type { Logger } from '../../lib/log.ts';
import { type ConsoleFiles, isConsolePath } from '../console/static.ts';
import { fromHandlerResult, newRequestId, toApiGatewayEvent } from './apigw-event.ts';
import { errorSentence } from '../../lib/text.ts';

/** API Gateway refuses request payloads over 10 MB before any function runs. */
const API_GATEWAY_MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;

type Handler = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>;

/** A route of the HTTP API: `METHOD /path/{param}` (or `ANY`, `{proxy+}`) and the function it reaches. */
export interface GatewayRoute {
  routeKey: string;
  handler: Handler;
  /** `AWS_IAM`: loopback clients only. */
  authorization?: string;
}

export interface MatchedRoute<R extends { routeKey: string } = GatewayRoute> {
  route: R;
  pathParameters?: Record<string, string>;
}

/** The literal segments of a route's path: API Gateway prefers the most specific route. */
const literalSegments = (routeKey: string) =>
  (routeKey.split(' ')[1] ?? '').split('/').filter((s) => s !== '' && !s.startsWith('{')).length;

/**
 * The route a request reaches, as API Gateway matches it: the method (or ANY), each `{name}` one non-empty
 * path segment, percent-decoded, `{name+}` the rest of the path; the route with the most literal segments
 * wins. Null: the `$default` route.
 */
export function matchRoute<R extends { routeKey: string }>(
  routes: readonly R[],
  method: string,
  path: string,
): MatchedRoute<R> | null {
  const segments = path.split('/').slice(1);
  const ranked = [...routes].sort((a, b) => literalSegments(b.routeKey) - literalSegments(a.routeKey));
  for (const route of ranked) {
    const [routeMethod, routePath] = route.routeKey.split(' ');
    if (!routePath || (routeMethod !== 'ANY' && routeMethod !== method.toUpperCase())) continue;
    const pattern = routePath.split('/').slice(1);
    const parameters: Record<string, string> = {};
    let matched = true;
    for (let i = 0; i < Math.max(pattern.length, segments.length) && matched; i++) {
      const part = pattern[i];
      const segment = segments[i];
      if (part === undefined || segment === undefined) matched = false;
      else if (/^\{.+\+\}$/.test(part)) {
        parameters[part.slice(1, -2)] = segments.slice(i).join('/');
        break;
      } else if (/^\{.+\}$/.test(part)) {
        try {
          if (segment === '') matched = false;
          else parameters[part.slice(1, -1)] = decodeURIComponent(segment);
        } catch {
          matched = false;
        }
      } else if (part !== segment) matched = false;
    }
    if (matched) return { route, ...(Object.keys(parameters).length > 0 ? { pathParameters: parameters } : {}) };
  }
  return null;
}

export interface GatewayOptions {
  /** The `$default` route's function: every request that no other route takes. */
  handler: Handler;
  /** The other routes of the HTTP API; without them every request goes to `handler`. */
  routes?: readonly GatewayRoute[];
  /**
   * The ingest's own body limit. One byte more than this is kept of a body and the rest is read and
   * dropped, so that the handler sees a body over its limit and gives its own 413, without a large body
   * ever being held in memory.
   */
  maxBodyBytes: number;
  /** Above this many bytes the request is answered 413 here and the connection closed (API Gateway's limit). */
  maxPayloadBytes?: number;
  /** The console's files, served under /console/ to loopback clients, like the read API it calls. */
  console?: ConsoleFiles;
  /**
   * The names, besides `localhost` and loopback addresses, that requests to the read API and the console may be
   * addressed to (their Host): the address the stack listens on (`--host`).
   */
  hostNames?: readonly string[];
  /**
   * The IAM check of a request to an `AWS_IAM` route (its method and path): false answers 403 as API Gateway
   * does. Without it such routes are open (to loopback clients).
   */
  authorizeIam?: (method: string, path: string) => boolean;
  /** false while the stack starts or stops: /health and the routes answer 503. */
  isReady: () => boolean;
  log: Logger;
}

const json = (status: number, value: unknown, extra: Record<string, string> = {}) => ({
  status,
  headers: { 'content-type': 'application/json', ...extra },
  body: Buffer.from(JSON.stringify(value), 'utf8'),
});

const errorBody = (code: string, message: string) => ({ error: { code, message } });

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 addresses. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.replace(/^::ffff:/i, '');
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** A host name that always means this machine: `localhost`, or a loopback address (`127.0.0.1`, `[::1]`). */
export function isLoopbackHost(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return name === 'localhost' || isLoopbackAddress(name);
}

/** The host name of a Host header (`name:port`, `[::1]:port`), lower case; '' for none. */
function hostNameOf(host: string | undefined): string {
  const value = (host ?? '').trim().toLowerCase();
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(value);
  if (bracketed) return bracketed[1]!;
  return value.replace(/:\d*$/, '');
}

export function createGateway(opts: GatewayOptions): Server {
  const maxPayloadBytes = opts.maxPayloadBytes ?? API_GATEWAY_MAX_PAYLOAD_BYTES;
  const keepBytes = opts.maxBodyBytes + 1;
  const ownNames = new Set((opts.hostNames ?? []).map((name) => hostNameOf(name)));
  /** Whether a request is addressed to this machine by a name a rebinding page cannot use. */
  const addressedHere = (req: IncomingMessage) => {
    const name = hostNameOf(req.headers.host);
    return name !== '' && (isLoopbackHost(name) || ownNames.has(name));
  };

  const send = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: Buffer,
    cookies: string[] = [],
  ) => {
    if (res.headersSent || res.destroyed) return;
    res.statusCode = status;
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    if (cookies.length > 0) res.setHeader('set-cookie', cookies);
    res.setHeader('content-length', body.length);
    res.end(body);
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    const requestId = newRequestId();
    res.setHeader('apigw-requestid', requestId);
    const path = (req.url ?? '/').split('?')[0];
    if (!opts.isReady()) {
      const r = json(503, errorBody('not_ready', 'The local stack is starting or stopping; retry in a moment.'), {
        'retry-after': '1',
      });
      return send(res, r.status, r.headers, r.body);
    }
    if (path === '/health' && req.method === 'GET') {
      const r = json(200, { ok: true });
      return send(res, r.status, r.headers, r.body);
    }
    const matched = opts.routes ? matchRoute(opts.routes, req.method ?? 'GET', path ?? '/') : null;
    const route = matched?.route;
    const consolePage = opts.console !== undefined && isConsolePath(path ?? '/');
    if ((route?.authorization === 'AWS_IAM' || consolePage) && !isLoopbackAddress(req.socket.remoteAddress)) {
      const r = errorResponse(
        'source_not_allowed',
        'The local read API answers loopback clients only: it has no authorization.',
      );
      return send(res, r.statusCode, r.headers, Buffer.from(r.body, 'utf8'));
    }
    if ((route?.authorization === 'AWS_IAM' || consolePage) && !addressedHere(req)) {
      const r = errorResponse(
        'source_not_allowed',
        'The local read API answers requests addressed to localhost, a loopback address or its --host only.',
      );
      return send(res, r.statusCode, r.headers, Buffer.from(r.body, 'utf8'));
    }
    if (consolePage) return opts.console!.serve(req, res);
    if (
      route?.authorization === 'AWS_IAM' &&
      opts.authorizeIam &&
      !opts.authorizeIam(req.method ?? 'GET', path ?? '/')
    ) {
      const r = json(403, { message: 'Forbidden' });
      return send(res, r.status, r.headers, r.body);
    }
    const event = toApiGatewayEvent({
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      rawHeaders: req.rawHeaders,
      body,
      sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '127.0.0.1',
      protocol: `HTTP/${req.httpVersion}`,
      requestId,
      ...(matched ? { routeKey: matched.route.routeKey, pathParameters: matched.pathParameters } : {}),
    });
    const handler = route ? route.handler : opts.handler;
    let result: APIGatewayProxyResultV2;
    try {
      result = await handler(event);
    } catch (err) {
      // What API Gateway answers when the function fails.
      opts.log.error('handler_failed', {
        route: route?.routeKey ?? '$default',
        requestId,
        error: errorSentence(err),
      });
      const r = json(500, { message: 'Internal Server Error' });
      return send(res, r.status, r.headers, r.body);
    }
    const out = fromHandlerResult(result);
    send(res, out.statusCode, out.headers, out.body, out.cookies);
  };

  return createServer((req, res) => {
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let total = 0;
    let refused = false;
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      total += chunk.length;
      if (total > maxPayloadBytes) {
        refused = true;
        const r = json(
          413,
          errorBody('body_too_large', `The body is larger than the limit of ${opts.maxBodyBytes} bytes.`),
          { connection: 'close' },
        );
        send(res, r.status, r.headers, r.body);
        // Stop reading: the rest of the upload is not wanted, and the connection closes after the answer.
        req.pause();
        res.on('finish', () => req.socket.destroySoon());
        return;
      }
      if (keptBytes < keepBytes) {
        const part = chunk.length <= keepBytes - keptBytes ? chunk : chunk.subarray(0, keepBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
    });
    req.on('end', () => {
      if (refused) return;
      answer(req, res, Buffer.concat(kept, keptBytes)).catch((err) => {
        opts.log.error('gateway_failed', { error: errorSentence(err) });
        if (!res.headersSent) res.destroy();
      });
    });
    // A client that goes away mid-request: nothing to answer.
    req.on('error', () => res.destroy());
  });
}
