// `callbacks console` for a deployed stage, against stand-ins: a "stage" that checks each request's SigV4
// signature with the reference implementation before passing it to the local stack's read API (as API
// Gateway's AWS_IAM authorizer would), and a "CloudFormation" that answers DescribeStacks. The console's
// server must serve the static files under its CSP, sign every read it forwards, answer only the operator's
// browser (requests addressed to loopback names, holding the run's token, from its own pages), and turn an
// unreachable stage into the contract's error.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureConsoleBuilt } from '../cli/console-assets.ts';
import { type ConsoleProxy, startConsoleProxy } from '../cli/console-proxy.ts';
import { outputsOf, stackOutput } from '../cli/stack-outputs.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { recordingStart } from '../lib/platform/bodies.ts';
import { spawn } from 'node:child_process';
import { childEnv, cliBin, nodeBin, runCli, runCliHere, startDevHere } from './support/cli-process.ts';
import { referenceSignature } from './support/sigv4-reference.ts';
import { eventually } from './support/eventually.ts';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const region = 'eu-west-1';

let cwd: string;
let stack: LocalStack;
let stage: Server;
let stageUrl: string;
let cloudFormation: Server;
let proxy: ConsoleProxy;
/** The cookie the address printed sets: the run's token. */
let cookie: string;
const seenByStage: Array<{ path: string; valid: boolean }> = [];

/** Opens the address a console printed, as the operator's browser does; the cookie it is given. */
async function operatorCookie(openUrl: string): Promise<string> {
  const res = await fetch(openUrl, { redirect: 'manual' });
  expect(res.status).toBe(303);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

/** A GET of `path` from the console's own page, with the cookie. */
const get = (path: string, headers: Record<string, string> = {}, of: ConsoleProxy = proxy) =>
  fetch(`${of.url}${path}`, { headers: { cookie, 'sec-fetch-site': 'same-origin', ...headers } });

const listen = async (server: Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

/** True when the request carries the signature AWS's algorithm gives for it. */
function validSignature(
  method: string,
  url: URL,
  headers: Record<string, string | string[] | undefined>,
  service: string,
) {
  const auth = String(headers.authorization ?? '');
  const scope = '\\/\\d{8}\\/([^/]+)\\/([^/]+)\\/aws4_request';
  const m = new RegExp(
    `^AWS4-HMAC-SHA256 Credential=([^/]+)${scope}, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`,
  ).exec(auth);
  if (!m || m[1] !== credentials.accessKeyId || m[2] !== region || m[3] !== service) return false;
  const signed = m[4]!.split(';').filter((h) => h !== 'host');
  const ref = referenceSignature({
    method,
    host: String(headers.host),
    path: url.pathname,
    query: url.search.slice(1),
    headers: Object.fromEntries(signed.map((h) => [h, String(headers[h])])),
    amzDate: String(headers['x-amz-date']),
    region,
    service,
    secretAccessKey: credentials.secretAccessKey,
  });
  return ref.signedHeaders === m[4] && ref.signature === m[5];
}

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-console-proxy-'));
  stack = await startLocalStack({ port: 0, memory: true, cwd, quiet: true, signatureMode: 'off' });
  const body = recordingStart(
    { appKey: 'demo-app', recordId: 'rec-proxy-1', roomId: 'room-1', sessionId: 's-1', userId: '', mode: 3, extra: '' },
    Date.now(),
    { code: 200, message: 'success' },
    {},
    { fileName: 'a.mp4', audioSample: 48000, videoResoulation: '1280x720' },
  );
  expect((await fetch(`${stack.url}/callbacks/recording`, { method: 'POST', body: JSON.stringify(body) })).status).toBe(
    200,
  );
  await eventually(
    'the task listed',
    async () => ((await (await fetch(`${stack.url}/tasks`)).json()) as { tasks: unknown[] }).tasks.length,
    (listed) => listed > 0,
  );
  stage = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://stage');
    const valid = validSignature(req.method ?? 'GET', url, req.headers, 'execute-api');
    seenByStage.push({ path: url.pathname, valid });
    if (!valid) {
      res.writeHead(403, { 'content-type': 'application/json' });
      return res.end('{"message":"Forbidden"}');
    }
    const answer = await fetch(`${stack.url}${req.url}`);
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  stageUrl = await listen(stage);
  cloudFormation = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://cfn');
    const known = url.searchParams.get('StackName') === 'rtc-callbacks-receiver-prod';
    if (!validSignature('GET', url, req.headers, 'cloudformation') || !known) {
      res.writeHead(400, { 'content-type': 'text/xml' });
      return res.end('<ErrorResponse><Error><Message>Stack with id x does not exist</Message></Error></ErrorResponse>');
    }
    res.writeHead(200, { 'content-type': 'text/xml' });
    res.end(
      `<DescribeStacksResponse><DescribeStacksResult><Stacks><member><Outputs>` +
        '<member><OutputKey>ReadApiInvokePolicyArn</OutputKey>' +
        '<OutputValue>arn:aws:iam::1:policy/x</OutputValue></member>' +
        `<member><Description>API</Description><OutputKey>HttpApiUrl</OutputKey>` +
        `<OutputValue>${stageUrl}</OutputValue>` +
        `</member></Outputs></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`,
    );
  });
  const cfnUrl = await listen(cloudFormation);
  const apiUrl = await stackOutput({
    stackName: 'rtc-callbacks-receiver-prod',
    outputKey: 'HttpApiUrl',
    region,
    credentials,
    env: { AWS_ENDPOINT_URL_CLOUDFORMATION: cfnUrl },
  });
  expect(apiUrl).toBe(stageUrl);
  proxy = await startConsoleProxy({
    apiUrl,
    region,
    credentials: async () => credentials,
    consoleDir: await ensureConsoleBuilt(),
    port: 0,
  });
  cookie = await operatorCookie(proxy.openUrl);
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await new Promise((r) => stage?.close(r));
  await new Promise((r) => cloudFormation?.close(r));
  await stack?.stop();
  await rm(cwd, { recursive: true, force: true });
});

test('the console is served under its CSP; paths outside its files are not', async () => {
  const page = await get('/console/tasks/rec-proxy-1');
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(page.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
  expect(await page.text()).toContain('/console/app.js');
  const app = await get('/console/app.js');
  expect(app.headers.get('content-type')).toMatch(/^text\/javascript/);
  for (const path of ['/console/build.json', '/console/%2e%2e/package.json', '/console/tasks/a/b', '/package.json']) {
    expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
  }
  const post = await fetch(`${proxy.url}/console/`, { method: 'POST', body: 'x', headers: { cookie } });
  expect(post.status).toBe(405);
});

test('the console is small and loads nothing from elsewhere (docs/console.md gives its size)', async () => {
  const dir = await ensureConsoleBuilt();
  const app = await readFile(join(dir, 'app.js'), 'utf8');
  const index = await readFile(join(dir, 'index.html'), 'utf8');
  const css = await readFile(join(dir, 'style.css'), 'utf8');
  expect(app.length + index.length + css.length).toBeLessThan(48 * 1024);
  // The only absolute URL is the SVG namespace; no inline script or style, nothing from another origin.
  expect(new Set(app.match(/https?:\/\/[^\s"'`]+/g))).toEqual(new Set(['http://www.w3.org/2000/svg']));
  expect(index.match(/(?:src|href)="[^"]*"/g)).toEqual([
    'href="/console/style.css"',
    'src="/console/app.js"',
    'href="#main"',
    'href="/console/"',
  ]);
  expect(index).not.toMatch(/<script>|<style|style=/);
  expect(css).not.toMatch(/url\(|@import/);
  expect(app).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
});

test('each read is forwarded to the stage signed with SigV4 for execute-api, and its answer comes back', async () => {
  seenByStage.length = 0;
  const viaProxy = await get('/tasks?room=room-1');
  expect(viaProxy.status).toBe(200);
  expect(viaProxy.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
  const direct = await (await fetch(`${stack.url}/tasks?room=room-1`)).json();
  expect(await viaProxy.json()).toEqual(direct);
  const task = await get('/tasks/rec-proxy-1/events?limit=5');
  expect(task.status).toBe(200);
  // A refusal of the API is passed on as it is.
  const refused = await get('/tasks?colour=blue');
  expect(refused.status).toBe(400);
  expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('invalid_query');
  expect(seenByStage).toEqual([
    { path: '/tasks', valid: true },
    { path: '/tasks/rec-proxy-1/events', valid: true },
    { path: '/tasks', valid: true },
  ]);
});

test('a request addressed to another host name is refused (DNS rebinding), and nothing reaches the stage', async () => {
  seenByStage.length = 0;
  const port = new URL(proxy.url).port;
  const status = await new Promise<number>((resolve, reject) => {
    const req = request({
      host: '127.0.0.1',
      port,
      path: '/tasks',
      headers: { host: `attacker.example:${port}`, cookie },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
  expect(status).toBe(403);
  expect(seenByStage).toEqual([]);
  expect((await fetch(`http://localhost:${port}/console/`, { headers: { cookie } })).status).toBe(200);
});

describe("it answers the operator's browser only", () => {
  const refusal = async (res: Response) => ({
    status: res.status,
    code: ((await res.json()) as { error: { code: string } }).error.code,
  });

  test('it signed and forwarded for anyone on 127.0.0.1: without the token of the run, nothing is served', async () => {
    seenByStage.length = 0;
    const other = `callbacks-console-0=${'x'.repeat(32)}`;
    for (const headers of [{}, { cookie: other }, { cookie: `${cookie.split('=')[0]}=${'A'.repeat(32)}` }]) {
      for (const path of ['/tasks', '/tasks/rec-proxy-1', '/console/', '/console/app.js']) {
        const res = await fetch(`${proxy.url}${path}`, { headers });
        expect({ path, ...(await refusal(res)) }).toEqual({ path, status: 403, code: 'source_not_allowed' });
      }
    }
    // A wrong token in the address sets nothing.
    const guessed = await fetch(`${proxy.url}/console/?token=guess`, { redirect: 'manual' });
    expect({ ...(await refusal(guessed)), cookie: guessed.headers.get('set-cookie') }).toEqual({
      status: 403,
      code: 'source_not_allowed',
      cookie: null,
    });
    expect(seenByStage).toEqual([]);
  });

  test('the address printed sets the token as a cookie of this port, kept from scripts, and drops it', async () => {
    const res = await fetch(proxy.openUrl, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/');
    const port = new URL(proxy.url).port;
    expect(res.headers.get('set-cookie')).toMatch(
      new RegExp(`^callbacks-console-${port}=[A-Za-z0-9_-]{32}; Path=/; HttpOnly; SameSite=Strict$`),
    );
    expect((await get('/console/')).status).toBe(200);
  });

  test('a page of another site drove it blind with the cookie: Origin and Sec-Fetch-Site refuse it', async () => {
    seenByStage.length = 0;
    const port = new URL(proxy.url).port;
    const foreign: Record<string, string>[] = [
      { origin: 'https://attacker.example' },
      { origin: 'http://127.0.0.1:1' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      // Another port of 127.0.0.1 is the same site, not the same origin.
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of foreign) {
      const res = await get('/tasks?room=room-1', headers);
      expect({ headers, ...(await refusal(res)) }).toEqual({ headers, status: 403, code: 'source_not_allowed' });
    }
    expect(seenByStage).toEqual([]);
    // Its own pages, and an address typed in, are served.
    expect((await get('/tasks?room=room-1', { origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    expect((await get('/tasks?room=room-1', { origin: `http://localhost:${port}` })).status).toBe(200);
    expect((await get('/console/', { 'sec-fetch-site': 'none' })).status).toBe(200);
  });

  test('--url http:// carried the signed requests in clear: refused unless the host is loopback', async () => {
    const clear = await runCliHere(
      ['console', '--stage', 'prod', '--region', region, '--url', 'http://abc.execute-api.eu-west-1.amazonaws.com'],
      { cwd },
    );
    expect(clear).toMatchObject({ code: 1, stdout: '' });
    expect(clear.stderr.split('\n')[0]).toBe(
      "error: option '--url <HttpApiUrl>' argument 'http://abc.execute-api.eu-west-1.amazonaws.com' is invalid. " +
        'http://abc.execute-api.eu-west-1.amazonaws.com would carry the signed requests and the tasks in clear: ' +
        "use the stage's https:// URL (http:// only to a loopback address).",
    );
    await expect(
      startConsoleProxy({
        apiUrl: 'http://192.0.2.10/',
        region,
        credentials: async () => credentials,
        consoleDir: await ensureConsoleBuilt(),
        port: 0,
      }),
    ).rejects.toThrow(/^http:\/\/192\.0\.2\.10 would carry the signed requests and the tasks in clear/);
  });
});

test('an unreachable stage is a 503 internal_error with a sentence, not a crash', async () => {
  const closed = createServer();
  const url = await listen(closed);
  await new Promise((r) => closed.close(r));
  const lonely = await startConsoleProxy({
    apiUrl: url,
    region,
    credentials: async () => credentials,
    consoleDir: await ensureConsoleBuilt(),
    port: 0,
  });
  try {
    const res = await fetch(`${lonely.url}/tasks`, { headers: { cookie: await operatorCookie(lonely.openUrl) } });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('internal_error');
    expect(body.error.message).toMatch(/^The stage's read API could not be reached: /);
  } finally {
    await lonely.stop();
  }
});

test('the stack output is read from the DescribeStacks answer; a missing stack or output is one sentence', async () => {
  expect(
    outputsOf(
      '<Outputs><member><OutputKey>A</OutputKey><OutputValue>x&amp;y&lt;</OutputValue></member>' +
        '<member><OutputValue>v</OutputValue><OutputKey>B</OutputKey></member></Outputs>',
    ),
  ).toEqual({ A: 'x&y<', B: 'v' });
  const cfnUrl = `http://127.0.0.1:${(cloudFormation.address() as AddressInfo).port}`;
  const lookUp = (stackName: string, outputKey: string) =>
    stackOutput({ stackName, outputKey, region, credentials, env: { AWS_ENDPOINT_URL_CLOUDFORMATION: cfnUrl } });
  await expect(lookUp('rtc-callbacks-receiver-nope', 'HttpApiUrl')).rejects.toThrow(
    'looking up stack rtc-callbacks-receiver-nope in eu-west-1 failed (400): Stack with id x does not exist',
  );
  await expect(lookUp('rtc-callbacks-receiver-prod', 'Nope')).rejects.toThrow(
    'stack rtc-callbacks-receiver-prod in eu-west-1 has no output Nope',
  );
});

describe('the command', () => {
  const cfnEnv = () => ({
    AWS_ENDPOINT_URL_CLOUDFORMATION: `http://127.0.0.1:${(cloudFormation.address() as AddressInfo).port}`,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    HOME: cwd,
  });

  test('without a region, or without credentials, it says so in one sentence', async () => {
    const noRegion = await runCliHere(['console', '--stage', 'prod'], { cwd, env: { HOME: cwd } });
    expect(noRegion).toMatchObject({ code: 1, stdout: '' });
    expect(noRegion.stderr).toBe('callbacks: stage prod needs a region: pass --region or set AWS_REGION\n');
    // A child process: the SDK's credential chain reads the process's own environment and home.
    const noCredentials = await runCli(['console', '--stage', 'prod', '--region', region], { cwd, env: { HOME: cwd } });
    expect(noCredentials.code).toBe(1);
    expect(noCredentials.stderr).toMatch(
      /^callbacks: no AWS credentials were found \(environment, profile, SSO or role\)/,
    );
  });

  test("it finds the stage's API through its stack and serves the console for it on 127.0.0.1", async () => {
    const child = spawn(nodeBin, [cliBin, 'console', '--stage', 'prod', '--region', region, '--port', '0'], {
      cwd,
      env: childEnv(cfnEnv()),
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString('utf8');
          const m = /^Console of stage prod \(eu-west-1\) at (http:\/\/127\.0\.0\.1:\d+\/console\/\?token=\S+)$/m.exec(
            out,
          );
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
      });
      seenByStage.length = 0;
      const origin = new URL(url).origin;
      // Without the token of this run, nothing; with it, the reads are signed and forwarded.
      expect((await fetch(`${origin}/tasks/rec-proxy-1`)).status).toBe(403);
      const theirs = await operatorCookie(url);
      const res = await fetch(`${origin}/tasks/rec-proxy-1`, { headers: { cookie: theirs } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { task: { id: string } }).task.id).toBe('rec-proxy-1');
      expect(seenByStage).toEqual([{ path: '/tasks/rec-proxy-1', valid: true }]);
      expect((await fetch(`${origin}/console/`, { headers: { cookie: theirs } })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 60_000);

  test('callbacks dev serves the console at /console/ and says where', async () => {
    const dev = await startDevHere(['--memory', '--quiet'], {
      cwd: await mkdtemp(join(tmpdir(), 'callbacks-dev-console-')),
    });
    try {
      const res = await fetch(`${dev.info.url}/console/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self'/);
      expect(dev.output().stdout).toMatch(new RegExp(`\\n  console +${dev.info.url}/console/ `));
    } finally {
      await dev.stop();
    }
  }, 60_000);
});
