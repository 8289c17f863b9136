// `callbacks console` for a deployed stage: the console's static files, and the read API's routes
// forwarded to the stage's HTTP API signed with the operator's AWS credentials (SigV4 for execute-api, as
// examples/signed-fetch.ts signs). The browser calls /tasks... on this server's own origin: no secret
// reaches it, and the stage gets no new public endpoint. Whoever reaches this server reads the stage with the
// operator's credentials, so it answers no one but the operator's browser:
// - it listens on 127.0.0.1 and answers only requests addressed to 127.0.0.1 or localhost, so that a web page
//   whose host name is made to resolve to 127.0.0.1 (DNS rebinding) cannot read the tasks through it;
// - each run draws a random token, printed in the URL to open; that request sets it as a cookie, and every other
//   request without it is refused: another user of the machine reaches 127.0.0.1 too, and has no token;
// - a request another origin's page makes (its Origin, or Sec-Fetch-Site other than same-origin, or none for an
//   address typed in) is refused, token or not: a page cannot drive it blind with the operator's cookie.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signGet, type Credentials } from '../examples/signed-fetch.ts';
import { API_ROUTE_KEYS } from '../lib/api/routes.ts';
import { CONSOLE_HEADERS, isConsolePath, loadConsoleFiles } from '../devkit/console/static.ts';
import { isLoopbackAddress, isLoopbackHost, matchRoute } from '../devkit/local/http-gateway.ts';
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
  /** Its origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** The address to open: the console, with this run's token (the one request that takes it from the URL). */
  openUrl: string;
  stop(): Promise<void>;
}

/**
 * Why the stage's API URL may not be used, or null: plain http would carry the signed requests and the answers
 * in clear, which only a loopback address (a stand-in, a tunnel) keeps on the machine.
 */
export function insecureApiUrl(apiUrl: string): string | null {
  const url = new URL(apiUrl);
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopbackHost(url.hostname))) return null;
  return (
    `${url.protocol}//${url.host} would carry the signed requests and the tasks in clear: use the stage's https:// ` +
    'URL (http:// only to a loopback address)'
  );
}

/** The fetch metadata that says a request was made by this origin's own page, or typed in. */
const OWN_FETCH_SITES = new Set(['same-origin', 'none']);

/** Headers of the stage's answer that the browser gets. */
const FORWARDED_HEADERS = ['content-type', 'retry-after'];

export async function startConsoleProxy(opts: ConsoleProxyOptions): Promise<ConsoleProxy> {
  const insecure = insecureApiUrl(opts.apiUrl);
  if (insecure) throw new Error(insecure);
  const files = loadConsoleFiles(opts.consoleDir);
  const base = new URL(opts.apiUrl);
  const log = createLogger('console');
  let hosts = new Set<string>();
  let origins = new Set<string>();
  const token = randomBytes(24).toString('base64url');
  // Cookies are not kept apart by port: the name carries it, so that two consoles at once keep their own.
  let cookieName = 'callbacks-console';

  const refuse = (res: ServerResponse, status: number, code: string, message: string) => {
    const body = Buffer.from(JSON.stringify({ error: { code, message } }), 'utf8');
    res.writeHead(status, { ...CONSOLE_HEADERS, 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };
  const isToken = (given: string | undefined) => {
    const [a, b] = [Buffer.from(given ?? ''), Buffer.from(token)];
    return a.length === b.length && timingSafeEqual(a, b);
  };
  const cookieToken = (req: IncomingMessage) =>
    (req.headers.cookie ?? '')
      .split(';')
      .map((part) => part.trim().split('='))
      .find(([name]) => name === cookieName)?.[1];

  /** Why `req` is not the operator's browser on this console, or null. */
  const notTheOperator = (req: IncomingMessage, url: URL): string | null => {
    if (!isLoopbackAddress(req.socket.remoteAddress) || !hosts.has((req.headers.host ?? '').toLowerCase()))
      return 'The console answers loopback clients of 127.0.0.1 or localhost only.';
    const origin = req.headers.origin;
    const site = req.headers['sec-fetch-site'];
    if (
      (origin !== undefined && !origins.has(origin.toLowerCase())) ||
      (site !== undefined && !OWN_FETCH_SITES.has(site))
    )
      return "The console answers its own pages only, not another site's.";
    if (!isToken(url.searchParams.get('token') ?? cookieToken(req)))
      return 'Open the console at the address "callbacks console" printed: it holds the token of this run.';
    return null;
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
    const url = new URL(req.url ?? '/', 'http://console');
    const path = url.pathname;
    const refusal = notTheOperator(req, url);
    if (refusal) return refuse(res, 403, 'source_not_allowed', refusal);
    if (url.searchParams.has('token')) {
      // The address printed: the token becomes this origin's cookie, and leaves the address bar and history.
      url.searchParams.delete('token');
      res.writeHead(303, {
        ...CONSOLE_HEADERS,
        location: `${path}${url.search}`,
        'set-cookie': `${cookieName}=${token}; Path=/; HttpOnly; SameSite=Strict`,
        'cache-control': 'no-store',
        'content-length': 0,
      });
      return res.end();
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
  origins = new Set([...hosts].map((host) => `http://${host}`));
  cookieName = `callbacks-console-${port}`;
  return {
    url: `http://127.0.0.1:${port}`,
    openUrl: `http://127.0.0.1:${port}/console/?token=${token}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
