// Calling the read API as docs/api.md shows (examples/signed-fetch.ts): the signature the library makes is
// the one AWS's algorithm gives, checked with an implementation written from AWS's description and
// verified on AWS's own published example; the signed request goes through the local stack's routes.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readApi, signGet } from '../examples/signed-fetch.ts';
import { setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { loadTemplate, type Template } from '../devkit/local/template.ts';
import { postSigned } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';
import { referenceSignature } from './support/sigv4-reference.ts';

const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };

test("the reference implementation gives AWS's published signature for its IAM example", () => {
  const ref = referenceSignature({
    method: 'GET',
    host: 'iam.amazonaws.com',
    path: '/',
    query: 'Action=ListUsers&Version=2010-05-08',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8', 'x-amz-date': '20150830T123600Z' },
    amzDate: '20150830T123600Z',
    region: 'us-east-1',
    service: 'iam',
    secretAccessKey: credentials.secretAccessKey,
  });
  expect(ref.signature).toBe('5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7');
});

test('the example signs a read API request for execute-api exactly as the algorithm says', () => {
  const url = new URL(
    'https://abcde12345.execute-api.eu-west-1.amazonaws.com/tasks' +
      '?until=2026-11-22T08:00:00Z&status=upload_failed&since=1d&cursor=eyJxIjp7fX0',
  );
  const when = new Date('2026-11-22T10:20:30.456Z');
  const headers = signGet(url, 'eu-west-1', credentials, when);
  expect(headers['X-Amz-Date']).toBe('20261122T102030Z');
  const ref = referenceSignature({
    method: 'GET',
    host: url.host,
    path: url.pathname,
    query: url.search.slice(1),
    headers: { 'x-amz-date': '20261122T102030Z' },
    amzDate: '20261122T102030Z',
    region: 'eu-west-1',
    service: 'execute-api',
    secretAccessKey: credentials.secretAccessKey,
  });
  expect(headers.Authorization).toBe(
    `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261122/eu-west-1/execute-api/aws4_request, ` +
      `SignedHeaders=${ref.signedHeaders}, Signature=${ref.signature}`,
  );
  // Temporary credentials add their token, signed.
  const withToken = signGet(url, 'eu-west-1', { ...credentials, sessionToken: 'token-1' }, when);
  expect(withToken['X-Amz-Security-Token']).toBe('token-1');
  expect(withToken.Authorization).toContain('SignedHeaders=host;x-amz-date;x-amz-security-token');
});

describe('against the local stack', () => {
  let dir: string;
  let stack: LocalStack;
  let restoreSink: ReturnType<typeof setLogSink>;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callbacks-sigv4-'));
    restoreSink = setLogSink(() => {});
    stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
  });
  afterAll(async () => {
    await stack?.stop();
    setLogSink(restoreSink);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a signed request is served like any other (the local stack does not check it)', async () => {
    const signed = await readApi(stack.url, '/tasks?since=1d&status=failed', { region: 'us-east-1', credentials });
    expect(signed).toEqual({ status: 200, body: { tasks: [], nextCursor: null, incidents: [] } });
    const missing = await readApi(stack.url, '/tasks/rec-none', { region: 'us-east-1', credentials });
    expect(missing.status).toBe(404);
  });
});

describe('who reads which appKey (docs/api.md, "One principal reads every appKey")', () => {
  let dir: string;
  let stack: LocalStack;
  let restoreSink: ReturnType<typeof setLogSink>;
  const original = loadTemplate().template;

  /** The template with the read API callers' policy replaced by `statements`. */
  function withCallerPolicy(statements: unknown[]): Template {
    const variant = structuredClone(original) as Template & { Resources: Record<string, any> };
    variant.Resources.ReadApiInvokePolicy!.Properties.PolicyDocument.Statement = statements;
    return variant;
  }

  /** The policy docs/api.md gives to restrict a caller, its placeholders as the template writes them. */
  function documentedRestriction(): unknown[] {
    const text = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    const json = /<!-- restricted-caller-policy -->\n```json\n([\s\S]*?)\n```/.exec(text)?.[1];
    if (!json) throw new Error('docs/api.md has no restricted-caller-policy block');
    const sub = (arn: string) => ({
      'Fn::Sub': arn
        .replace('arn:aws:', 'arn:${AWS::Partition}:')
        .replace('<region>', '${AWS::Region}')
        .replace('<account>', '${AWS::AccountId}')
        .replace('<api-id>', '${HttpApi}'),
    });
    return (JSON.parse(json).Statement as { Resource: string | string[] }[]).map((st) => ({
      ...st,
      Resource: Array.isArray(st.Resource) ? st.Resource.map(sub) : sub(st.Resource),
    }));
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'callbacks-read-iam-'));
    restoreSink = setLogSink(() => {});
    stack = await startLocalStack({
      port: 0,
      memory: true,
      cwd: dir,
      quiet: true,
      secrets: { 'app-a': ['secret-a'], 'app-b': ['secret-b'] },
    });
    const start = (appKey: string, imageId: string) => ({
      timestamp: Date.now(),
      type: 1,
      appKey,
      imageId,
      roomId: 'room-iam',
      sessionId: 's-iam',
      code: 200,
      errorMessage: 'success',
      config: {},
    });
    expect((await postSigned(stack.url, 'screenshot', start('app-a', 'img-of-a'), 'secret-a')).status).toBe(200);
    expect((await postSigned(stack.url, 'screenshot', start('app-b', 'img-of-b'), 'secret-b')).status).toBe(200);
    await eventually(
      'both tasks',
      async () => [
        (await fetch(`${stack.url}/tasks/img-of-a`)).status,
        (await fetch(`${stack.url}/tasks/img-of-b`)).status,
      ],
      (statuses) => statuses.every((status) => status === 200),
    );
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    setLogSink(restoreSink);
    rmSync(dir, { recursive: true, force: true });
  });

  const status = async (path: string) => (await fetch(`${stack.url}${path}`)).status;

  test("docs/api.md did not say one principal reads every appKey: the callers' policy reads both", async () => {
    stack.iam.useRolesOf(original);
    expect(await status('/tasks?appKey=app-a')).toBe(200);
    expect(await status('/tasks?appKey=app-b')).toBe(200);
    expect([await status('/tasks/img-of-a'), await status('/tasks/img-of-b')]).toEqual([200, 200]);
  });

  test('its policy restricting a caller refuses every listing and still reads a known task of any appKey', async () => {
    stack.iam.useRolesOf(withCallerPolicy(documentedRestriction()));
    try {
      const listing = await fetch(`${stack.url}/tasks?appKey=app-a`);
      expect({ status: listing.status, body: await listing.json() }).toEqual({
        status: 403,
        body: { message: 'Forbidden' },
      });
      expect([await status('/tasks/img-of-a'), await status('/tasks/img-of-b/events')]).toEqual([200, 200]);
    } finally {
      stack.iam.useRolesOf(original);
    }
  });
});
