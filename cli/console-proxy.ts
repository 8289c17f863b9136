// `callbacks console` for a deployed stage: the console's static files, and the read API's routes
// forwarded to the stage's HTTP API signed with the operator's AWS credentials (SigV4 for execute-api, as
// examples/signed-fetch.ts signs). The browser calls /tasks... on this server's own origin: no secret
// reaches it, and the stage gets no new public endpoint. Listens on 127.0.0.1 only, and answers only
// requests addressed to 127.0.0.1 or localhost, so that a web page whose host name is made to resolve to
// 127.0.0.1 (DNS rebinding) cannot read the tasks through it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signGet, type Credentials } from '../examples/signed-fetch.ts';
import { API_ROUTE_KEYS } from '../lib/api/routes.ts';
import { CONSOLE_HEADERS, isConsolePath, loadConsoleFiles } from '../devkit/console/static.ts';
import { isLoopbackAddress, matchRoute } from '../devkit/local/http-gateway.ts';
import { createLogger } from '../lib/log.ts';
import { errorSentence } from '../lib/text.ts';

/** The read API's routes, forwarded to the stage. */
const API_ROUTES = API_ROUTE_KEYS.map((routeKey) => ({ routeKey }));

export interface ConsoleProxyOptions {
  /** The stage's HttpApiUrl. */
  apiUrl: string;
  region: string;
  /** Called for each forwarded request (the SDK's providers cache and refresh). */
  credentials: () => Promise<Credentials>;
  consoleDir: string;
  /** 0 picks a free one. */
  port: number;
  /** How long a forwarded request may take. */
  timeoutMs?: number;
}

export interface ConsoleProxy {
  url: string;
  stop(): Promise<void>;
}

/** Headers of the stage's answer that the browser gets. */
const FORWARDED_HEADERS = ['content-type', 'retry-after'];

export async function startConsoleProxy(opts: ConsoleProxyOptions): Promise<ConsoleProxy> {
  const files = loadConsoleFiles(opts.consoleDir);
  const base = new URL(opts.apiUrl);
  const log = createLogger('console');
  let hosts = new Set<string>();

  const refuse = (res: ServerResponse, status: number, code: string, message: string) => {
    const body = Buffer.from(JSON.stringify({ error: { code, message } }), 'utf8');
    res.writeHead(status, { ...CONSOLE_HEADERS, 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };

  const forward = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(`${base.pathname.replace(/\/$/, '')}${req.url ?? '/'}`, base);
    try {
      const { host: _host, Host: _Host, ...headers } = signGet(url, opts.region, await opts.credentials());
      const answer = await fetch(url, {
        headers: { ...headers, accept: 'application/json' },
        signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
      });
      const body = Buffer.from(await answer.arrayBuffer());
      const out: Record<string, string | number> = { ...CONSOLE_HEADERS, 'cache-control': 'no-store' };
      for (const name of FORWARDED_HEADERS) {
        const value = answer.headers.get(name);
        if (value !== null) out[name] = value;
      }
      out['content-length'] = body.length;
      res.writeHead(answer.status, out);
      res.end(body);
    } catch (err) {
      // The path is logged, not the query: filters may name users.
      log.warn('console_forward_failed', { path: url.pathname, error: errorSentence(err) });
      refuse(res, 503, 'internal_error', `The stage's read API could not be reached: ${errorSentence(err)}`);
    }
  };

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (!isLoopbackAddress(req.socket.remoteAddress) || !hosts.has((req.headers.host ?? '').toLowerCase())) {
      return refuse(
        res,
        403,
        'source_not_allowed',
        'The console answers loopback clients of 127.0.0.1 or localhost only.',
      );
    }
    if (path === '/') {
      res.writeHead(302, { ...CONSOLE_HEADERS, location: '/console/', 'content-length': 0 });
      return res.end();
    }
    if (isConsolePath(path)) return files.serve(req, res);
    if (matchRoute(API_ROUTES, req.method ?? 'GET', path)) {
      forward(req, res).catch(() => res.destroy());
      return;
    }
    refuse(res, 404, 'not_found', 'No such route: the console is under /console/.');
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE' ? new Error(`port ${opts.port} is already in use (pick another with --port)`) : err,
      ),
    );
    server.listen(opts.port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
  hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
