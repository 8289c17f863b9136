// The console's static files as the local stack serves them: every page path gets index.html, the built
// files by name and nothing else, each answer under the console's CSP, to loopback clients only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../lib/log.ts';
import { createGateway } from '../local/http-gateway.ts';
import { loadConsoleFiles } from './static.ts';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };
const notFound = { statusCode: 404, headers: { 'content-type': 'application/json' }, body: '{"from":"ingest"}' };
const external = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

let dir: string;
let server: Server;
let bare: Server;
const base = (s: Server, host = '127.0.0.1') => `http://${host}:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'console-static-'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>index</title>');
  writeFileSync(join(dir, 'app.js'), 'console.log(1)');
  writeFileSync(join(dir, 'build.json'), '{}');
  const gateway = (withConsole: boolean) =>
    createGateway({
      handler: async () => notFound,
      ...(withConsole ? { console: loadConsoleFiles(dir) } : {}),
      maxBodyBytes: 1024,
      isReady: () => true,
      log: silent,
    });
  server = gateway(true);
  bare = gateway(false);
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  for (const s of [server, bare]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  rmSync(dir, { recursive: true, force: true });
});

test('every page path answers index.html under a CSP of default-src self', async () => {
  for (const path of ['/console/', '/console/tasks/rec-1', '/console/tasks/a%3Cb%3E?appKey=k']) {
    const res = await fetch(`${base(server)}${path}`);
    expect({ path, status: res.status, body: await res.text() }).toEqual({
      path,
      status: 200,
      body: '<!doctype html><title>index</title>',
    });
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self';/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  }
  const redirect = await fetch(`${base(server)}/console`, { redirect: 'manual' });
  expect(redirect.status).toBe(308);
  expect(redirect.headers.get('location')).toBe('/console/');
  const app = await fetch(`${base(server)}/console/app.js`);
  expect(app.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  expect(await app.text()).toBe('console.log(1)');
});

test('only the built files are served, by name: no other file, no path out of the folder', async () => {
  for (const path of ['/console/build.json', '/console/tasks/', '/console/x/y.js', '/console/..%2Fpackage.json']) {
    const res = await fetch(`${base(server)}${path}`);
    expect({ path, status: res.status }).toEqual({ path, status: 404 });
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
  }
  const post = await fetch(`${base(server)}/console/`, { method: 'POST', body: '{}' });
  expect(post.status).toBe(405);
  expect(post.headers.get('allow')).toBe('GET, HEAD');
});

test('without the console, /console/ is any other path (the ingest answers it)', async () => {
  const res = await fetch(`${base(bare)}/console/`);
  expect(await res.json()).toEqual({ from: 'ingest' });
});

(external ? test : test.skip)('a client that is not on loopback is refused with 403 source_not_allowed', async () => {
  const res = await fetch(`${base(server, external)}/console/`);
  expect(res.status).toBe(403);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('source_not_allowed');
});
