// The console's static files (built by scripts/build-console.mjs into dist/console/), served under
// /console/ by the local stack and by `callbacks console`. Every page path of the console answers the same
// index.html; the browser code routes. Only the files the build wrote are served, by name, so no path can
// reach outside the folder. Every answer carries a Content-Security-Policy of `default-src 'self'`: the
// console loads nothing from elsewhere and runs no inline script, so a value from the store that slipped
// into markup could still run nothing.
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';

const CONSOLE_PREFIX = '/console';

/** Headers of every console answer, the proxied read API's included. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/** The console's pages: the list, and one task (its id percent-encoded in one segment). */
const PAGE = /^\/console\/(?:tasks\/[^/]+)?$/;

export function isConsolePath(path: string): boolean {
  return path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`);
}

export interface ConsoleFiles {
  /** Answers a request whose path isConsolePath. */
  serve(req: IncomingMessage, res: ServerResponse): void;
}

/** Reads the built files once: they are small (docs/console.md gives their size). */
export function loadConsoleFiles(dir: string): ConsoleFiles {
  const files = new Map<string, { type: string; body: Buffer }>();
  for (const name of readdirSync(dir)) {
    const type = CONTENT_TYPES[name.slice(name.lastIndexOf('.'))];
    if (type) files.set(name, { type, body: readFileSync(join(dir, name)) });
  }
  const index = files.get('index.html');
  if (!index) throw new Error(`${dir} holds no index.html: build the console first (npm run build)`);

  const send = (res: ServerResponse, status: number, headers: Record<string, string>, body: Buffer | string) => {
    res.statusCode = status;
    for (const [name, value] of Object.entries({ ...CONSOLE_HEADERS, ...headers })) res.setHeader(name, value);
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    res.setHeader('content-length', bytes.length);
    res.end(res.req.method === 'HEAD' ? undefined : bytes);
  };
  const refuse = (res: ServerResponse, status: number, code: string, message: string, extra = {}) =>
    send(res, status, { 'content-type': 'application/json', ...extra }, JSON.stringify({ error: { code, message } }));

  return {
    serve(req, res) {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        return refuse(res, 405, 'method_not_allowed', 'The console answers GET only.', { allow: 'GET, HEAD' });
      }
      if (path === CONSOLE_PREFIX) return send(res, 308, { location: `${CONSOLE_PREFIX}/` }, '');
      if (PAGE.test(path)) {
        return send(res, 200, { 'content-type': index.type, 'cache-control': 'no-cache' }, index.body);
      }
      const name = path.slice(`${CONSOLE_PREFIX}/`.length);
      const file = name !== 'index.html' ? files.get(name) : undefined;
      if (!file) return refuse(res, 404, 'not_found', 'No such page of the console.');
      return send(res, 200, { 'content-type': file.type, 'cache-control': 'no-cache' }, file.body);
    },
  };
}
