// The signature modes, end to end (gateway -> ingest -> fauxqs -> poller -> worker -> dynalite). `report`
// accepts every callback at the door but applies only those whose signature is valid: every other verdict
// is kept aside with a reason of its own, to be looked at (and applied later by hand if it was genuine).
// `off` (development) applies callbacks unchecked, marked not_checked.
import { SecretsUnavailableError, type SecretsByAppKey, type SecretsProvider } from '../../lib/signature/secrets.ts';
import type { QuarantineEntry } from '../../lib/domain/task-store.ts';
import { computeSignature } from '../../lib/platform/signing.ts';
import { recoverAll } from '../../lib/worker/recover.ts';
import { startPipeline, waitFor, type Pipeline } from './support/pipeline.ts';
import { setLogSink } from '../../lib/log.ts';

// The pipeline's functions log as on Lambda; what they say is not what is checked here, and it is not printed.
let restoreSink: ReturnType<typeof setLogSink>;
beforeAll(() => {
  restoreSink = setLogSink(() => {});
});
afterAll(() => {
  setLogSink(restoreSink);
});

const SECRET = 'modes-secret-7d20';
const secrets: SecretsByAppKey = new Map([['demo-app', [SECRET]]]);
let secretsUnavailable = false;
const provider: SecretsProvider = {
  source: 'test',
  get: async () => {
    if (secretsUnavailable) throw new SecretsUnavailableError('the secrets store does not answer');
    return secrets;
  },
};

let n = 0;
function signed(secret: string, timestamp = String(Math.floor(Date.now() / 1000))): Record<string, string> {
  const nonce = `n-modes-${++n}`;
  return { 'RC-Nonce': nonce, 'RC-Timestamp': timestamp, 'RC-Signature': computeSignature(secret, nonce, timestamp) };
}

function start(id: string, appKey = 'demo-app') {
  return JSON.stringify({
    timestamp: Date.now(),
    type: 1,
    appKey,
    recordId: id,
    roomId: 'room-m',
    sessionId: 'sess-m',
    code: 200,
    errorMessage: 'success',
  });
}

async function post(pipeline: Pipeline, body: string, headers: Record<string, string>): Promise<number> {
  const res = await fetch(`${pipeline.url}/callbacks/recording`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  await res.text();
  return res.status;
}

async function quarantined(pipeline: Pipeline): Promise<QuarantineEntry[]> {
  const entries: QuarantineEntry[] = [];
  for await (const e of pipeline.store.listQuarantine({ sinceDays: 2 })) entries.push(e);
  return entries;
}

describe('report', () => {
  let pipeline: Pipeline;
  beforeAll(async () => {
    pipeline = await startPipeline({ mode: 'report', secrets: provider });
  });
  afterAll(() => pipeline.stop());

  test('every verdict but valid is accepted, then kept aside with its reason and applied nowhere', async () => {
    const tenMinutesAgo = String(Math.floor(Date.now() / 1000) - 600);
    const cases: [string, string, () => Record<string, string>, string | null][] = [
      ['rec-report-valid', 'demo-app', () => signed(SECRET), null],
      ['rec-report-invalid', 'demo-app', () => signed('not-the-secret'), 'invalid_signature'],
      ['rec-report-other-app', 'demo-app', () => ({ ...signed(SECRET), 'RC-App-Key': 'app-b' }), 'invalid_signature'],
      ['rec-report-missing', 'demo-app', () => ({}), 'missing_signature'],
      ['rec-report-no-nonce', 'demo-app', () => ({ ...signed(SECRET), 'RC-Nonce': '' }), 'missing_signature'],
      ['rec-report-stale', 'demo-app', () => signed(SECRET, tenMinutesAgo), 'stale_timestamp'],
      ['rec-report-stranger', 'stranger-app', () => signed(SECRET), 'unknown_app_key'],
    ];
    for (const [id, appKey, headers] of cases)
      expect([id, await post(pipeline, start(id, appKey), headers())]).toEqual([id, 200]);
    // Secrets that cannot be read: report mode still accepts, but nothing vouches for the callback.
    secretsUnavailable = true;
    try {
      expect(await post(pipeline, start('rec-report-unverified'), signed(SECRET))).toBe(200);
    } finally {
      secretsUnavailable = false;
    }
    cases.push(['rec-report-unverified', 'demo-app', () => ({}), 'unverified']);
    await waitFor('the queue to drain', () => pipeline.idle());

    const entries = await quarantined(pipeline);
    for (const [id, , , reason] of cases) {
      const task = await pipeline.store.getTask(id);
      const aside = entries.filter((e) => e.taskId === id).map((e) => e.reason);
      expect([id, task === null, aside]).toEqual([id, reason !== null, reason === null ? [] : [reason]]);
    }
    const events = await pipeline.store.listEvents('rec-report-valid');
    expect(events.map((e) => e.verdict)).toEqual(['valid']);
    // Each entry says where the request came from, as the gateway saw it.
    const sources = new Set(entries.map((e) => `${e.sourceIp} ${e.userAgent}`));
    expect([...sources]).toEqual(['127.0.0.1 node']);
  });

  test('recovery went newest first: a forged replay is now reported as one, the genuine applied', async () => {
    // The receiver does not have the platform's secret yet: both are set aside as invalid_signature.
    const platformSecret = 'platform-secret-replay';
    const headers = signed(platformSecret);
    const genuine = start('rec-report-replay');
    const forged = JSON.stringify({ ...JSON.parse(genuine), roomId: 'room-forged', code: 500 });
    expect(await post(pipeline, genuine, headers)).toBe(200);
    // Received a few milliseconds later (the message id, random, would otherwise decide).
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await post(pipeline, forged, headers)).toBe(200);
    await waitFor('the queue to drain', () => pipeline.idle());
    const entries = (await quarantined(pipeline)).filter((e) => e.taskId === 'rec-report-replay');
    expect(entries.map((e) => [e.reason, e.raw === forged])).toEqual([
      ['invalid_signature', true],
      ['invalid_signature', false],
    ]);

    // The secret fixed; the entries as the listing gives them, newest first.
    const run = await recoverAll(entries, {
      store: pipeline.store,
      secrets: async () => new Map([['demo-app', [platformSecret]]]),
      toleranceS: 300,
      acceptUnverified: true,
      dryRun: false,
      now: Date.now,
    });
    expect(run.map(({ entry, result }) => [entry.raw === genuine, result.outcome])).toEqual([
      [true, 'applied'],
      [false, 'failing'],
    ]);
    expect(run[1]!.result).toMatchObject({ kind: 'replay', replayOf: run[0]!.entry.messageId });
    expect((await pipeline.store.getTask('rec-report-replay'))?.roomId).toBe('room-m');
  });
});

describe('off', () => {
  let pipeline: Pipeline;
  beforeAll(async () => {
    pipeline = await startPipeline({ mode: 'off', secrets: provider });
  });
  afterAll(() => pipeline.stop());

  test('callbacks are applied unchecked, marked not_checked', async () => {
    expect(await post(pipeline, start('rec-off-unsigned'), {})).toBe(200);
    expect(await post(pipeline, start('rec-off-forged'), signed('not-the-secret'))).toBe(200);
    await waitFor('the queue to drain', () => pipeline.idle());
    for (const id of ['rec-off-unsigned', 'rec-off-forged']) {
      expect((await pipeline.store.getTask(id))?.eventCount).toBe(1);
      expect((await pipeline.store.listEvents(id)).map((e) => e.verdict)).toEqual(['not_checked']);
    }
    expect(await quarantined(pipeline)).toEqual([]);
  });
});
