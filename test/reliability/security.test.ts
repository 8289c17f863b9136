// Security, end to end over HTTP (gateway -> ingest -> fauxqs -> poller -> worker -> dynalite): forged
// signatures, stale and future timestamps, a signed request replayed with another body (quarantined as
// `replayed_signature`), a secret rotated in the middle of a run, an unknown appKey, oversized bodies.
// Every log line of all that traffic is captured: none may hold a configured secret, a signature value
// or a whole body.
import { Buffer } from 'node:buffer';
import { type AttributeValue, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { expectedTasks } from '../../devkit/emulator/expect.ts';
import { generateRun, type ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { sendAll, type SendResult } from '../../devkit/emulator/sender.ts';
import type { SecretsByAppKey, SecretsProvider } from '../../lib/signature/secrets.ts';
import { createLogger } from '../../lib/log.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { verifyTasks } from '../../devkit/verify/verify.ts';
import { captureLogs, type LogCapture } from './support/log-capture.ts';
import { startPipeline, waitFor, type Pipeline } from './support/pipeline.ts';
import { distinctAcknowledged, storedEvents } from './support/runs.ts';

const OLD = 'old-secret-4c7d19e2';
const NEW = 'new-secret-a83f5b60';
const APP_B = 'app-b-secret-2e9c71d4';

let secrets: SecretsByAppKey = new Map([
  ['demo-app', [OLD]],
  ['app-b', [APP_B]],
]);
const provider: SecretsProvider = { source: 'test', get: async () => secrets };

let pipeline: Pipeline;
let logs: LogCapture;
/** The message attributes of every SendMessage the ingest made, as JSON. */
const sentAttributes: string[] = [];

beforeAll(async () => {
  logs = captureLogs();
  for (const s of [OLD, NEW, APP_B]) logs.secret(s);
  pipeline = await startPipeline({
    secrets: provider,
    // Every body and signature value that reaches the ingest, the sender emulator's included, must stay
    // out of the logs.
    wrapIngest: (handler) => (event) => {
      if (event.body)
        logs.body(event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body);
      for (const [name, value] of [
        ...Object.entries(event.headers ?? {}),
        ...new URLSearchParams(event.rawQueryString ?? ''),
      ]) {
        if (value && /^(rc-)?signature$/i.test(name) && value.length >= 16) logs.signature(value);
      }
      return handler(event);
    },
  });
  pipeline.ingest.sqs.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { MessageAttributes?: unknown };
      if (input.MessageAttributes) sentAttributes.push(JSON.stringify(input.MessageAttributes));
      return next(args);
    },
    { step: 'initialize', name: 'recordSentAttributes' },
  );
});
afterAll(async () => {
  await pipeline.stop();
  logs.restore();
});

const nowS = () => String(Math.floor(Date.now() / 1000));
let nonceCounter = 0;
const nextNonce = () => `nonce-${process.pid}-${++nonceCounter}`;

function signed(secret: string, opts: { nonce?: string; timestamp?: string } = {}): Record<string, string> {
  const nonce = opts.nonce ?? nextNonce();
  const timestamp = opts.timestamp ?? nowS();
  const signature = computeSignature(secret, nonce, timestamp);
  logs.signature(signature);
  return { 'RC-Nonce': nonce, 'RC-Timestamp': timestamp, 'RC-Signature': signature };
}

interface Answer {
  status: number;
  code: string | null;
}

async function post(
  service: 'recording' | 'screenshot',
  body: string,
  headers: Record<string, string>,
  query = '',
): Promise<Answer> {
  logs.body(body);
  const res = await fetch(`${pipeline.url}/callbacks/${service}${query}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  const text = await res.text();
  return {
    status: res.status,
    code: res.status === 200 ? null : (JSON.parse(text) as { error: { code: string } }).error.code,
  };
}

let taskCounter = 0;
function start(id = `rec-sec-${++taskCounter}`, appKey = 'demo-app', extra: Record<string, unknown> = {}) {
  return {
    timestamp: Date.now(),
    type: 1,
    appKey,
    recordId: id,
    roomId: 'room-sec',
    sessionId: 'sess-sec',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    config: { trigger: 0 },
    output: { fileName: `${id}.mp4`, audioSample: 48000, videoResoulation: '1280x720' },
    ...extra,
  };
}

const drained = () => waitFor('the queue to drain', () => pipeline.idle());

async function quarantineEntries() {
  const entries = [];
  for await (const e of pipeline.store.listQuarantine({ sinceDays: 2 })) entries.push(e);
  return entries;
}

describe('forged and incomplete signatures', () => {
  test('every forgery is refused with 401/403 and nothing is stored', async () => {
    const body = start('rec-forged');
    const raw = JSON.stringify(body);
    const ts = nowS();
    const good = signed(OLD, { nonce: 'n-forged', timestamp: ts });
    const cases: [string, Record<string, string>, string, string][] = [
      ['wrong secret', signed('not-the-secret'), '', 'invalid_signature'],
      ["another appKey's secret", signed(APP_B), '', 'invalid_signature'],
      ['random hex', { ...good, 'RC-Signature': 'a'.repeat(40) }, '', 'invalid_signature'],
      ['signature of another nonce', { ...good, 'RC-Nonce': 'n-other' }, '', 'invalid_signature'],
      ['signature of another timestamp', { ...good, 'RC-Timestamp': String(Number(ts) - 1) }, '', 'invalid_signature'],
      ['claims another appKey', { ...signed(OLD), 'RC-App-Key': 'app-b' }, '', 'invalid_signature'],
      ['claims another appKey in the query', signed(OLD), '?appKey=app-b', 'invalid_signature'],
      [
        'query beats headers: forged query, genuine headers',
        good,
        `?nonce=n-forged&timestamp=${ts}&signature=${'b'.repeat(40)}`,
        'invalid_signature',
      ],
      ['no signature at all', {}, '', 'missing_signature'],
      ['no nonce', { 'RC-Timestamp': ts, 'RC-Signature': good['RC-Signature']! }, '', 'missing_signature'],
      ['empty signature', { ...good, 'RC-Signature': '' }, '', 'missing_signature'],
    ];
    const answers = [];
    for (const [name, headers, query] of cases)
      answers.push([name, (await post('recording', raw, headers, query)).code]);
    expect(answers).toEqual(cases.map(([name, , , code]) => [name, code]));
    // The genuine request goes through, to show the forged ones failed for their forgery alone.
    expect(await post('recording', raw, good)).toEqual({ status: 200, code: null });
    await drained();
    expect((await pipeline.store.getTask('rec-forged'))?.eventCount).toBe(1);
  });

  test('an unknown appKey is refused with 403, whatever it is signed with', async () => {
    for (const secret of [OLD, NEW, APP_B, 'made-up']) {
      expect(await post('recording', JSON.stringify(start('rec-stranger', 'stranger-app')), signed(secret))).toEqual({
        status: 403,
        code: 'unknown_app_key',
      });
    }
    await drained();
    expect(await pipeline.store.getTask('rec-stranger')).toBeNull();
  });
});

describe('timestamps', () => {
  test('stale and future timestamps are refused; inside the window, in seconds or milliseconds, accepted', async () => {
    const nowMs = Date.now();
    const at = (offsetS: number, unit: 's' | 'ms') =>
      unit === 's' ? String(Math.floor(nowMs / 1000) + offsetS) : String(nowMs + offsetS * 1000);
    const cases: [string, string, number][] = [
      ['10 minutes old', at(-600, 's'), 401],
      ['301 s old', at(-301, 's'), 401],
      ['301 s in the future', at(301, 's'), 401],
      ['a day in the future, ms', at(86_400, 'ms'), 401],
      ['epoch 0', '0', 401],
      ['not a number', 'yesterday', 401],
      ['280 s old', at(-280, 's'), 200],
      ['280 s in the future, ms', at(280, 'ms'), 200],
      ['now, ms', at(0, 'ms'), 200],
    ];
    for (const [name, timestamp, status] of cases) {
      const answer = await post('recording', JSON.stringify(start()), signed(OLD, { timestamp }));
      expect([name, answer]).toEqual([
        name,
        status === 200 ? { status, code: null } : { status, code: 'stale_timestamp' },
      ]);
    }
  });
});

describe('replay of a signed request', () => {
  test(
    'the same signature with another body is accepted at the door, then quarantined as replayed_signature and ' +
      'applied nowhere',
    async () => {
      const original = start('rec-replay-victim');
      const headers = signed(OLD);
      expect(await post('recording', JSON.stringify(original), headers)).toEqual({ status: 200, code: null });
      await drained();
      const before = await pipeline.store.getTask('rec-replay-victim');
      expect(before?.eventCount).toBe(1);

      // The body is not signed, so the door cannot tell; the worker remembers the signature's first body.
      const forgedSame = JSON.stringify({ ...original, code: 500, errorMessage: 'forged failure' });
      const forgedOther = JSON.stringify(start('rec-replay-intruder'));
      expect(await post('recording', forgedSame, headers)).toEqual({ status: 200, code: null });
      expect(await post('recording', forgedOther, headers)).toEqual({ status: 200, code: null });
      // The genuine body again, with its keys in another order: the same event, not a replay.
      const reordered = Object.fromEntries(Object.entries(original).reverse());
      expect(await post('recording', JSON.stringify(reordered), headers)).toEqual({ status: 200, code: null });
      await drained();

      expect(await pipeline.store.getTask('rec-replay-victim')).toEqual(before);
      expect(await pipeline.store.getTask('rec-replay-intruder')).toBeNull();
      const replays = (await quarantineEntries()).filter((e) => e.reason === 'replayed_signature');
      expect(replays.map((e) => e.raw).sort()).toEqual([forgedSame, forgedOther].sort());
      expect(replays.map((e) => e.taskId).sort()).toEqual(['rec-replay-intruder', 'rec-replay-victim']);
    },
  );

  test(
    'replay key bypass: a forged end (code 500) whose nonce gave its trailing 0 to the timestamp is refused at ' +
      'the door and changes nothing',
    async () => {
      const id = `rec-resplit-${++taskCounter}`;
      const nonce = `${nextNonce()}0`;
      const timestamp = nowS();
      const original = start(id);
      expect(await post('recording', JSON.stringify(original), signed(OLD, { nonce, timestamp }))).toEqual({
        status: 200,
        code: null,
      });
      await drained();
      const before = await pipeline.store.getTask(id);
      expect(before?.status).toBe('recording');

      const forgedEnd = JSON.stringify({
        ...original,
        type: 3,
        code: 500,
        errorMessage: 'forged failure',
        output: { fileName: `${id}.mp4`, fileSize: 1 },
      });
      // The same signed string, secret + nonce + timestamp, split one character earlier.
      const resplit = {
        'RC-Nonce': nonce.slice(0, -1),
        'RC-Timestamp': `0${timestamp}`,
        'RC-Signature': computeSignature(OLD, nonce, timestamp),
      };
      expect(await post('recording', forgedEnd, resplit)).toEqual({ status: 401, code: 'invalid_signature' });
      await drained();
      expect(await pipeline.store.getTask(id)).toEqual(before);
    },
  );

  // Each variant carries the values of a request already applied, spelled another way that still passes the
  // signature check: the replay must be recognised whatever the spelling.
  const everyCharEncoded = (text: string) =>
    [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  const mixedCase = (hex: string) => [...hex].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
  const variants: [string, (nonce: string, ts: string, sig: string) => [Record<string, string>, string]][] = [
    [
      'signature upper-cased in a header',
      (n, t, s) => [{ 'RC-Nonce': n, 'RC-Timestamp': t, 'RC-Signature': s.toUpperCase() }, ''],
    ],
    ['signature in mixed case in a header', (n, t, s) => [{ nonce: n, timestamp: t, signature: mixedCase(s) }, '']],
    [
      'signature upper-cased in the query string',
      (n, t, s) => [{}, `?nonce=${n}&timestamp=${t}&signature=${s.toUpperCase()}`],
    ],
    [
      'signature in mixed case in the query string',
      (n, t, s) => [{}, `?nonce=${n}&timestamp=${t}&signature=${mixedCase(s)}`],
    ],
    [
      'every query value percent-encoded',
      (n, t, s) => [
        {},
        `?nonce=${everyCharEncoded(n)}&timestamp=${everyCharEncoded(t)}&signature=${everyCharEncoded(s)}`,
      ],
    ],
    [
      'percent-encoded upper-case signature, names in another case',
      (n, t, s) => [{}, `?NONCE=${n}&SignTimestamp=${t}&Signature=${everyCharEncoded(s.toUpperCase())}`],
    ],
    [
      'spaces around every query value (%20 and +)',
      (n, t, s) => [{}, `?nonce=%20${n}%20&timestamp=+${t}+&signature=%20%20${s}+`],
    ],
    [
      'spaces around every header value',
      (n, t, s) => [{ 'RC-Nonce': ` ${n} `, 'RC-Timestamp': `\t${t} `, 'RC-Signature': `  ${s}  ` }, ''],
    ],
    [
      'header values, signature upper-cased, all in the query string as well',
      (n, t, s) => [{ 'RC-Signature': s.toUpperCase() }, `?nonce=${n}&timestamp=${t}&signature=${s.toUpperCase()}`],
    ],
  ];

  test.each(variants)(
    '%s: the second body is quarantined as replayed_signature, never applied',
    async (_name, spell) => {
      const victim = `rec-variant-victim-${++taskCounter}`;
      const intruder = `rec-variant-intruder-${taskCounter}`;
      const nonce = nextNonce();
      const timestamp = nowS();
      const original = start(victim);
      expect(await post('recording', JSON.stringify(original), signed(OLD, { nonce, timestamp }))).toEqual({
        status: 200,
        code: null,
      });
      await drained();
      const before = await pipeline.store.getTask(victim);
      expect(before?.eventCount).toBe(1);

      const [headers, query] = spell(nonce, timestamp, computeSignature(OLD, nonce, timestamp));
      const forgedSame = JSON.stringify({ ...original, code: 500, errorMessage: 'forged failure' });
      const forgedOther = JSON.stringify(start(intruder));
      // Accepted at the door: the spelling is a genuine signature of these values.
      expect(await post('recording', forgedSame, headers, query)).toEqual({ status: 200, code: null });
      expect(await post('recording', forgedOther, headers, query)).toEqual({ status: 200, code: null });
      await drained();

      expect(await pipeline.store.getTask(victim)).toEqual(before);
      expect(await pipeline.store.getTask(intruder)).toBeNull();
      const replays = (await quarantineEntries()).filter(
        (e) => e.reason === 'replayed_signature' && (e.taskId === victim || e.taskId === intruder),
      );
      expect(replays.map((e) => e.raw).sort()).toEqual([forgedSame, forgedOther].sort());
    },
  );
});

describe('secret rotation in the middle of a run', () => {
  test(
    'old secret alone, then old and new side by side, then new alone: nothing genuine lost, the retired secret ' +
      'refused',
    async () => {
      secrets = new Map([
        ['demo-app', [OLD]],
        ['app-b', [APP_B]],
      ]);
      const run = generateRun({
        seed: 'rotation',
        recordings: 6,
        screenshots: 3,
        appKey: 'demo-app',
        compress: 3600,
        duplicates: 0.1,
      });
      const third = Math.ceil(run.sends.length / 3);
      const phases = [run.sends.slice(0, third), run.sends.slice(third, 2 * third), run.sends.slice(2 * third)];
      for (const s of run.sends) logs.body(JSON.stringify(s.body));
      const send = async (sends: ScheduledSend[], secret: string, seed: string) =>
        (
          await sendAll({
            url: pipeline.url,
            sends,
            random: createRandom(seed),
            secret,
            followSchedule: false,
            concurrency: 4,
            maxAttempts: 3,
            backoffMs: 10,
          })
        ).results;

      const results: SendResult[] = [];
      // Phase 1: the platform signs with the old secret, the only one configured.
      results.push(...(await send(phases[0]!, OLD, 'p1')));
      // Phase 2: both configured; the platform switches to the new one part way through.
      secrets = new Map([
        ['demo-app', [NEW, OLD]],
        ['app-b', [APP_B]],
      ]);
      const half = Math.ceil(phases[1]!.length / 2);
      results.push(...(await send(phases[1]!.slice(0, half), OLD, 'p2a')));
      results.push(...(await send(phases[1]!.slice(half), NEW, 'p2b')));
      // Phase 3: the old secret is dropped. A sender still on it is refused (401 is not retried); the same
      // callbacks signed with the new secret go through.
      secrets = new Map([
        ['demo-app', [NEW]],
        ['app-b', [APP_B]],
      ]);
      const refused = await send(phases[2]!, OLD, 'p3-old');
      expect(refused.every((r) => !r.delivered && r.status === 401 && r.attempts === 1)).toBe(true);
      results.push(...refused, ...(await send(phases[2]!, NEW, 'p3-new')));

      expect(results.filter((r) => r.delivered)).toHaveLength(run.sends.length);
      const expected = expectedTasks(results);
      await drained();
      const verdict = await verifyTasks({
        expected,
        getTask: (id, appKey) => pipeline.store.getTask(id, appKey),
        waitForDrain: () => pipeline.idle(),
        timeoutMs: 30_000,
        settleMs: 200,
      });
      expect(verdict).toMatchObject({ ok: true, checked: 9, matched: 9 });
      const distinct = distinctAcknowledged(results);
      expect(await storedEvents(pipeline.store, expected)).toEqual({ eventCount: distinct, ledger: distinct });
    },
  );
});

describe('oversized bodies', () => {
  /** A valid callback padded to exactly `bytes` bytes of UTF-8 with a filler character. */
  function padded(bytes: number, filler: string): string {
    const base = JSON.stringify(start(`rec-size-${bytes}-${filler.length}`, 'demo-app', { pad: '' }));
    const room = bytes - Buffer.byteLength(base);
    const width = Buffer.byteLength(filler);
    const text = base.replace(
      '"pad":""',
      `"pad":"${filler.repeat(Math.floor(room / width))}${'x'.repeat(room % width)}"`,
    );
    expect(Buffer.byteLength(text)).toBe(bytes);
    return text;
  }

  test(
    '64 KiB is the limit, counted in bytes: one byte more is 413, ' + 'and far larger bodies are refused too',
    async () => {
      secrets = new Map([['demo-app', [OLD]]]);
      expect(await post('recording', padded(65_536, 'a'), signed(OLD))).toEqual({ status: 200, code: null });
      expect(await post('recording', padded(65_536, 'é'), signed(OLD))).toEqual({ status: 200, code: null });
      expect(await post('recording', padded(65_537, 'a'), signed(OLD))).toEqual({
        status: 413,
        code: 'body_too_large',
      });
      expect(await post('recording', padded(65_537, '€'), signed(OLD))).toEqual({
        status: 413,
        code: 'body_too_large',
      });
      expect(await post('recording', padded(1 << 20, 'a'), signed(OLD))).toEqual({
        status: 413,
        code: 'body_too_large',
      });
      // Beyond API Gateway's 10 MB the gateway itself refuses, before any function runs.
      expect(await post('recording', padded(11 << 20, 'a'), signed(OLD))).toEqual({
        status: 413,
        code: 'body_too_large',
      });
      // An oversized body is refused even unsigned: the size is judged first.
      expect(await post('recording', padded(70_000, 'a'), {})).toEqual({ status: 413, code: 'body_too_large' });
      await drained();
      expect(await pipeline.store.getTask('rec-size-65536-1')).not.toBeNull();
      expect(await pipeline.store.getTask('rec-size-65537-1')).toBeNull();
    },
  );
});

describe('what the receiver keeps', () => {
  // After all the traffic above: replayed, rotated, forged and genuine requests.
  test('neither the table nor the queue holds a signature that would pass the check', async () => {
    // Every signature value a request carried, but the forgeries made of one repeated character, which a
    // padded body may hold by chance.
    const issued = logs.signatureValues().filter((sig) => !/^(.)\1+$/.test(sig));
    expect(issued.length).toBeGreaterThan(20);
    const texts: string[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await pipeline.dynamo.client.send(
        new ScanCommand({ TableName: pipeline.dynamo.tableName, ExclusiveStartKey: start }),
      );
      for (const item of page.Items ?? []) texts.push(JSON.stringify(unmarshall(item)).toLowerCase());
      start = page.LastEvaluatedKey;
    } while (start);
    expect(texts.length).toBeGreaterThan(50);
    const holding = issued.filter((sig) => texts.some((t) => t.includes(sig)));
    expect(holding).toEqual([]);
    // The queue: what the ingest put in the message attributes of every request of this suite.
    const attributes = sentAttributes.join('\n').toLowerCase();
    expect(sentAttributes.length).toBeGreaterThan(50);
    expect(issued.filter((sig) => attributes.includes(sig))).toEqual([]);
  });
});

describe('logs', () => {
  test('the leak check finds a secret, a signature and a body when they are there', () => {
    const body = JSON.stringify(start('rec-leak-probe'));
    const signature = computeSignature(OLD, 'n', '1');
    const probe = (fields: Record<string, unknown>): string[] => {
      const capture = captureLogs();
      capture.secret(OLD);
      capture.signature(signature);
      capture.body(body);
      createLogger('probe').info('probe', { route: 'POST /callbacks/recording', ...fields });
      capture.restore();
      return capture.leaks();
    };
    expect(probe({})).toEqual([]);
    expect(probe({ raw: body })).toEqual([expect.stringMatching(/^body of \d+ chars/)]);
    expect(probe({ parsed: JSON.parse(body) })).toEqual([expect.stringMatching(/^body of \d+ chars/)]);
    expect(probe({ reason: `bad secret ${OLD}` })).toEqual([expect.stringMatching(/^secret /)]);
    expect(probe({ key: `n:1:${signature.toUpperCase()}` })).toEqual([expect.stringMatching(/^signature /)]);
  });

  test(
    'over all the traffic of this suite, no line carries a configured secret, a signature value or a whole ' + 'body',
    () => {
      const counts = logs.counts();
      expect(counts.lines).toBeGreaterThan(200);
      expect(counts.signatures).toBeGreaterThan(80);
      expect(counts.bodies).toBeGreaterThan(80);
      expect(logs.leaks()).toEqual([]);
    },
  );
});
