// The ingest handler against fauxqs started in-process: every status of the contract, every fixture read
// back from the queue byte for byte with its attributes, the signature matrix, the extension-backed secrets
// and an unreachable queue.
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { startFauxqs } from 'fauxqs';
import type { FauxqsServer } from 'fauxqs';
import { createActiveTable, type LocalDynamo, startDynamo } from '../devkit/local/dynamo.ts';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { callbackDeduplicationId, taskGroupId } from '../lib/fifo-ids.ts';
import { buildIngestDependencies } from '../lib/ingest/config.ts';
import type { IngestDependencies } from '../lib/ingest/config.ts';
import { createSqsClient } from '../lib/ingest/enqueue.ts';
import { handleCallbackRequest } from '../lib/ingest/handle-request.ts';
import type { SecretsProvider } from '../lib/signature/secrets.ts';
import { setLogSink } from '../lib/log.ts';
import type { Logger } from '../lib/log.ts';
import { Attr, MAX_USER_AGENT_CHARS } from '../lib/queue-message.ts';
import type { SignatureMode } from '../lib/signature/verdicts.ts';
import { computeSignature } from '../lib/platform/signing.ts';

const NOW = 1_763_798_500_000;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const SECRET = 'demo-secret-never-logged';
const ROTATED = 'rotated-secret-never-logged';
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };

const fixturesDir = new URL('./fixtures/', import.meta.url);
const fixtures = readdirSync(fixturesDir)
  .filter((f) => f.endsWith('.json'))
  .map((file) => ({
    file,
    service: file.startsWith('recording') ? ('recording' as const) : ('screenshot' as const),
    raw: readFileSync(new URL(file, fixturesDir), 'utf8'),
  }));
const recordingBody = fixtures.find((f) => f.file === 'recording-2-slice.json')!.raw;

// --- events -------------------------------------------------------------------------------------------

let requestCounter = 0;

interface EventInput {
  method?: string;
  path?: string;
  body?: string;
  base64?: boolean;
  headers?: Record<string, string>;
  query?: string;
  sourceIp?: string;
  userAgent?: string;
}

function httpApiEvent(input: EventInput = {}): APIGatewayProxyEventV2 {
  const method = input.method ?? 'POST';
  const path = input.path ?? '/callbacks/recording';
  const requestId = `req-${++requestCounter}`;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: input.query ?? '',
    headers: { 'content-type': 'application/json', ...input.headers },
    requestContext: {
      accountId: '000000000000',
      apiId: 'api',
      domainName: 'example.com',
      domainPrefix: 'example',
      http: {
        method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: input.sourceIp ?? '192.0.2.1',
        userAgent: input.userAgent ?? 'test',
      },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: NOW,
    },
    isBase64Encoded: input.base64 ?? false,
    ...(input.body === undefined
      ? {}
      : { body: input.base64 ? Buffer.from(input.body).toString('base64') : input.body }),
  };
}

function signedHeaders(secret = SECRET, timestamp = String(NOW), nonce = 'nonce-1'): Record<string, string> {
  return { 'RC-Nonce': nonce, 'RC-Timestamp': timestamp, 'RC-Signature': computeSignature(secret, nonce, timestamp) };
}

// --- environment --------------------------------------------------------------------------------------

let fauxqs: FauxqsServer;
let queueUrl: string;
let sqs: SQSClient;
/** Where signatures are claimed: a table of its own for each test, as each test has the queue to itself. */
let dynamo: LocalDynamo;
let tableName: string;
let tables = 0;
let lines: Array<Record<string, unknown>> = [];

const captureLogger: Logger = (() => {
  const push = (level: string) => (event: string, fields?: Record<string, unknown>) => {
    lines.push(JSON.parse(JSON.stringify({ level, event, ...fields })));
  };
  return { debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
})();

function sqsClientAt(endpoint: string): SQSClient {
  return createSqsClient({ region: 'us-east-1', endpoint, credentials });
}

function deps(
  options: {
    mode?: SignatureMode;
    env?: Record<string, string>;
    secrets?: SecretsProvider;
    sqs?: SQSClient;
    now?: () => number;
  } = {},
): IngestDependencies {
  return buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      SIGNATURE_MODE: options.mode ?? 'enforce',
      // A development stage, where mode off may run.
      DEVELOPMENT_STAGE: 'true',
      CALLBACK_SECRETS: JSON.stringify({ 'demo-app': [SECRET, ROTATED] }),
      TASKS_TABLE: tableName,
      ...options.env,
    },
    {
      sqs: options.sqs ?? sqs,
      dynamo: dynamo.client,
      logger: captureLogger,
      now: options.now ?? (() => NOW),
      ...(options.secrets ? { secrets: options.secrets } : {}),
    },
  );
}

async function receiveOne(): Promise<Message | undefined> {
  const out = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      MessageAttributeNames: ['All'],
      WaitTimeSeconds: 0,
    }),
  );
  const messages = out.Messages ?? [];
  for (const m of messages)
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
  expect(messages.length).toBeLessThanOrEqual(1);
  return messages[0];
}

async function expectQueueEmpty(): Promise<void> {
  expect(await receiveOne()).toBeUndefined();
}

const attr = (message: Message | undefined, name: string) => message?.MessageAttributes?.[name];
const parse = (body: string | undefined) => JSON.parse(body ?? 'null');

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  queueUrl = fauxqs.createQueue('callbacks-ingest-test').queueUrl;
  sqs = sqsClientAt(`http://127.0.0.1:${fauxqs.port}`);
  dynamo = await startDynamo('ingest-claims');
});

afterAll(async () => {
  sqs.destroy();
  await fauxqs.stop();
  await dynamo.stop();
});

beforeEach(async () => {
  lines = [];
  fauxqs.reset();
  tableName = `ingest-claims-${++tables}`;
  await createActiveTable(dynamo.client, tableDefinition(tableName));
});

// --- tests --------------------------------------------------------------------------------------------

describe('fixtures are enqueued byte for byte with their attributes', () => {
  test.each(fixtures)('$file', async ({ service, raw }) => {
    const event = httpApiEvent({ path: `/callbacks/${service}`, body: raw, headers: signedHeaders() });
    const response = await handleCallbackRequest(event, deps());
    expect(response).toEqual({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });

    const message = await receiveOne();
    expect(message?.Body).toBe(raw);
    const signature = computeSignature(SECRET, 'nonce-1', String(NOW));
    expect(message?.MessageAttributes).toEqual({
      [Attr.service]: { DataType: 'String', StringValue: service },
      [Attr.appKey]: { DataType: 'String', StringValue: 'demo-app' },
      [Attr.receivedAt]: { DataType: 'Number', StringValue: String(NOW) },
      [Attr.requestId]: { DataType: 'String', StringValue: event.requestContext.requestId },
      [Attr.sender]: { DataType: 'String', StringValue: '{"sourceIp":"192.0.2.1","userAgent":"test"}' },
      [Attr.verdict]: { DataType: 'String', StringValue: 'valid' },
      [Attr.mode]: { DataType: 'String', StringValue: 'enforce' },
      [Attr.replayKey]: {
        DataType: 'String',
        StringValue: sha256(JSON.stringify([signature])),
      },
      [Attr.claim]: { DataType: 'String', StringValue: 'stored' },
    });
  });

  test.each(fixtures)('$file sent base64-encoded', async ({ service, raw }) => {
    const response = await handleCallbackRequest(
      httpApiEvent({ path: `/callbacks/${service}`, body: raw, base64: true, headers: signedHeaders() }),
      deps(),
    );
    expect(response.statusCode).toBe(200);
    expect((await receiveOne())?.Body).toBe(raw);
  });

  test('formatting, unknown fields and numeric strings are passed on untouched', async () => {
    // Characters outside the BMP are left out: fauxqs refuses them, although SQS accepts #x10000-#x10FFFF.
    const raw =
      '{\n  "type": "2",\n  "appKey": "demo-app",\r\n  "recordId": "r-1",\t"newField": {"x": [1, 2.50]},\n  "text": ' +
      '"é 日本 \\ud83d\\ude00"\n}\n';
    const response = await handleCallbackRequest(httpApiEvent({ body: raw, headers: signedHeaders() }), deps());
    expect(response.statusCode).toBe(200);
    expect((await receiveOne())?.Body).toBe(raw);
  });

  test('a stage prefix and a trailing slash are tolerated', async () => {
    for (const path of ['/prod/callbacks/recording', '/callbacks/recording/']) {
      const response = await handleCallbackRequest(
        httpApiEvent({ path, body: recordingBody, headers: signedHeaders() }),
        deps(),
      );
      expect(response.statusCode).toBe(200);
      expect(attr(await receiveOne(), Attr.service)?.StringValue).toBe('recording');
    }
  });

  test('Content-Type is not required to be JSON', async () => {
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: { ...signedHeaders(), 'content-type': 'text/plain' } }),
      deps(),
    );
    expect(response.statusCode).toBe(200);
    expect((await receiveOne())?.Body).toBe(recordingBody);
  });
});

describe('every status code of the contract, and nothing enqueued unless 200', () => {
  const cases: Array<[string, EventInput, number, string]> = [
    ['not JSON', { body: 'type=1&appKey=demo-app' }, 400, 'invalid_json'],
    ['base64 of not JSON', { body: 'not json', base64: true }, 400, 'invalid_json'],
    ['no body', {}, 400, 'invalid_json'],
    ['a JSON array', { body: '[1,2]' }, 400, 'invalid_body'],
    [
      'type 2 on the screenshot route',
      { path: '/callbacks/screenshot', body: '{"type":2,"appKey":"demo-app","imageId":"i"}' },
      400,
      'invalid_body',
    ],
    [
      'a recording body on the screenshot route',
      { path: '/callbacks/screenshot', body: recordingBody },
      400,
      'invalid_body',
    ],
    ['no appKey', { body: '{"type":1,"recordId":"r"}' }, 400, 'invalid_body'],
    ['an empty recordId', { body: '{"type":1,"appKey":"demo-app","recordId":""}' }, 400, 'invalid_body'],
    [
      'a body U+FFFF that SQS cannot carry',
      { body: '{"type":1,"appKey":"demo-app","recordId":"r","x":"\uFFFF"}' },
      400,
      'invalid_body',
    ],
    [
      'an appKey with a control character',
      { body: '{"type":1,"appKey":"demo\\u0001app","recordId":"r"}' },
      400,
      'invalid_body',
    ],
    ['no signature', { body: recordingBody, headers: {} }, 401, 'missing_signature'],
    ['a wrong signature', { body: recordingBody, headers: signedHeaders('wrong') }, 401, 'invalid_signature'],
    [
      'a stale timestamp',
      { body: recordingBody, headers: signedHeaders(SECRET, String(NOW - 301_000)) },
      401,
      'stale_timestamp',
    ],
    [
      'an unknown appKey',
      { body: recordingBody.replace('"demo-app"', '"other-app"'), headers: signedHeaders() },
      403,
      'unknown_app_key',
    ],
    ['another path', { path: '/callbacks/other', body: recordingBody }, 404, 'not_found'],
    ['the root', { path: '/', method: 'GET' }, 404, 'not_found'],
    ['GET /health (local stack only)', { path: '/health', method: 'GET' }, 404, 'not_found'],
    ['GET on a callback route', { method: 'GET' }, 405, 'method_not_allowed'],
    [
      'PUT on a callback route',
      { method: 'PUT', path: '/callbacks/screenshot', body: '{}' },
      405,
      'method_not_allowed',
    ],
    [
      'a body over 64 KiB',
      { body: `{"pad":"${'x'.repeat(65_536)}"}`, headers: signedHeaders() },
      413,
      'body_too_large',
    ],
    [
      'a base64 body over 64 KiB',
      { body: `{"pad":"${'x'.repeat(65_536)}"}`, base64: true, headers: signedHeaders() },
      413,
      'body_too_large',
    ],
  ];

  test.each(cases)('%s -> %i %s', async (_name, input, status, code) => {
    const response = await handleCallbackRequest(httpApiEvent({ headers: signedHeaders(), ...input }), deps());
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toBe('application/json');
    const body = parse(response.body);
    expect(body).toEqual({ error: { code, message: expect.any(String) } });
    expect(body.error.message.length).toBeGreaterThan(10);
    if (status === 405) expect(response.headers.allow).toBe('POST');
    await expectQueueEmpty();
    expect(lines.filter((l) => l.event === 'callback_request')).toEqual([expect.objectContaining({ status, code })]);
  });

  test.each([
    ['recordId', '{"type":2,"appKey":"demo-app","recordId":"x\\u0000y","output":{"fileName":"z"}}'],
    ['output.fileName', '{"type":2,"appKey":"demo-app","recordId":"x","output":{"fileName":"y\\u0000z"}}'],
    ['roomId', '{"type":1,"appKey":"demo-app","recordId":"x","roomId":"r\\u202eoom"}'],
    ['sessionId', '{"type":1,"appKey":"demo-app","recordId":"x","sessionId":"s\\u0085"}'],
    ['userId', '{"type":1,"appKey":"demo-app","recordId":"x","userId":"u\\u007f"}'],
    ['appKey', '{"type":1,"appKey":"demo\\tapp","recordId":"x"}'],
  ])('NUL and other control characters in names: %s is refused with 400 invalid_body naming it', async (field, raw) => {
    const response = await handleCallbackRequest(httpApiEvent({ body: raw, headers: signedHeaders() }), deps());
    expect(response.statusCode).toBe(400);
    expect(parse(response.body).error).toEqual({
      code: 'invalid_body',
      message: `Field "${field}" must not contain control or bidirectional formatting characters.`,
    });
    await expectQueueEmpty();
  });

  test('a body of exactly 64 KiB is accepted', async () => {
    const base = `${recordingBody.trimEnd().slice(0, -1)},"pad":"`;
    const raw = `${base + 'x'.repeat(65_536 - Buffer.byteLength(base) - 2)}"}`;
    expect(Buffer.byteLength(raw)).toBe(65_536);
    const response = await handleCallbackRequest(httpApiEvent({ body: raw, headers: signedHeaders() }), deps());
    expect(response.statusCode).toBe(200);
    expect((await receiveOne())?.Body).toBe(raw);
  });

  test('MAX_BODY_BYTES changes the limit', async () => {
    const small = deps({ env: { MAX_BODY_BYTES: '200' } });
    expect(
      (await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), small)).statusCode,
    ).toBe(413);
    const tiny = '{"type":1,"appKey":"demo-app","recordId":"r"}';
    expect(
      (await handleCallbackRequest(httpApiEvent({ body: tiny, headers: signedHeaders() }), small)).statusCode,
    ).toBe(200);
    expect((await receiveOne())?.Body).toBe(tiny);
  });
});

describe('signature matrix', () => {
  const nonceNames = ['nonce', 'RC-Nonce'];
  const timestampNames = ['timestamp', 'signTimestamp', 'RC-Timestamp'];
  const signatureNames = ['signature', 'RC-Signature'];
  const combos = nonceNames.flatMap((n) =>
    timestampNames.flatMap((t) => signatureNames.map((s) => [n, t, s] as const)),
  );

  test.each(combos)('names %s / %s / %s, in headers (any case) and in the query string', async (n, t, s) => {
    const ts = String(NOW);
    const sig = computeSignature(SECRET, 'abc', ts);
    const inHeaders = httpApiEvent({
      body: recordingBody,
      headers: { [n.toLowerCase()]: 'abc', [t.toUpperCase()]: ts, [s]: sig },
    });
    expect((await handleCallbackRequest(inHeaders, deps())).statusCode).toBe(200);
    expect(attr(await receiveOne(), Attr.verdict)?.StringValue).toBe('valid');
    const inQuery = httpApiEvent({ body: recordingBody, headers: {}, query: `${n}=abc&${t}=${ts}&${s}=${sig}` });
    expect((await handleCallbackRequest(inQuery, deps())).statusCode).toBe(200);
    const message = await receiveOne();
    expect(attr(message, Attr.verdict)?.StringValue).toBe('valid');
    expect(attr(message, Attr.replayKey)?.StringValue).toBe(sha256(JSON.stringify([sig])));
  });

  type Case = { name: string; input: EventInput; verdict: string; enforce: [number, string?] };
  const body = recordingBody;
  const other = recordingBody.replace('"demo-app"', '"other-app"');
  const matrix: Case[] = [
    { name: 'valid, milliseconds', input: { body, headers: signedHeaders() }, verdict: 'valid', enforce: [200] },
    {
      name: 'valid, seconds',
      input: { body, headers: signedHeaders(SECRET, String(NOW / 1000)) },
      verdict: 'valid',
      enforce: [200],
    },
    {
      name: 'valid, in the query string',
      input: { body, headers: {}, query: new URLSearchParams(signedHeaders()).toString() },
      verdict: 'valid',
      enforce: [200],
    },
    {
      name: 'valid, at the edge of the window',
      input: { body, headers: signedHeaders(SECRET, String(NOW - 300_000)) },
      verdict: 'valid',
      enforce: [200],
    },
    {
      name: 'rotated secret (second of two)',
      input: { body, headers: signedHeaders(ROTATED) },
      verdict: 'valid',
      enforce: [200],
    },
    {
      name: 'stale, in the past',
      input: { body, headers: signedHeaders(SECRET, String(NOW - 301_000)) },
      verdict: 'stale',
      enforce: [401, 'stale_timestamp'],
    },
    {
      name: 'stale, seconds in the past',
      input: { body, headers: signedHeaders(SECRET, String(NOW / 1000 - 3600)) },
      verdict: 'stale',
      enforce: [401, 'stale_timestamp'],
    },
    {
      name: 'stale, in the future',
      input: { body, headers: signedHeaders(SECRET, String(NOW + 301_000)) },
      verdict: 'stale',
      enforce: [401, 'stale_timestamp'],
    },
    {
      name: 'wrong secret',
      input: { body, headers: signedHeaders('not-the-secret') },
      verdict: 'invalid',
      enforce: [401, 'invalid_signature'],
    },
    {
      name: 'request appKey differs from the body',
      input: { body, headers: { ...signedHeaders(), 'RC-App-Key': 'other-app' } },
      verdict: 'invalid',
      enforce: [401, 'invalid_signature'],
    },
    {
      name: "replay key bypass: the nonce's trailing 0 moved to the front of the timestamp",
      input: {
        body,
        headers: {
          ...signedHeaders(SECRET, String(NOW), 'nonce-10'),
          'RC-Nonce': 'nonce-1',
          'RC-Timestamp': `0${NOW}`,
        },
      },
      verdict: 'invalid',
      enforce: [401, 'invalid_signature'],
    },
    {
      name: 'no signature at all',
      input: { body, headers: {} },
      verdict: 'missing',
      enforce: [401, 'missing_signature'],
    },
    {
      name: 'nonce missing',
      input: { body, headers: { 'RC-Timestamp': String(NOW), 'RC-Signature': 'x' } },
      verdict: 'missing',
      enforce: [401, 'missing_signature'],
    },
    {
      name: 'unknown appKey',
      input: { body: other, headers: signedHeaders() },
      verdict: 'unknown_app_key',
      enforce: [403, 'unknown_app_key'],
    },
  ];

  test.each(matrix)('enforce: $name', async ({ input, verdict, enforce: [status, code] }) => {
    const response = await handleCallbackRequest(httpApiEvent(input), deps({ mode: 'enforce' }));
    expect(response.statusCode).toBe(status);
    if (code) {
      expect(parse(response.body).error.code).toBe(code);
      await expectQueueEmpty();
    } else {
      expect(attr(await receiveOne(), Attr.verdict)?.StringValue).toBe(verdict);
    }
    expect(lines.at(-1)).toMatchObject({ event: 'callback_request', verdict, mode: 'enforce' });
  });

  test.each(matrix)('report: $name is enqueued with its verdict', async ({ input, verdict }) => {
    const response = await handleCallbackRequest(httpApiEvent(input), deps({ mode: 'report' }));
    expect(response.statusCode).toBe(200);
    const message = await receiveOne();
    expect(message?.Body).toBe(input.body);
    expect(attr(message, Attr.verdict)?.StringValue).toBe(verdict);
    expect(attr(message, Attr.mode)?.StringValue).toBe('report');
  });

  test.each(matrix)('off: $name is enqueued unchecked', async ({ input }) => {
    const response = await handleCallbackRequest(httpApiEvent(input), deps({ mode: 'off' }));
    expect(response.statusCode).toBe(200);
    const message = await receiveOne();
    expect(attr(message, Attr.verdict)?.StringValue).toBe('not_checked');
    expect(attr(message, Attr.mode)?.StringValue).toBe('off');
  });

  test('the replay key travels when the signature is wrong (report), not when a value is missing', async () => {
    const headers = signedHeaders('wrong');
    await handleCallbackRequest(httpApiEvent({ body, headers }), deps({ mode: 'report' }));
    expect(attr(await receiveOne(), Attr.replayKey)?.StringValue).toBe(
      sha256(JSON.stringify([headers['RC-Signature']])),
    );
    await handleCallbackRequest(
      httpApiEvent({ body, headers: { 'RC-Nonce': 'n', 'RC-Timestamp': String(NOW) } }),
      deps({ mode: 'report' }),
    );
    expect(attr(await receiveOne(), Attr.replayKey)).toBeUndefined();
  });

  test('the signature values travel only with a verdict other than valid, with where each came from', async () => {
    const wrong = signedHeaders('wrong');
    await handleCallbackRequest(
      httpApiEvent({
        body,
        headers: { 'RC-Nonce': wrong['RC-Nonce']!, 'RC-App-Key': 'demo-app' },
        query: `timestamp=${NOW}&signature=${wrong['RC-Signature']}`,
      }),
      deps({ mode: 'report' }),
    );
    const kept = attr(await receiveOne(), Attr.signatureValues)?.StringValue;
    expect(JSON.parse(kept ?? 'null')).toEqual({
      nonce: 'nonce-1',
      timestamp: String(NOW),
      signature: wrong['RC-Signature'],
      appKey: 'demo-app',
      from: { nonce: 'header', timestamp: 'query', signature: 'query', appKey: 'header' },
    });
    // Never the secret.
    expect(kept).not.toContain('wrong');

    await handleCallbackRequest(httpApiEvent({ body, headers: signedHeaders() }), deps({ mode: 'report' }));
    const valid = await receiveOne();
    expect(attr(valid, Attr.verdict)?.StringValue).toBe('valid');
    expect(attr(valid, Attr.signatureValues)).toBeUndefined();

    await handleCallbackRequest(httpApiEvent({ body, headers: {} }), deps({ mode: 'report' }));
    expect(attr(await receiveOne(), Attr.signatureValues)).toBeUndefined();
  });

  test('the sender travels with every message: source IP and user agent, cut to 256 characters', async () => {
    const userAgent = `platform-callback/2.1 ${'x'.repeat(400)}`;
    await handleCallbackRequest(
      httpApiEvent({ body, headers: signedHeaders('wrong'), sourceIp: '2001:db8::7', userAgent }),
      deps({ mode: 'report' }),
    );
    const sender = JSON.parse(attr(await receiveOne(), Attr.sender)?.StringValue ?? 'null');
    expect(sender).toEqual({ sourceIp: '2001:db8::7', userAgent: `${userAgent.slice(0, MAX_USER_AGENT_CHARS)}…` });
    // A user agent SQS could not carry is left out, the address kept.
    await handleCallbackRequest(
      httpApiEvent({ body, headers: signedHeaders(), userAgent: 'bad\u0001agent' }),
      deps({ mode: 'report' }),
    );
    expect(JSON.parse(attr(await receiveOne(), Attr.sender)?.StringValue ?? 'null')).toEqual({ sourceIp: '192.0.2.1' });
  });

  test('report mode: a callback the worker will set aside is logged as such, at warn level', async () => {
    await handleCallbackRequest(httpApiEvent({ body, headers: signedHeaders('wrong') }), deps({ mode: 'report' }));
    await receiveOne();
    await handleCallbackRequest(httpApiEvent({ body, headers: signedHeaders() }), deps({ mode: 'report' }));
    await receiveOne();
    const requests = lines.filter((l) => l.event === 'callback_request');
    expect(requests[0]).toMatchObject({
      level: 'warn',
      status: 200,
      verdict: 'invalid',
      setAside: true,
      note: expect.stringContaining('callbacks quarantine apply'),
    });
    expect(requests[1]).toMatchObject({ level: 'info', status: 200, verdict: 'valid' });
    expect(requests[1]).not.toHaveProperty('setAside');
  });
});

describe('the log line', () => {
  test('one callback_request line with the request facts, never the body, a secret or the signature', async () => {
    const headers = signedHeaders();
    const event = httpApiEvent({ body: recordingBody, headers });
    await handleCallbackRequest(event, deps());
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toMatchObject({
      level: 'info',
      event: 'callback_request',
      route: 'POST /callbacks/recording',
      service: 'recording',
      appKey: 'demo-app',
      type: 2,
      id: '7nQ2f0vB-rec-001',
      status: 200,
      verdict: 'valid',
      requestId: event.requestContext.requestId,
      latencyMs: expect.any(Number),
    });
    expect(line).not.toHaveProperty('code');
    const text = JSON.stringify(lines);
    expect(text).not.toContain('room-1024');
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(headers['RC-Signature']);
  });

  test('a rejection logs its code', async () => {
    await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders('wrong') }), deps());
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', status: 401, code: 'invalid_signature', verdict: 'invalid' }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });
});

describe('SQS unreachable: 503 queue_unavailable, nothing claims success', () => {
  test('a closed port', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const closedPort = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));

    const unreachable = sqsClientAt(`http://127.0.0.1:${closedPort}`);
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: signedHeaders() }),
      deps({ sqs: unreachable }),
    );
    unreachable.destroy();
    expect(response.statusCode).toBe(503);
    expect(parse(response.body)).toEqual({ error: { code: 'queue_unavailable', message: expect.any(String) } });
    await expectQueueEmpty();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        status: 503,
        code: 'queue_unavailable',
        reason: expect.stringContaining('ECONNREFUSED'),
      }),
    ]);
  });

  test('a stopped fauxqs', async () => {
    const other = await startFauxqs({ port: 0, logger: false });
    const otherUrl = other.createQueue('stopping').queueUrl;
    const client = sqsClientAt(`http://127.0.0.1:${other.port}`);
    const d = deps({ sqs: client, env: { QUEUE_URL: otherUrl } });
    expect(
      (await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d)).statusCode,
    ).toBe(200);
    await other.stop();
    const response = await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d);
    client.destroy();
    expect(response.statusCode).toBe(503);
    expect(parse(response.body).error.code).toBe('queue_unavailable');
    expect(lines.map((l) => l.status)).toEqual([200, 503]);
  });

  test('a queue that does not exist', async () => {
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: signedHeaders() }),
      deps({ env: { QUEUE_URL: queueUrl.replace('callbacks-ingest-test', 'no-such-queue') } }),
    );
    expect(response.statusCode).toBe(503);
    await expectQueueEmpty();
  });

  test('QUEUE_URL unset', async () => {
    const d = buildIngestDependencies(
      { CALLBACK_SECRETS: JSON.stringify({ 'demo-app': [SECRET] }), TASKS_TABLE: tableName },
      { sqs, dynamo: dynamo.client, logger: captureLogger, now: () => NOW },
    );
    expect(lines).toEqual([
      expect.objectContaining({ level: 'warn', event: 'ingest_config', warning: expect.stringContaining('QUEUE_URL') }),
    ]);
    const response = await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d);
    expect(response.statusCode).toBe(503);
    expect(parse(response.body).error.code).toBe('queue_unavailable');
  });
});

describe('secrets', () => {
  test(
    'a malformed CALLBACK_SECRETS: 503 secrets_unavailable in enforce, never a crash, no secret in the ' + 'log',
    async () => {
      const d = deps({ env: { CALLBACK_SECRETS: `{"demo-app":["${SECRET}"` } });
      const response = await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d);
      expect(response.statusCode).toBe(503);
      expect(parse(response.body).error.code).toBe('secrets_unavailable');
      expect(response.body).not.toContain(SECRET);
      expect(JSON.stringify(lines)).not.toContain(SECRET);
      await expectQueueEmpty();
    },
  );

  test('unreadable secrets in report mode: accepted and marked unverified (the worker sets it aside)', async () => {
    const d = deps({ mode: 'report', env: { CALLBACK_SECRETS: '{oops' } });
    const response = await handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d);
    expect(response.statusCode).toBe(200);
    const message = await receiveOne();
    expect(attr(message, Attr.verdict)?.StringValue).toBe('unverified');
    expect(attr(message, Attr.mode)?.StringValue).toBe('report');
    expect(lines.at(-1)).toMatchObject({ level: 'warn', status: 200 });
  });

  describe('deployed: SSM parameter through the Parameters and Secrets extension', () => {
    let extension: Server;
    let port = 0;
    let parameterValue = '';
    let answering = true;
    let reads = 0;

    beforeAll(async () => {
      extension = createServer((req, res) => {
        reads += 1;
        const url = new URL(req.url ?? '/', 'http://localhost');
        const authorised = req.headers['x-aws-parameters-secrets-token'] === 'session-token';
        if (
          !answering ||
          !authorised ||
          url.searchParams.get('name') !== '/rtc/secrets' ||
          url.searchParams.get('withDecryption') !== 'true'
        ) {
          res.writeHead(answering ? 401 : 500);
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ Parameter: { Name: '/rtc/secrets', Type: 'SecureString', Value: parameterValue } }));
      });
      // Listening on "localhost", the host the handler uses by default.
      await new Promise<void>((resolve) => extension.listen(0, 'localhost', resolve));
      port = (extension.address() as AddressInfo).port;
    });
    afterAll(async () => {
      extension.closeAllConnections();
      await new Promise((resolve) => extension.close(resolve));
    });
    beforeEach(() => {
      reads = 0;
      answering = true;
    });

    const extensionDeps = (clock: { now: number }, mode: SignatureMode = 'enforce') =>
      buildIngestDependencies(
        {
          QUEUE_URL: queueUrl,
          SIGNATURE_MODE: mode,
          CALLBACK_SECRETS_PARAM: '/rtc/secrets',
          // The parameter wins over a CALLBACK_SECRETS left in the environment.
          CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['ignored'] }),
          PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: String(port),
          AWS_SESSION_TOKEN: 'session-token',
          SECRETS_REFRESH_S: '120',
          TASKS_TABLE: tableName,
        },
        { sqs, dynamo: dynamo.client, logger: captureLogger, now: () => clock.now },
      );

    test('read once, refreshed after SECRETS_REFRESH_S: a rotation needs no redeploy', async () => {
      parameterValue = JSON.stringify({ 'demo-app': [SECRET] });
      const clock = { now: NOW };
      const d = extensionDeps(clock);
      const send = (secret: string) =>
        handleCallbackRequest(
          httpApiEvent({ body: recordingBody, headers: signedHeaders(secret, String(clock.now)) }),
          d,
        );

      expect((await send(SECRET)).statusCode).toBe(200);
      expect((await send('ignored')).statusCode).toBe(401);
      expect(reads).toBe(1);

      parameterValue = JSON.stringify({ 'demo-app': [SECRET, ROTATED] });
      expect((await send(ROTATED)).statusCode).toBe(401);
      clock.now += 120_000;
      expect((await send(ROTATED)).statusCode).toBe(200);
      expect((await send(SECRET)).statusCode).toBe(200);
      expect(reads).toBe(2);
      expect(JSON.stringify(lines)).not.toContain(SECRET);
      expect(JSON.stringify(lines)).not.toContain(ROTATED);
    });

    test('the extension failing after a good read: the last good secrets stay in use', async () => {
      parameterValue = JSON.stringify({ 'demo-app': [SECRET] });
      const clock = { now: NOW };
      const d = extensionDeps(clock);
      const send = () =>
        handleCallbackRequest(
          httpApiEvent({ body: recordingBody, headers: signedHeaders(SECRET, String(clock.now)) }),
          d,
        );
      expect((await send()).statusCode).toBe(200);
      answering = false;
      clock.now += 120_000;
      expect((await send()).statusCode).toBe(200);
      expect(lines.some((l) => l.event === 'callback_secrets_refresh_failed' && l.level === 'warn')).toBe(true);
      expect(JSON.stringify(lines)).not.toContain(SECRET);
    });

    test('the extension failing from the start: 503 secrets_unavailable, then recovery', async () => {
      answering = false;
      const clock = { now: NOW };
      const d = extensionDeps(clock);
      const send = () => handleCallbackRequest(httpApiEvent({ body: recordingBody, headers: signedHeaders() }), d);
      const response = await send();
      expect(response.statusCode).toBe(503);
      expect(parse(response.body).error.code).toBe('secrets_unavailable');
      await expectQueueEmpty();
      answering = true;
      parameterValue = JSON.stringify({ 'demo-app': [SECRET] });
      expect((await send()).statusCode).toBe(200);
    });
  });
});

describe('source-IP allow-list (ALLOWED_SOURCE_CIDRS)', () => {
  const allowList = { ALLOWED_SOURCE_CIDRS: '192.0.2.0/28, 2001:db8:10::/48' };

  test.each([
    ['the first IPv4 address of the range', '192.0.2.0', 200],
    ['the last IPv4 address of the range', '192.0.2.15', 200],
    ['the next IPv4 address', '192.0.2.16', 403],
    ['an IPv4-mapped IPv6 address inside', '::ffff:192.0.2.9', 200],
    ['an IPv4-mapped IPv6 address outside', '::ffff:192.0.2.99', 403],
    ['an IPv6 address inside', '2001:db8:10:ffff::1', 200],
    ['an IPv6 address outside', '2001:db8:11::1', 403],
    ['no source address at all', '', 403],
  ])('%s (%s) -> %i', async (_name, sourceIp, status) => {
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: signedHeaders(), sourceIp }),
      deps({ env: allowList }),
    );
    expect(response.statusCode).toBe(status);
    if (status === 200) {
      expect((await receiveOne())?.Body).toBe(recordingBody);
    } else {
      expect(parse(response.body)).toEqual({
        error: { code: 'source_not_allowed', message: 'Requests from this source address are not accepted.' },
      });
      await expectQueueEmpty();
      expect(lines.filter((l) => l.event === 'callback_request')).toEqual([
        expect.objectContaining({
          level: 'warn',
          event: 'callback_request',
          status: 403,
          code: 'source_not_allowed',
          sourceIp: sourceIp || '(none)',
        }),
      ]);
    }
  });

  test('checked first: an outside address gets 403 even for a bad path, a bad method or a bad signature', async () => {
    for (const input of [
      { path: '/nowhere', method: 'GET' },
      { method: 'GET' },
      { body: 'not json' },
      { body: recordingBody, headers: signedHeaders('wrong') },
    ]) {
      const response = await handleCallbackRequest(
        httpApiEvent({ ...input, sourceIp: '198.51.100.1' }),
        deps({ env: allowList }),
      );
      expect({ input, status: response.statusCode, code: parse(response.body).error.code }).toEqual({
        input,
        status: 403,
        code: 'source_not_allowed',
      });
    }
    await expectQueueEmpty();
  });

  test('unset: every address is accepted', async () => {
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: signedHeaders(), sourceIp: '198.51.100.1' }),
      deps(),
    );
    expect(response.statusCode).toBe(200);
    await receiveOne();
  });
});

describe('robustness', () => {
  test('an unexpected exception is a 503 internal_error with an error log line, never a throw', async () => {
    // A fault no emulator produces: the secrets provider itself breaking.
    const broken: SecretsProvider = { source: 'broken', get: () => Promise.reject(new TypeError('boom')) };
    const response = await handleCallbackRequest(
      httpApiEvent({ body: recordingBody, headers: signedHeaders() }),
      deps({ secrets: broken }),
    );
    expect(response.statusCode).toBe(503);
    expect(parse(response.body).error.code).toBe('internal_error');
    expect(lines).toEqual([
      expect.objectContaining({ level: 'error', status: 503, code: 'internal_error', reason: 'TypeError: boom' }),
    ]);
    await expectQueueEmpty();
  });

  test('a malformed event is answered, not thrown', async () => {
    const response = await handleCallbackRequest({} as APIGatewayProxyEventV2, deps());
    expect(response.statusCode).toBe(404);
  });
});

describe('the FIFO queue: one group per task, one deduplication id per delivery', () => {
  let fifoUrl: string;
  beforeAll(() => {
    fifoUrl = fauxqs.createQueue('callbacks-ingest-test.fifo', { attributes: { FifoQueue: 'true' } }).queueUrl;
  });
  const fifoDeps = (mode: SignatureMode = 'enforce') => deps({ mode, env: { QUEUE_URL: fifoUrl } });
  const receiveAll = async (): Promise<Message[]> => {
    const out: Message[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: fifoUrl,
          MaxNumberOfMessages: 10,
          MessageSystemAttributeNames: ['All'],
          WaitTimeSeconds: 0,
        }),
      );
      if (Messages.length === 0) return out;
      for (const m of Messages)
        await sqs.send(new DeleteMessageCommand({ QueueUrl: fifoUrl, ReceiptHandle: m.ReceiptHandle! }));
      out.push(...Messages);
    }
  };
  const screenshotBody = (appKey: string, imageId: string) =>
    JSON.stringify({ type: 1, appKey, imageId, roomId: 'room-1', sessionId: 's-1', timestamp: NOW });
  const recordingOf = (appKey: string, recordId: string) =>
    JSON.stringify({ ...JSON.parse(recordingBody), appKey, recordId });

  test('a recording and a screenshot task with one id share a group; another appKey or id does not', async () => {
    const sent = [
      { path: '/callbacks/recording', body: recordingOf('demo-app', 'task-1') },
      { path: '/callbacks/screenshot', body: screenshotBody('demo-app', 'task-1') },
      { path: '/callbacks/recording', body: recordingOf('demo-app', 'task-2') },
      { path: '/callbacks/recording', body: recordingOf('other-app', 'task-1') },
    ];
    for (const [i, input] of sent.entries()) {
      const event = httpApiEvent({ ...input, headers: signedHeaders(SECRET, String(NOW), `n-${i}`) });
      expect((await handleCallbackRequest(event, fifoDeps('report'))).statusCode).toBe(200);
    }
    const groups = new Map((await receiveAll()).map((m) => [m.Body, m.Attributes?.MessageGroupId]));
    expect(groups.size).toBe(4);
    const [recording1, screenshot1, recording2, otherApp] = sent.map((s) => groups.get(s.body));
    expect(recording1).toBe(taskGroupId('demo-app', 'task-1'));
    expect(screenshot1).toBe(recording1);
    expect(recording2).not.toBe(recording1);
    expect(otherApp).not.toBe(recording1);
  });

  test('a delivery resent as it was is enqueued once; the same body signed anew is enqueued again', async () => {
    const headers = signedHeaders(SECRET, String(NOW), 'nonce-a');
    const once = () => handleCallbackRequest(httpApiEvent({ body: recordingBody, headers }), fifoDeps());
    expect((await once()).statusCode).toBe(200);
    expect((await once()).statusCode).toBe(200);
    const resigned = httpApiEvent({ body: recordingBody, headers: signedHeaders(SECRET, String(NOW), 'nonce-b') });
    expect((await handleCallbackRequest(resigned, fifoDeps())).statusCode).toBe(200);
    const messages = await receiveAll();
    expect(messages).toHaveLength(2);
    expect(messages.map((m) => m.Attributes?.MessageDeduplicationId)).toEqual([
      callbackDeduplicationId(
        'recording',
        { nonce: 'nonce-a', timestamp: String(NOW), signature: headers['RC-Signature'] },
        recordingBody,
      ),
      expect.any(String),
    ]);
    expect(new Set(messages.map((m) => m.Attributes?.MessageDeduplicationId)).size).toBe(2);
  });
});

describe('functions/ingest.ts', () => {
  test('the exported handler reads its settings from the environment and enqueues', async () => {
    const saved = { ...process.env };
    const captured: string[] = [];
    const previousSink = setLogSink((line) => captured.push(line));
    Object.assign(process.env, {
      QUEUE_URL: queueUrl,
      AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${fauxqs.port}`,
      TASKS_TABLE: tableName,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      SIGNATURE_MODE: 'enforce',
      CALLBACK_SECRETS: JSON.stringify({ 'demo-app': [SECRET] }),
    });
    delete process.env.CALLBACK_SECRETS_PARAM;
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_PROFILE;
    try {
      const { handler } = await import('../functions/ingest.ts');
      const now = String(Date.now());
      const ok = await handler(httpApiEvent({ body: recordingBody, headers: signedHeaders(SECRET, now) }), {
        awsRequestId: 'lambda-request-1',
      });
      expect(ok.statusCode).toBe(200);
      const message = await receiveOne();
      expect(message?.Body).toBe(recordingBody);
      expect(attr(message, Attr.verdict)?.StringValue).toBe('valid');
      expect(
        (
          await handler(httpApiEvent({ body: recordingBody, headers: signedHeaders('wrong', now) }), {
            awsRequestId: 'lambda-request-2',
          })
        ).statusCode,
      ).toBe(401);
      expect((await handler(httpApiEvent({ path: '/elsewhere', method: 'GET' }))).statusCode).toBe(404);
      const logged = captured.map((l) => JSON.parse(l)).filter((l) => l.event === 'callback_request');
      expect(logged.map((l) => l.status)).toEqual([200, 401, 404]);
      // The keys searched in CloudWatch: the Lambda request id and whether the container was cold.
      expect(logged.map((l) => [l.function, l.level, l.awsRequestId, l.coldStart])).toEqual([
        ['ingest', 'info', 'lambda-request-1', true],
        ['ingest', 'warn', 'lambda-request-2', false],
        ['ingest', 'info', undefined, false],
      ]);
      expect(captured.join('\n')).not.toContain(SECRET);
    } finally {
      setLogSink(previousSink);
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  });
});
