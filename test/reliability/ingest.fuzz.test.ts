// Fuzzing the receiving endpoint: over four thousand generated requests (ten thousand at full size,
// test/support/size.ts: random bytes, random and deeply nested JSON, huge strings, odd Unicode,
// `__proto__`/`constructor` keys, extreme numbers, every method, path, header and query variant of the
// signature) through the real handler. Each answer is compared
// with an oracle written from the contract (support/oracle.ts): the handler never throws, never answers
// 500, always answers a contract code with a JSON error body, and 200 exactly when the body is a valid
// callback for the route, with the body enqueued byte for byte. Most runs use an in-memory queue for
// speed; a smaller number go through fauxqs and are read back from the queue.
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { anyLifecycle } from '../support/lifecycles.ts';
import { buildIngestDependencies, type IngestDependencies } from '../../lib/ingest/config.ts';
import { createSqsClient } from '../../lib/ingest/enqueue.ts';
import { handleCallbackRequest } from '../../lib/ingest/handle-request.ts';
import type { IngestResponse } from '../../lib/http-responses.ts';
import type { Service } from '../../lib/platform/services.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { Attr } from '../../lib/queue-message.ts';
import type { SignatureMode } from '../../lib/signature/verdicts.ts';
import { bodyText, httpApiEvent, memoryQueue, type EventInput, type MemoryQueue } from './support/http-events.ts';
import { captureLogs, type LogCapture } from './support/log-capture.ts';
import {
  accepted,
  contractCodes,
  judgeBody,
  judgeSignature,
  refused,
  routeOf,
  type Expected,
} from './support/oracle.ts';
import { LOCAL_CREDENTIALS } from '../../devkit/local/deployed-settings.ts';
import { type LocalDynamo, startDynamo } from '../../devkit/local/dynamo.ts';
import { sized } from '../support/size.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const NOW = 1_763_798_500_000;
const MAX_BYTES = 65_536;
const SECRETS: Record<string, string[]> = {
  'demo-app': ['fuzz-secret-one-7f3a', 'fuzz-secret-two-91c4'],
  'app-b': ['fuzz-secret-b-d2e8'],
};
const QUEUE_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/callbacks';
const SERVICES: Service[] = ['recording', 'screenshot'];

let logs: LogCapture;
let runs = 0;
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();

/** Where the signatures of the callbacks to be applied are claimed. */
let db: LocalDynamo;

beforeAll(async () => {
  logs = captureLogs();
  for (const list of Object.values(SECRETS)) for (const s of list) logs.secret(s);
  db = await startDynamo('fuzz-claims');
});

afterAll(async () => {
  logs.restore();
  await db.stop();
});

function depsFor(mode: SignatureMode, sqs: SQSClient, queueUrl = QUEUE_URL): IngestDependencies {
  return buildIngestDependencies(
    {
      QUEUE_URL: queueUrl,
      TASKS_TABLE: db.tableName,
      SIGNATURE_MODE: mode,
      CALLBACK_SECRETS: JSON.stringify(SECRETS),
      // A development stage, where mode off may run.
      DEVELOPMENT_STAGE: 'true',
    },
    { sqs, dynamo: db.client, now: () => NOW },
  );
}

/** Runs the handler; a throw is a failure of the property, never an answer. */
async function call(event: APIGatewayProxyEventV2, deps: IngestDependencies): Promise<IngestResponse> {
  runs += 1;
  return handleCallbackRequest(event, deps);
}

/** The shape every answer must have, whatever was asked. */
function expectWellFormed(
  res: IngestResponse,
  allowed: Readonly<Record<string, number>> = contractCodes,
): string | null {
  expect(res.statusCode).not.toBe(500);
  expect(res.headers['content-type']).toBe('application/json');
  if (res.statusCode === 200) {
    expect(res.body).toBe('{"ok":true}');
    return null;
  }
  const parsed = JSON.parse(res.body) as { error?: { code?: unknown; message?: unknown } };
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(Object.keys(parsed.error ?? {}).sort()).toEqual(['code', 'message']);
  const { code, message } = parsed.error!;
  expect(typeof code).toBe('string');
  expect(allowed[code as string]).toBe(res.statusCode);
  expect(typeof message).toBe('string');
  expect((message as string).length).toBeGreaterThan(0);
  if (code === 'method_not_allowed') expect(res.headers.allow).toBe('POST');
  return code as string;
}

/** The answer equals the oracle's; on 200 exactly one message holds the body as received. */
function expectAnswer(
  res: IngestResponse,
  expected: Expected,
  queue: MemoryQueue,
  before: number,
  service: Service,
  verdict: string,
) {
  const code = expectWellFormed(res);
  if (expected.ok) {
    expect({ status: res.statusCode, code }).toEqual({ status: 200, code: null });
    expect(queue.sent.length).toBe(before + 1);
    const message = queue.sent[queue.sent.length - 1]!;
    expect(message.QueueUrl).toBe(QUEUE_URL);
    expect(message.MessageBody === expected.raw).toBe(true);
    expect(message.MessageAttributes[Attr.service]?.StringValue).toBe(service);
    expect(message.MessageAttributes[Attr.appKey]?.StringValue).toBe(expected.appKey);
    expect(message.MessageAttributes[Attr.verdict]?.StringValue).toBe(verdict);
    logs.body(expected.raw);
  } else {
    expect({ status: res.statusCode, code }).toEqual({ status: expected.status, code: expected.code });
    expect(queue.sent.length).toBe(before);
  }
}

// ---------------------------------------------------------------------------------------------------
// Generators

/** Any UTF-16 code unit, lone surrogates and non-characters included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const oddCharacter = fc.constantFrom(
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u00a0',
  '\u2028',
  '\u2029',
  '\u200b',
  '\u200d',
  '\u202e',
  '\ufeff',
  '\ufffd',
  '\ufffe',
  '\uffff',
  '\ud800',
  '\udfff',
  '\ud83d\ude00',
  'e\u0301',
  '\u{10ffff}',
  '\u{1f1eb}\u{1f1f7}',
  '"',
  '\\',
  '/',
  '\n',
  '\r',
  '\t',
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
);
const oddString = (maxLength: number) =>
  fc.string({
    unit: fc.oneof(
      { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: codeUnit },
      { weight: 1, arbitrary: oddCharacter },
    ),
    maxLength,
  });

/** A JSON number token, extremes included; some parse to Infinity, -0 or a rounded integer. */
const numberToken = fc.oneof(
  fc.constantFrom(
    '0',
    '-0',
    '1e308',
    '-1e308',
    '1e400',
    '-1e400',
    '5e-324',
    '1e-400',
    '9007199254740993',
    '123456789012345678901234567890',
    '4.0000000000000001',
    '3.9999999999999999',
    '1E0',
    '40e-1',
    '0.4e1',
    '-1',
    '0.5',
    '1.7976931348623157e308',
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.integer().map(String),
);

/** A JSON string token: text escaped by JSON.stringify, or raw characters the text carries as they are. */
const stringToken = (maxLength = 40) =>
  fc.oneof(
    oddString(maxLength).map((s) => JSON.stringify(s)),
    // Characters written raw inside the quotes (no escaping): control characters make invalid JSON,
    // U+FFFE/U+FFFF make a body SQS cannot carry.
    oddString(maxLength).map((s) => `"${s.replace(/["\\]/g, '')}"`),
    fc.constantFrom('"\\ud800"', '"\\ufffe"', '"\\u0000"', '"a\\u0001b"', '"\\uFFFF"', '"\\u202e"'),
  );

const keyToken = fc.oneof(
  fc.constantFrom(
    '"__proto__"',
    '"constructor"',
    '"prototype"',
    '"toString"',
    '"valueOf"',
    '"hasOwnProperty"',
    '"__defineGetter__"',
    '""',
    '"type"',
    '"appKey"',
  ),
  stringToken(12),
);

/** Random JSON text, deep and wide, with every kind of key. */
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberToken,
    stringToken(),
    fc.constantFrom('true', 'false', 'null'),
    fc.array(tie('value'), { maxLength: 5 }).map((xs) => `[${xs.join(',')}]`),
    fc
      .array(fc.tuple(keyToken, tie('value')), { maxLength: 6 })
      .map((kv) => `{${kv.map(([k, v]) => `${k}:${v}`).join(',')}}`),
  ),
})).value;

/** Nesting far deeper than any parser recursion limit a naive walker would survive. */
const deepJson = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom('[', '{"a":'))
  .map(([depth, open]) =>
    open === '[' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
  );

/** A string near the size limit, in one- to four-byte characters, so that bytes and characters differ. */
const hugeString = fc
  .tuple(fc.integer({ min: 16_000, max: 66_000 }), fc.constantFrom('a', 'é', '€', '😀', '\\n'))
  .map(([bytes, ch]) => {
    const width = Buffer.byteLength(ch === '\\n' ? '\\n' : ch, 'utf8');
    return `"${ch.repeat(Math.floor(bytes / width))}"`;
  });

const typeToken = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom('1', '2', '3', '4', '"1"', '"2"', '"3"', '"4"', '" 4 "', '"4.0"', '4.0', '1E0', '40e-1'),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '0',
      '5',
      '-1',
      '"x"',
      '""',
      'null',
      'true',
      '[]',
      '{}',
      '[4]',
      '"1e0"',
      '"0x4"',
      '"4 4"',
      '1.5',
      '"+4"',
    ),
  },
  { weight: 1, arbitrary: numberToken },
  { weight: 1, arbitrary: stringToken(6) },
);
const appKeyToken = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('"demo-app"', '"app-b"', '"other-app"', '"app with spaces"', '"应用"') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '""',
      '"   "',
      '1',
      'null',
      '[]',
      '{}',
      '"a\\u0001b"',
      '"\\ud800"',
      '"a\\tb"',
      '"\\u0085"',
      '"\\ufffe"',
    ),
  },
  { weight: 2, arbitrary: stringToken(20) },
  { weight: 1, arbitrary: hugeString },
);
const idToken = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      '"rec-1"',
      '"img-1"',
      '"7nQ2f0vB-rec-001"',
      '"id with space"',
      '"\\u0000"',
      '"x\\u202ey"',
      '"r\\u0085"',
    ),
  },
  { weight: 3, arbitrary: fc.constantFrom('""', '" "', '0', '1', 'null', 'false', '[]', '{"a":1}') },
  { weight: 2, arbitrary: stringToken(20) },
  { weight: 1, arbitrary: hugeString },
);
/** A value for a name field (room, session, user, file): control and bidirectional characters among others. */
const nameToken = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '"room-1"',
      '""',
      '"a\\u0000b"',
      '"x\\ty"',
      '"\\u001f"',
      '"a\\u007f"',
      '"a\\u0085"',
      '"\\u202ertl"',
      '"\\u2066x\\u2069"',
      '"ok\\u200b"',
      '"ok\\u00a0"',
    ),
  },
  { weight: 2, arbitrary: stringToken(10) },
  { weight: 1, arbitrary: fc.constantFrom('1', 'null', '{}') },
);
const extraValue = fc.oneof(
  { weight: 5, arbitrary: jsonText },
  { weight: 1, arbitrary: deepJson },
  { weight: 1, arbitrary: hugeString },
);
/** Keys that would pollute a prototype if a parser or merge assigned them naively. */
const pollution = fc.constantFrom(
  '"__proto__":{"polluted":"yes","type":1}',
  '"constructor":{"prototype":{"polluted":"yes"}}',
  '"prototype":{"polluted":"yes"}',
  '"__proto__":null',
  '"toString":"not a function"',
  '"hasOwnProperty":1',
);

/** Objects close to a callback: each required field present, absent, repeated or of another type. */
const nearCallbackText = fc
  .record({
    type: fc.option(typeToken, { freq: 8 }),
    appKey: fc.option(appKeyToken, { freq: 8 }),
    recordId: fc.option(idToken, { freq: 3 }),
    imageId: fc.option(idToken, { freq: 3 }),
    repeatedType: fc.option(typeToken, { freq: 1 }),
    names: fc.array(
      fc
        .tuple(fc.constantFrom('roomId', 'sessionId', 'userId', 'output'), nameToken)
        .map(([field, value]) => (field === 'output' ? `"output":{"fileName":${value}}` : `"${field}":${value}`)),
      { maxLength: 2 },
    ),
    extras: fc.array(
      fc.oneof(
        fc.tuple(keyToken, extraValue).map(([k, v]) => `${k}:${v}`),
        pollution,
      ),
      { maxLength: 4 },
    ),
    seed: fc.nat(),
  })
  .map((r) => {
    const members = [...r.extras, ...r.names];
    if (r.type !== null) members.push(`"type":${r.type}`);
    if (r.appKey !== null) members.push(`"appKey":${r.appKey}`);
    if (r.recordId !== null) members.push(`"recordId":${r.recordId}`);
    if (r.imageId !== null) members.push(`"imageId":${r.imageId}`);
    // A later duplicate key wins in JSON.parse: the receiver must judge the value that wins.
    if (r.repeatedType !== null) members.push(`"type":${r.repeatedType}`);
    for (let i = members.length - 1; i > 0; i--) {
      const j = (r.seed + i * 7919) % (i + 1);
      [members[i], members[j]] = [members[j]!, members[i]!];
    }
    return `{${members.join(',')}}`;
  });

/** Whatever surrounds a JSON text on the wire: whitespace, a BOM, trailing garbage. */
const framed = (text: fc.Arbitrary<string>) =>
  fc
    .tuple(
      fc.constantFrom('', '', '', ' ', '\n\t', '\ufeff'),
      text,
      fc.constantFrom('', '', '', ' \r\n', 'x', '}', '\u0000'),
    )
    .map(([a, t, b]) => a + t + b);

type Body = string | Uint8Array;
const bodyArb: fc.Arbitrary<{ body: Body | undefined; base64: boolean }> = fc.oneof(
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => ({ body: b, base64: true })) },
  { weight: 1, arbitrary: oddString(200).map((s) => ({ body: s, base64: false })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<{ body: Body | undefined; base64: boolean }>(
      { body: undefined, base64: false },
      { body: '', base64: false },
      { body: '', base64: true },
      { body: '   ', base64: false },
    ),
  },
  { weight: 2, arbitrary: fc.tuple(framed(jsonText), fc.boolean()).map(([s, b]) => ({ body: s, base64: b })) },
  { weight: 1, arbitrary: deepJson.map((s) => ({ body: s, base64: false })) },
  { weight: 6, arbitrary: fc.tuple(framed(nearCallbackText), fc.boolean()).map(([s, b]) => ({ body: s, base64: b })) },
  // Invalid UTF-8 in an otherwise valid callback: a lone continuation byte, an overlong form, a surrogate.
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom([0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff], [0xf4, 0x90, 0x80, 0x80]),
        fc.nat({ max: 40 }),
      )
      .map(([bad, at]) => {
        const text = Buffer.from(
          '{"type":1,"appKey":"demo-app","recordId":"r-1","imageId":"i-1",' +
            '"extra":"........................................"}',
        );
        const i = Math.min(text.length - 3, 60 + at);
        return { body: Buffer.concat([text.subarray(0, i), Buffer.from(bad), text.subarray(i)]), base64: true };
      }),
  },
);

const junkHeaders = fc.dictionary(fc.stringMatching(/^x-fuzz-[a-z0-9-]{1,12}$/), oddString(30), { maxKeys: 4 });

const stagePrefix = fc.constantFrom('', '', '/prod', '/$default', '/v1/api', '/callbacks');
const callbackPath = fc
  .tuple(stagePrefix, fc.constantFrom(...SERVICES), fc.constantFrom('', '', '/'))
  .map(([p, s, t]) => `${p}/callbacks/${s}${t}`);
const anyPath = fc.oneof(
  { weight: 4, arbitrary: callbackPath },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '/',
      '',
      '/callbacks',
      '/callbacks/',
      '/callbacks/recording//',
      '/callbacks/recordings',
      '/CALLBACKS/recording',
      '/callbacks/Recording',
      '/callbacks/screenshot/extra',
      '/xcallbacks/recording',
      '/health',
      '/callbacks/recording?x=1',
      '/callbacks/%72ecording',
      '/callbacks/recording%2F',
      '/../callbacks/recording',
      '/callbacks/recording\u0000',
      '//callbacks//screenshot',
    ),
  },
  { weight: 2, arbitrary: fc.webPath() },
  { weight: 1, arbitrary: oddString(40).map((s) => `/${s}`) },
);
const anyMethod = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('POST', 'post', 'Post', 'pOsT') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'GET',
      'PUT',
      'PATCH',
      'DELETE',
      'HEAD',
      'OPTIONS',
      'TRACE',
      'CONNECT',
      '',
      'POST ',
      ' POST',
      'POSTS',
    ),
  },
  { weight: 1, arbitrary: oddString(8) },
);

// ---------------------------------------------------------------------------------------------------

describe('fuzzing the ingest handler (in-memory queue)', () => {
  test(
    'random bodies on the callback routes (signature mode off): the answer the contract gives, bodies enqueued ' +
      'byte for byte',
    async () => {
      const queue = memoryQueue();
      const deps = depsFor('off', queue.client);
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...SERVICES),
          stagePrefix,
          bodyArb,
          junkHeaders,
          async (service, prefix, { body, base64 }, headers) => {
            const before = queue.sent.length;
            const res = await call(
              httpApiEvent({ path: `${prefix}/callbacks/${service}`, body, base64, headers }),
              deps,
            );
            expectAnswer(res, judgeBody(service, body, base64, MAX_BYTES), queue, before, service, 'not_checked');
            if (res.statusCode !== 200) logs.body(bodyText(body));
          },
        ),
        { numRuns: sized(1500, 5000) },
      );
    },
  );

  test(
    'every method and path: 404 off the routes, 405 for another method, the body judged only on POST to a ' + 'route',
    async () => {
      const queue = memoryQueue();
      const deps = depsFor('off', queue.client);
      const body =
        '{"timestamp":1763798400500,"type":1,"appKey":"demo-app",' +
        '"recordId":"rec-any","imageId":"img-any","code":200,"config":{}}';
      await fc.assert(
        fc.asyncProperty(anyMethod, anyPath, junkHeaders, async (method, path, headers) => {
          const before = queue.sent.length;
          const res = await call(httpApiEvent({ method, path, body, headers }), deps);
          const service = routeOf(path);
          const expected =
            service === null
              ? refused('not_found')
              : method.toUpperCase() !== 'POST'
                ? refused('method_not_allowed')
                : accepted(body, 'demo-app');
          expectAnswer(res, expected, queue, before, service ?? 'recording', 'not_checked');
        }),
        { numRuns: sized(400, 1200) },
      );
    },
  );

  // -------------------------------------------------------------------------------------------------
  // Signature variants (mode enforce)

  type Kind = 'nonce' | 'timestamp' | 'signature' | 'appKey';
  const aliases: Record<Kind, string[]> = {
    nonce: ['nonce', 'RC-Nonce'],
    timestamp: ['timestamp', 'signTimestamp', 'RC-Timestamp'],
    signature: ['signature', 'RC-Signature'],
    appKey: ['appKey', 'RC-App-Key'],
  };
  const placement = fc.record({
    where: fc.constantFrom('query', 'header', 'header', 'absent', 'empty'),
    alias: fc.nat({ max: 2 }),
    nameCase: fc.constantFrom('as-is', 'lower', 'upper', 'mixed'),
    padding: fc.constantFrom('', '', ' ', '\t'),
    // A conflicting value in the headers while the real one is in the query: the query wins.
    decoy: fc.boolean(),
  });
  const signatureCase = fc.record({
    service: fc.constantFrom(...SERVICES),
    appKey: fc.constantFrom('demo-app', 'demo-app', 'app-b', 'no-such-app'),
    secretIndex: fc.nat({ max: 1 }),
    forge: fc.constantFrom(
      'none',
      'none',
      'none',
      'upper',
      'wrong-secret',
      'random-hex',
      'truncated',
      'other-nonce',
      'other-timestamp',
      'garbage',
      // The genuine request's nonce ended in 0, given here to the front of the timestamp.
      'resplit',
    ),
    nonce: fc.oneof(
      fc.stringMatching(/^[0-9a-f]{16}$/),
      fc.stringMatching(/^[A-Za-z0-9._~-]{1,40}$/),
      oddString(12).filter((s) => s.trim() === s && s !== '' && s.isWellFormed()),
    ),
    timestamp: fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .tuple(fc.integer({ min: -400_000, max: 400_000 }), fc.boolean())
          .map(([off, seconds]) => (seconds ? String(Math.floor((NOW + off) / 1000)) : String(NOW + off))),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          String(NOW - 300_000),
          String(NOW + 300_000),
          String(NOW - 300_001),
          String((NOW + 300_000) / 1000),
          '0',
          '1',
          '99999999999',
          '100000000000',
          '99999999999999999',
          '-1763798500',
          '1763798500.5',
          '1.7637985e9',
          'abc',
          '0x10',
          `0${NOW}`,
          `00${Math.floor(NOW / 1000)}`,
          '00',
        ),
      },
    ),
    claim: fc.constantFrom('none', 'none', 'same', 'other'),
    placements: fc.record({ nonce: placement, timestamp: placement, signature: placement, appKey: placement }),
    queryForm: fc.constantFrom('raw', 'raw', 'parsed'),
    headers: junkHeaders,
  });

  const recase = (name: string, how: string) =>
    how === 'lower'
      ? name.toLowerCase()
      : how === 'upper'
        ? name.toUpperCase()
        : how === 'mixed'
          ? [...name].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join('')
          : name;

  test(
    'signature names, places, cases, timestamps and forgeries: the verdict the README orders, 200 only when ' +
      'genuine and fresh',
    async () => {
      const queue = memoryQueue();
      const deps = depsFor('enforce', queue.client);
      await fc.assert(
        fc.asyncProperty(signatureCase, async (c) => {
          const secrets = SECRETS[c.appKey];
          const secret = secrets?.[Math.min(c.secretIndex, secrets.length - 1)] ?? 'not-configured-anywhere';
          const good = computeSignature(secret, c.nonce, c.timestamp);
          const signature = {
            none: good,
            upper: good.toUpperCase(),
            'wrong-secret': computeSignature(`${secret}x`, c.nonce, c.timestamp),
            'random-hex': computeSignature('random', String(c.nonce.length), c.timestamp),
            truncated: good.slice(0, 39),
            'other-nonce': computeSignature(secret, `${c.nonce}0`, c.timestamp),
            'other-timestamp': computeSignature(secret, c.nonce, `${c.timestamp}0`),
            garbage: 'not-a-signature',
            resplit: computeSignature(secret, `${c.nonce}0`, c.timestamp),
          }[c.forge]!;
          const values: Record<Kind, string | undefined> = {
            nonce: c.nonce,
            timestamp: c.forge === 'resplit' ? `0${c.timestamp}` : c.timestamp,
            signature,
            appKey: c.claim === 'none' ? undefined : c.claim === 'same' ? c.appKey : 'someone-else',
          };
          const query: [string, string][] = [];
          const headers: Record<string, string> = { ...c.headers };
          const effective: Partial<Record<Kind, string>> = {};
          for (const kind of Object.keys(aliases) as Kind[]) {
            const p = c.placements[kind];
            const value = values[kind];
            if (value === undefined || p.where === 'absent') continue;
            const names = aliases[kind];
            const name = recase(names[p.alias % names.length]!, p.nameCase);
            if (p.where === 'empty') {
              // An empty value counts as absent.
              headers[name] = p.padding;
              continue;
            }
            const sent = `${p.padding}${value}${p.padding}`;
            if (p.where === 'query') {
              query.push([name, sent]);
              if (p.decoy) headers[recase(names[(p.alias + 1) % names.length]!, 'lower')] = `${value}-decoy`;
            } else {
              headers[name] = sent;
            }
            effective[kind] = value.trim() === '' ? undefined : value.trim();
          }
          const body = JSON.stringify({
            timestamp: NOW,
            type: 1,
            appKey: c.appKey,
            recordId: 'rec-sig',
            imageId: 'img-sig',
            code: 200,
            errorMessage: 'success',
            config: {},
          });
          const input: EventInput = { path: `/callbacks/${c.service}`, body, headers };
          const event = httpApiEvent(input);
          if (c.queryForm === 'raw') event.rawQueryString = new URLSearchParams(query).toString();
          else if (query.length) event.queryStringParameters = Object.fromEntries(query);

          const before = queue.sent.length;
          const res = await call(event, deps);
          const rejection = judgeSignature({
            appKey: c.appKey,
            secrets,
            nonce: effective.nonce,
            timestamp: effective.timestamp,
            signature: effective.signature,
            claimedAppKey: effective.appKey,
            nowMs: NOW,
            toleranceS: 300,
          });
          const expected = rejection === null ? accepted(body, c.appKey) : refused(rejection);
          expectAnswer(res, expected, queue, before, c.service, 'valid');
          if (rejection === null) {
            // The replay key travels with the message: a hash of the signature as checked, lower-cased.
            const { nonce, timestamp, signature: sig } = effective;
            const key = JSON.stringify([sig?.toLowerCase()]);
            const sent = queue.sent.at(-1)!.MessageAttributes[Attr.replayKey]?.StringValue;
            expect(sent).toBe(nonce && timestamp && sig ? sha256(key) : undefined);
            if (sig) expect(sent).not.toContain(sig.toLowerCase());
          }
          logs.signature(good);
          logs.signature(signature);
        }),
        { numRuns: sized(1000, 3000) },
      );
    },
  );

  test(
    'realistic callbacks with __proto__ / constructor keys, signed: accepted, enqueued byte for byte, no ' +
      'prototype touched',
    async () => {
      const queue = memoryQueue();
      const deps = depsFor('enforce', queue.client);
      const withPollution = fc.tuple(
        anyLifecycle(),
        fc.nat(),
        fc.subarray([0, 1, 2, 3], { minLength: 1 }),
        fc.constantFrom(' ', '', '\n  '),
      );
      await fc.assert(
        fc.asyncProperty(withPollution, async ([lifecycle, pick, where, space]) => {
          const original = lifecycle.bodies[pick % lifecycle.bodies.length]!;
          // Built as text: an object literal with "__proto__" would set a prototype instead of a key.
          let text = JSON.stringify(original, null, space === '' ? undefined : space);
          const inserts = [
            `"__proto__":{"polluted":"yes","isAdmin":true}`,
            `"constructor":{"prototype":{"polluted":"yes"}}`,
            `"prototype":{"polluted":"yes"}`,
            `"toString":{"__proto__":{"polluted":"yes"}}`,
          ];
          for (const i of where) text = text.replace(/^\{/, `{${inserts[i]},`);
          const appKey = original.appKey as string;
          const nonce = `n${pick}`;
          const timestamp = String(Math.floor(NOW / 1000));
          const secret = SECRETS[appKey]![pick % SECRETS[appKey]!.length]!;
          const headers = {
            'RC-Nonce': nonce,
            'RC-Timestamp': timestamp,
            'RC-Signature': computeSignature(secret, nonce, timestamp),
          };
          const before = queue.sent.length;
          const res = await call(httpApiEvent({ path: `/callbacks/${lifecycle.service}`, body: text, headers }), deps);
          expectAnswer(res, accepted(text, appKey), queue, before, lifecycle.service, 'valid');
          expect(({} as Record<string, unknown>).polluted).toBeUndefined();
          logs.signature(headers['RC-Signature']);
        }),
        { numRuns: sized(400, 1200) },
      );
    },
  );

  test(
    'malformed events (fields of the wrong kind, missing parts): still an answer, never a throw or a ' + '500',
    async () => {
      const queue = memoryQueue();
      const deps = depsFor('enforce', queue.client);
      const junk = fc.oneof(fc.anything({ maxDepth: 2 }), fc.constant(undefined), fc.constant(null));
      const mangled = fc.record({
        field: fc.constantFrom(
          'body',
          'headers',
          'rawPath',
          'rawQueryString',
          'queryStringParameters',
          'requestContext',
          'isBase64Encoded',
          'http',
          'method',
        ),
        value: junk,
        path: callbackPath,
      });
      await fc.assert(
        fc.asyncProperty(mangled, async ({ field, value, path }) => {
          const event = httpApiEvent({
            path,
            body: '{"type":1,"appKey":"demo-app","recordId":"r","imageId":"i"}',
          }) as unknown as Record<string, any>;
          if (field === 'http') event.requestContext.http = value;
          else if (field === 'method') event.requestContext.http.method = value;
          else event[field] = value;
          const res = await call(event as APIGatewayProxyEventV2, deps);
          // API Gateway never sends such events; for them an internal_error (503) is an acceptable answer.
          expectWellFormed(res, { ...contractCodes, internal_error: 503 });
        }),
        { numRuns: 500 },
      );
    },
  );

  test('queue unreachable: 503 queue_unavailable for every valid callback, nothing claims success', async () => {
    const queue = memoryQueue();
    queue.failing = true;
    const deps = depsFor('off', queue.client);
    await fc.assert(
      fc.asyncProperty(anyLifecycle(), fc.nat(), async (lifecycle, pick) => {
        const body = JSON.stringify(lifecycle.bodies[pick % lifecycle.bodies.length]);
        const res = await call(httpApiEvent({ path: `/callbacks/${lifecycle.service}`, body }), deps);
        expect(expectWellFormed(res)).toBe('queue_unavailable');
        expect(queue.sent).toHaveLength(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe('fuzzing the ingest handler against fauxqs', () => {
  let fauxqs: FauxqsServer;
  let sqs: SQSClient;
  let queueUrl: string;

  beforeAll(async () => {
    fauxqs = await startFauxqs({ port: 0, logger: false });
    const endpoint = `http://127.0.0.1:${fauxqs.port}`;
    queueUrl = new URL(new URL(fauxqs.createQueue('callbacks-fuzz').queueUrl).pathname, endpoint).href;
    sqs = createSqsClient({
      region: 'us-east-1',
      endpoint,
      credentials: LOCAL_CREDENTIALS,
    });
  });
  afterAll(async () => {
    sqs.destroy();
    await fauxqs.stop();
  });

  test('the same answers with a real queue, and every accepted body read back from it byte for byte', async () => {
    const deps = depsFor('off', sqs, queueUrl);
    const mixed = fc.oneof(
      {
        weight: 3,
        arbitrary: fc
          .tuple(fc.constantFrom(...SERVICES), framed(nearCallbackText))
          .map(([service, body]) => ({ service, body })),
      },
      {
        weight: 1,
        arbitrary: fc
          .tuple(anyLifecycle(), fc.nat())
          .map(([l, i]) => ({ service: l.service, body: JSON.stringify(l.bodies[i % l.bodies.length]) })),
      },
    );
    await fc.assert(
      fc.asyncProperty(mixed, async ({ service, body }) => {
        const res = await call(httpApiEvent({ path: `/callbacks/${service}`, body }), deps);
        let expected = judgeBody(service, body, false, MAX_BYTES);
        // fauxqs refuses characters above U+FFFF, which SQS accepts (its check lacks the `u` flag). The
        // handler then answers what it answers to any SendMessage failure: 503, never 200.
        if (expected.ok && /[\u{10000}-\u{10FFFF}]/u.test(expected.raw)) expected = refused('queue_unavailable');
        const code = expectWellFormed(res);
        const out = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 0,
            MessageAttributeNames: ['All'],
          }),
        );
        const messages = out.Messages ?? [];
        for (const m of messages)
          await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }));
        if (expected.ok) {
          expect(res.statusCode).toBe(200);
          expect(messages).toHaveLength(1);
          expect(messages[0]!.Body === expected.raw).toBe(true);
          expect(messages[0]!.MessageAttributes?.[Attr.service]?.StringValue).toBe(service);
          logs.body(expected.raw);
        } else {
          expect({ status: res.statusCode, code }).toEqual({ status: expected.status, code: expected.code });
          expect(messages).toHaveLength(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('after the fuzzing', () => {
  test(`over ${sized('four', 'ten')} thousand requests were answered`, () => {
    expect(runs).toBeGreaterThanOrEqual(sized(4_000, 10_000));
  });

  test('no prototype was polluted', () => {
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
    const probe = {} as Record<string, unknown>;
    expect([probe.polluted, probe.isAdmin, probe.type]).toEqual([undefined, undefined, undefined]);
  });

  test('no log line carries a secret, a signature or a whole body', () => {
    const counts = logs.counts();
    expect(counts.lines).toBeGreaterThanOrEqual(sized(4_000, 10_000));
    expect(counts.bodies).toBeGreaterThan(1000);
    expect(counts.signatures).toBeGreaterThan(1000);
    expect(logs.leaks()).toEqual([]);
  });
});
