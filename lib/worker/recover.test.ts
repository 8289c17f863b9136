// Taking callbacks out of the quarantine, against dynalite: what the worker set aside is applied once the
// secret or the parser is fixed, exactly once, with the signature judged at the time it was received.
import { DynamoTaskStore } from '../aws/dynamo/read/task-store.ts';
import { parseCallback } from '../domain/callback.ts';
import type { TaskEvent } from '../domain/task-events.ts';
import type { QuarantineEntry } from '../domain/task-store.ts';
import { reduceTask } from '../domain/reduce-task.ts';
import { parseSecrets } from '../signature/secrets.ts';
import { createLogger, setLogSink } from '../log.ts';
import type { HeldSignature } from '../signature/held.ts';
import type { Service } from '../platform/services.ts';
import { computeSignature } from '../platform/signing.ts';
import { startDynamo, type LocalDynamo } from '../../devkit/local/dynamo.ts';
import { sqsEvent, sqsRecord } from '../../test/support/sqs-events.ts';
import { processBatch } from './process-batch.ts';
import { parseAllowList } from '../signature/source-ip.ts';
import { recoverAll, recoverEntry, type RecoverDeps } from './recover.ts';

const PLATFORM_SECRET = 'platform-secret';
const DAY = 86_400_000;
const now = Date.now();

let db: LocalDynamo;
let restoreSink: ReturnType<typeof setLogSink>;
let counter = 0;

beforeAll(async () => {
  db = await startDynamo('tasks-recover');
  restoreSink = setLogSink(() => {});
});
afterAll(async () => {
  setLogSink(restoreSink);
  await db.stop();
});

const store = () => new DynamoTaskStore({ client: db.client, tableName: db.tableName });

function startBody(recordId: string, timestamp: number) {
  return JSON.stringify({
    timestamp,
    type: 1,
    appKey: 'demo-app',
    recordId,
    roomId: 'room-r',
    sessionId: 'session-r',
    userId: '',
    mode: 3,
    code: 200,
    errorMessage: 'success',
    config: { mixLayout: 2 },
    output: { fileName: `session-r_room-r_${timestamp}.mp4` },
  });
}

/** The values the platform sends, signed with its secret at `signedAtMs`, from headers. */
function held(signedAtMs: number, secret = PLATFORM_SECRET): HeldSignature {
  const nonce = `nonce-${++counter}`;
  const timestamp = String(Math.floor(signedAtMs / 1000));
  return {
    nonce,
    timestamp,
    signature: computeSignature(secret, nonce, timestamp),
    from: { nonce: 'header', timestamp: 'header', signature: 'header' },
  };
}

/** Runs records through the worker, then reads back the entries it quarantined for `taskId`. */
async function quarantineThroughWorker(
  s: DynamoTaskStore,
  taskId: string,
  records: ReturnType<typeof sqsRecord>[],
): Promise<QuarantineEntry[]> {
  const res = await processBatch(sqsEvent(records), { store: s, log: createLogger('test') });
  expect(res.outcomes.every((o) => o === 'quarantined')).toBe(true);
  const entries: QuarantineEntry[] = [];
  for await (const e of s.listQuarantine({ taskId, since: 0 })) entries.push(e);
  return entries;
}

function deps(s: DynamoTaskStore, secrets: Record<string, string[]>, extra: Partial<RecoverDeps> = {}): RecoverDeps {
  return {
    store: s,
    secrets: async () => parseSecrets(JSON.stringify(secrets), 'test'),
    toleranceS: 300,
    acceptUnverified: false,
    dryRun: false,
    now: () => now,
    ...extra,
  };
}

function expectedTask(service: Service, ...bodies: string[]) {
  return reduceTask(
    bodies.map((b) => {
      const r = parseCallback(service, b);
      if (!r.ok) throw new Error(r.errors.join());
      return r.callback;
    }),
  );
}

describe('recoverEntry', () => {
  test('a callback set aside under a wrong secret is applied once the right one is configured, once', async () => {
    const s = store();
    const receivedAt = now - 3 * DAY;
    const body = startBody('rec-wrong-secret', receivedAt - 1000);
    const [entry] = await quarantineThroughWorker(s, 'rec-wrong-secret', [
      sqsRecord('recording', body, { verdict: 'invalid', mode: 'report', receivedAt, heldSignature: held(receivedAt) }),
    ]);
    expect(entry).toMatchObject({
      reason: 'invalid_signature',
      taskId: 'rec-wrong-secret',
      appKey: 'demo-app',
      mode: 'report',
      signature: { from: { nonce: 'header', timestamp: 'header', signature: 'header' } },
    });
    expect(entry!.applied).toBeUndefined();

    // The receiver's secret is still the wrong one: nothing changes.
    const still = await recoverEntry(entry!, deps(s, { 'demo-app': ['receiver-secret'] }));
    expect(still).toMatchObject({ outcome: 'failing', kind: 'signature', why: expect.stringContaining('no secret') });
    expect(await s.getTask('rec-wrong-secret')).toBeNull();

    // Fixed (the old secret kept next to the platform's, as during a rotation). The signature was made three
    // days ago and is judged against the time it was received, so it is not stale.
    const fixed = deps(s, { 'demo-app': ['receiver-secret', PLATFORM_SECRET] });
    expect(await recoverEntry(entry!, fixed)).toEqual({
      outcome: 'applied',
      taskId: 'rec-wrong-secret',
      verdict: 'valid',
    });
    expect(await s.getTask('rec-wrong-secret')).toEqual(expectedTask('recording', body));
    const [event] = await s.listEvents('rec-wrong-secret');
    expect(event).toMatchObject({
      verdict: 'valid',
      receivedAt,
      raw: body,
      recovered: { reason: 'invalid_signature', verdict: 'invalid', at: now },
    });

    // A second run: the store's exactly-once rule makes it a duplicate, and nothing changes.
    const [marked] = await quarantineEntries(s, 'rec-wrong-secret');
    expect(marked!.applied).toEqual({ at: now, outcome: 'applied', verdict: 'valid' });
    const later = { ...fixed, now: () => now + 60_000 };
    expect(await recoverEntry(marked!, later)).toEqual({
      outcome: 'duplicate',
      taskId: 'rec-wrong-secret',
      verdict: 'valid',
    });
    expect(await s.getTask('rec-wrong-secret')).toEqual(expectedTask('recording', body));
    expect(await s.listEvents('rec-wrong-secret')).toHaveLength(1);
    expect((await quarantineEntries(s, 'rec-wrong-secret'))[0]!.applied).toEqual(marked!.applied);
  });

  test('a signature made long before the callback was received is stale, whatever the date today', async () => {
    const s = store();
    const receivedAt = now - DAY;
    const body = startBody('rec-stale', receivedAt);
    const [entry] = await quarantineThroughWorker(s, 'rec-stale', [
      sqsRecord('recording', body, {
        verdict: 'invalid',
        mode: 'report',
        receivedAt,
        heldSignature: held(receivedAt - 301_000),
      }),
    ]);
    const result = await recoverEntry(entry!, deps(s, { 'demo-app': [PLATFORM_SECRET] }));
    expect(result).toMatchObject({ outcome: 'failing', kind: 'signature', why: expect.stringContaining('300 s') });
  });

  test('--accept-unverified applies it and says so on its ledger entry', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const body = startBody('rec-unverified', receivedAt);
    const [entry] = await quarantineThroughWorker(s, 'rec-unverified', [
      sqsRecord('recording', body, { verdict: 'invalid', mode: 'report', receivedAt, heldSignature: held(receivedAt) }),
    ]);
    const result = await recoverEntry(entry!, deps(s, { 'demo-app': ['other'] }, { acceptUnverified: true }));
    expect(result).toEqual({ outcome: 'applied', taskId: 'rec-unverified', verdict: 'accepted_unverified' });
    expect((await s.listEvents('rec-unverified'))[0]).toMatchObject({ verdict: 'accepted_unverified' });
    expect((await quarantineEntries(s, 'rec-unverified'))[0]!.applied).toMatchObject({
      outcome: 'applied',
      verdict: 'accepted_unverified',
    });
  });

  test('a dry run says what would happen and writes nothing', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const body = startBody('rec-dry', receivedAt);
    const [entry] = await quarantineThroughWorker(s, 'rec-dry', [
      sqsRecord('recording', body, { verdict: 'invalid', mode: 'report', receivedAt, heldSignature: held(receivedAt) }),
    ]);
    const result = await recoverEntry(entry!, deps(s, { 'demo-app': [PLATFORM_SECRET] }, { dryRun: true }));
    expect(result).toEqual({ outcome: 'would_apply', taskId: 'rec-dry', verdict: 'valid' });
    expect(await s.getTask('rec-dry')).toBeNull();
    expect((await quarantineEntries(s, 'rec-dry'))[0]!.applied).toBeUndefined();
  });

  test('a body that failed the parse keeps its task id, and is applied once the parser accepts it', async () => {
    const s = store();
    const receivedAt = now - 1000;
    // A slice without `output`: the worker's parse refuses it, the entry still names the task.
    const noOutput = JSON.stringify({ timestamp: receivedAt, type: 2, appKey: 'demo-app', recordId: 'rec-no-output' });
    const [entry] = await quarantineThroughWorker(s, 'rec-no-output', [
      sqsRecord('recording', noOutput, { receivedAt }),
    ]);
    expect(entry).toMatchObject({ reason: 'invalid_callback', taskId: 'rec-no-output', appKey: 'demo-app' });
    expect(await s.countQuarantined('rec-no-output')).toBe(1);
    const secrets = async () => {
      throw new Error('a callback whose signature verified is not checked again');
    };
    expect(await recoverEntry(entry!, { ...deps(s, {}), secrets })).toMatchObject({ outcome: 'failing', kind: 'body' });

    // What a fixed parser would accept: the same entry with a body today's parse reads.
    const body = startBody('rec-no-output', receivedAt);
    const fixedEntry: QuarantineEntry = { ...entry!, raw: body };
    expect(await recoverEntry(fixedEntry, { ...deps(s, {}), secrets })).toEqual({
      outcome: 'applied',
      taskId: 'rec-no-output',
      verdict: 'valid',
    });
    expect(await s.getTask('rec-no-output')).toEqual(expectedTask('recording', body));
  });

  test('a replayed signature is never applied, and the quarantine gets no second entry', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const replayKey = 'a'.repeat(64);
    const original = startBody('rec-replay', receivedAt);
    const replay = startBody('rec-replay', receivedAt + 5);
    const res = await processBatch(
      sqsEvent([
        sqsRecord('recording', original, { receivedAt, replayKey }),
        sqsRecord('recording', replay, { receivedAt: receivedAt + 1, replayKey }),
      ]),
      { store: s, log: createLogger('test') },
    );
    expect(res.outcomes).toEqual(['applied', 'quarantined']);
    const entries = await quarantineEntries(s, 'rec-replay');
    expect(entries.map((e) => e.reason)).toEqual(['replayed_signature']);
    expect(await recoverEntry(entries[0]!, deps(s, {}, { acceptUnverified: true }))).toMatchObject({
      outcome: 'failing',
      kind: 'replay',
    });
    expect(await s.getTask('rec-replay')).toEqual(expectedTask('recording', original));
    expect(await quarantineEntries(s, 'rec-replay')).toHaveLength(1);
  });

  test('a recovered callback that the store refuses (another service) stays where it is', async () => {
    const s = store();
    const receivedAt = now - 1000;
    await processBatch(sqsEvent([sqsRecord('recording', startBody('shared-id', receivedAt), { receivedAt })]), {
      store: s,
      log: createLogger('test'),
    });
    const screenshot = JSON.stringify({
      timestamp: receivedAt,
      type: 1,
      appKey: 'demo-app',
      imageId: 'shared-id',
      roomId: 'room-r',
      sessionId: 'session-r',
      code: 200,
    });
    const [entry] = await quarantineThroughWorker(s, 'shared-id', [
      sqsRecord('screenshot', screenshot, {
        verdict: 'invalid',
        mode: 'report',
        receivedAt,
        heldSignature: held(receivedAt),
      }),
    ]);
    const result = await recoverEntry(entry!, deps(s, { 'demo-app': [PLATFORM_SECRET] }));
    expect(result).toMatchObject({
      outcome: 'failing',
      kind: 'store',
      why: expect.stringMatching(/^service_mismatch/),
    });
    expect(await quarantineEntries(s, 'shared-id')).toHaveLength(1);
  });
});

describe('a run of the quarantine (recoverAll)', () => {
  /** Two bodies under one genuine signature, the forged one received 2 s after the genuine, set aside. */
  async function genuineAndForged(s: DynamoTaskStore, id: string) {
    const receivedAt = now - 60_000;
    const signature = held(receivedAt);
    const genuine = startBody(id, receivedAt - 500);
    const forged = JSON.stringify({ ...JSON.parse(genuine), roomId: 'room-forged', code: 500 });
    const entries = await quarantineThroughWorker(s, id, [
      sqsRecord('recording', genuine, {
        messageId: `${id}-genuine`,
        verdict: 'invalid',
        mode: 'report',
        receivedAt,
        heldSignature: signature,
      }),
      sqsRecord('recording', forged, {
        messageId: `${id}-forged`,
        verdict: 'invalid',
        mode: 'report',
        receivedAt: receivedAt + 2000,
        heldSignature: signature,
      }),
    ]);
    // As the listing gives them: newest first.
    expect(entries.map((e) => e.messageId)).toEqual([`${id}-forged`, `${id}-genuine`]);
    return { entries, genuine };
  }

  test('went newest first: a forged replay after the genuine one won; now the genuine is applied', async () => {
    const s = store();
    const { entries, genuine } = await genuineAndForged(s, 'rec-genuine-first');
    const fixed = deps(s, { 'demo-app': [PLATFORM_SECRET] });

    const dry = await recoverAll(entries, { ...fixed, dryRun: true });
    expect(dry.map(({ entry, result }) => [entry.messageId, result.outcome])).toEqual([
      ['rec-genuine-first-genuine', 'would_apply'],
      ['rec-genuine-first-forged', 'failing'],
    ]);
    expect(dry[1]!.result).toMatchObject({ kind: 'replay', replayOf: 'rec-genuine-first-genuine' });
    expect(await s.getTask('rec-genuine-first')).toBeNull();

    const run = await recoverAll(entries, fixed);
    expect(run.map(({ entry, result }) => [entry.messageId, result])).toEqual([
      ['rec-genuine-first-genuine', { outcome: 'applied', taskId: 'rec-genuine-first', verdict: 'valid' }],
      [
        'rec-genuine-first-forged',
        {
          outcome: 'failing',
          taskId: 'rec-genuine-first',
          kind: 'replay',
          why: expect.stringContaining('only the earliest is applied'),
          replayOf: 'rec-genuine-first-genuine',
        },
      ],
    ]);
    expect(await s.getTask('rec-genuine-first')).toEqual(expectedTask('recording', genuine));
    const marked = await quarantineEntries(s, 'rec-genuine-first');
    expect(marked.map((e) => [e.messageId, e.applied?.outcome])).toEqual([
      ['rec-genuine-first-forged', undefined],
      ['rec-genuine-first-genuine', 'applied'],
    ]);

    // Run again, even accepting what does not verify: the genuine is a duplicate, the forged still a replay.
    const again = await recoverAll(marked, { ...fixed, acceptUnverified: true });
    expect(again.map(({ result }) => [result.outcome, result.outcome === 'failing' && result.kind])).toEqual([
      ['duplicate', false],
      ['failing', 'replay'],
    ]);
    expect(await s.getTask('rec-genuine-first')).toEqual(expectedTask('recording', genuine));
  });

  test('a filter that left out the genuine callback let its replay through: now a replay of it', async () => {
    const s = store();
    const { entries, genuine } = await genuineAndForged(s, 'rec-left-out');
    const [forged, genuineEntry] = entries;
    const fixed = deps(s, { 'demo-app': [PLATFORM_SECRET] });
    const run = await recoverAll([forged!], fixed, { around: entries });
    expect(run.map(({ result }) => result)).toEqual([
      expect.objectContaining({ outcome: 'failing', kind: 'replay', replayOf: genuineEntry!.messageId }),
    ]);
    expect(await s.getTask('rec-left-out')).toBeNull();
    // The genuine one, in a run of its own, is applied.
    expect((await recoverAll([genuineEntry!], fixed, { around: entries }))[0]!.result.outcome).toBe('applied');
    expect(await s.getTask('rec-left-out')).toEqual(expectedTask('recording', genuine));
  });

  test('one replay key under two appKeys is two claims, as in the worker: neither replays the other', async () => {
    const s = store();
    const { entries } = await genuineAndForged(s, 'rec-two-app-keys');
    const [forged, genuineEntry] = entries;
    const otherApp = { ...forged!, appKey: 'other-app' };
    const dry = await recoverAll([genuineEntry!, otherApp], {
      ...deps(s, { 'demo-app': [PLATFORM_SECRET] }),
      dryRun: true,
    });
    expect(dry.map(({ result }) => result.outcome === 'failing' && result.kind)).not.toContain('replay');
  });

  test('the same callback delivered twice under its signature is a duplicate, not a replay', async () => {
    const s = store();
    const receivedAt = now - 60_000;
    const signature = held(receivedAt);
    const body = startBody('rec-twice', receivedAt - 500);
    // The second delivery with its keys in another order: the same event.
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(body)).reverse()));
    const aside = { verdict: 'invalid', mode: 'report', heldSignature: signature } as const;
    const entries = await quarantineThroughWorker(s, 'rec-twice', [
      sqsRecord('recording', body, { ...aside, messageId: 'rec-twice-1', receivedAt }),
      sqsRecord('recording', reordered, { ...aside, messageId: 'rec-twice-2', receivedAt: receivedAt + 1000 }),
    ]);
    const run = await recoverAll(entries, deps(s, { 'demo-app': [PLATFORM_SECRET] }));
    expect(run.map(({ entry, result }) => [entry.messageId, result.outcome])).toEqual([
      ['rec-twice-1', 'applied'],
      ['rec-twice-2', 'duplicate'],
    ]);
    expect(await s.getTask('rec-twice')).toEqual(expectedTask('recording', body));
  });

  test('entries received in the same millisecond are taken in message-id order', async () => {
    const s = store();
    const { entries, genuine } = await genuineAndForged(s, 'rec-same-ms');
    const sameTime = entries.map((e) => ({ ...e, receivedAt: now - 60_000 }));
    const run = await recoverAll(sameTime, deps(s, { 'demo-app': [PLATFORM_SECRET] }));
    // "rec-same-ms-forged" sorts before "rec-same-ms-genuine".
    expect(run.map(({ entry, result }) => [entry.messageId, result.outcome])).toEqual([
      ['rec-same-ms-forged', 'applied'],
      ['rec-same-ms-genuine', 'failing'],
    ]);
    expect(await s.getTask('rec-same-ms')).not.toEqual(expectedTask('recording', genuine));
  });

  test("secrets that cannot be read stop the run; a failed write is that entry's outcome", async () => {
    const s = store();
    const { entries } = await genuineAndForged(s, 'rec-run-errors');
    const unreadable = async () => {
      throw new Error('the parameter cannot be read');
    };
    await expect(recoverAll(entries, { ...deps(s, {}), secrets: unreadable })).rejects.toThrow('cannot be read');
    const failingStore = Object.create(s, {
      applyCallback: { value: async () => Promise.reject(new Error('throttled')) },
    }) as DynamoTaskStore;
    const run = await recoverAll(entries, deps(failingStore, { 'demo-app': [PLATFORM_SECRET] }));
    expect(run[0]!.result).toMatchObject({ outcome: 'failing', kind: 'store', why: 'the write failed: throttled' });
  });
});

describe('the source of a quarantined callback', () => {
  test('the worker keeps the source IP and user agent on every entry; one written before reads as null', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const sender = { sourceIp: '203.0.113.7', userAgent: 'platform-callback/2.1' };
    const replayKey = 'b'.repeat(64);
    await processBatch(
      sqsEvent([
        // Set aside for its signature, for its body, and by the store as a replay.
        sqsRecord('recording', startBody('rec-src-1', receivedAt), {
          verdict: 'invalid',
          mode: 'report',
          receivedAt,
          sender,
        }),
        sqsRecord('recording', JSON.stringify({ type: 2, appKey: 'demo-app', recordId: 'rec-src-2' }), {
          receivedAt,
          sender,
        }),
        sqsRecord('recording', startBody('rec-src-3', receivedAt), { receivedAt, replayKey, sender }),
        sqsRecord('recording', startBody('rec-src-3', receivedAt + 5), { receivedAt, replayKey, sender }),
        sqsRecord('recording', startBody('rec-src-4', receivedAt), { verdict: 'invalid', mode: 'report', receivedAt }),
      ]),
      { store: s, log: createLogger('test') },
    );
    const sources = async (id: string) =>
      (await quarantineEntries(s, id)).map((e) => [e.reason, e.sourceIp, e.userAgent]);
    expect(await sources('rec-src-1')).toEqual([['invalid_signature', '203.0.113.7', 'platform-callback/2.1']]);
    expect(await sources('rec-src-2')).toEqual([['invalid_callback', '203.0.113.7', 'platform-callback/2.1']]);
    expect(await sources('rec-src-3')).toEqual([['replayed_signature', '203.0.113.7', 'platform-callback/2.1']]);
    expect(await sources('rec-src-4')).toEqual([['invalid_signature', null, null]]);
  });

  test('--accept-unverified applied unsigned forgeries from anywhere: --source accepts only its ranges', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const record = (id: string, sourceIp?: string) =>
      sqsRecord('recording', startBody(id, receivedAt), {
        verdict: 'missing',
        mode: 'report',
        receivedAt,
        ...(sourceIp ? { sender: { sourceIp } } : {}),
      });
    await processBatch(
      sqsEvent([
        record('rec-source-platform', '203.0.113.7'),
        record('rec-source-mapped', '::ffff:203.0.113.8'),
        record('rec-source-elsewhere', '198.51.100.9'),
        record('rec-source-unknown'),
      ]),
      { store: s, log: createLogger('test') },
    );
    const entries = (
      await Promise.all(
        ['rec-source-platform', 'rec-source-mapped', 'rec-source-elsewhere', 'rec-source-unknown'].map((id) =>
          quarantineEntries(s, id),
        ),
      )
    ).flat();
    const acceptFrom = parseAllowList('203.0.113.0/24', '--source');
    const run = await recoverAll(entries, deps(s, {}, { acceptUnverified: true, acceptFrom }));
    expect(Object.fromEntries(run.map(({ entry, result }) => [entry.taskId, result.outcome]))).toEqual({
      'rec-source-platform': 'applied',
      'rec-source-mapped': 'applied',
      'rec-source-elsewhere': 'failing',
      'rec-source-unknown': 'failing',
    });
    const why = (id: string) => run.find((r) => r.entry.taskId === id)!.result;
    expect(why('rec-source-elsewhere')).toMatchObject({
      kind: 'signature',
      why: expect.stringContaining('not accepted: its source IP is outside --source (203.0.113.0/24)'),
    });
    expect(why('rec-source-unknown')).toMatchObject({
      kind: 'signature',
      why: expect.stringContaining('its source IP was not recorded'),
    });
    expect(await s.getTask('rec-source-elsewhere')).toBeNull();
    expect(await s.getTask('rec-source-unknown')).toBeNull();
    expect((await s.listEvents('rec-source-platform'))[0]).toMatchObject({ verdict: 'accepted_unverified' });
  });
});

describe('task events of what is recovered', () => {
  test('published as the worker publishes them; a refused publish leaves the entry to the next run', async () => {
    const s = store();
    const receivedAt = now - 1000;
    const body = startBody('rec-events', receivedAt);
    const [entry] = await quarantineThroughWorker(s, 'rec-events', [
      sqsRecord('recording', body, { verdict: 'invalid', mode: 'report', receivedAt, heldSignature: held(receivedAt) }),
    ]);
    const fixed = deps(s, { 'demo-app': [PLATFORM_SECRET] });
    const refusing = { publish: async () => Promise.reject(new Error('topic unreachable')) };
    expect(await recoverEntry(entry!, { ...fixed, events: refusing })).toEqual({
      outcome: 'failing',
      taskId: 'rec-events',
      kind: 'store',
      why: 'applied, but its task events could not be published (topic unreachable); run again',
    });
    // The write stands, the entry is not marked: the next run completes it.
    expect(await s.getTask('rec-events')).toEqual(expectedTask('recording', body));
    const [unmarked] = await quarantineEntries(s, 'rec-events');
    expect(unmarked!.applied).toBeUndefined();
    const published: TaskEvent[] = [];
    const collecting = { publish: async (events: readonly TaskEvent[]) => void published.push(...events) };
    expect(await recoverEntry(unmarked!, { ...fixed, events: collecting })).toMatchObject({ outcome: 'duplicate' });
    expect(published.map((e) => [e.type, e.task.id])).toEqual([['task.started', 'rec-events']]);
    expect((await quarantineEntries(s, 'rec-events'))[0]!.applied).toMatchObject({ outcome: 'duplicate' });
  });
});

describe('the quarantine listing', () => {
  test('filters by reason, task, appKey and receive time, newest first or oldest first', async () => {
    const s = store();
    const base = now - 2 * DAY;
    const bad = (id: string, appKey: string) => JSON.stringify({ timestamp: base, type: 2, appKey, recordId: id });
    await processBatch(
      sqsEvent([
        sqsRecord('recording', bad('rec-f1', 'app-f'), { receivedAt: base }),
        sqsRecord('recording', bad('rec-f2', 'app-g'), { receivedAt: base + DAY }),
        sqsRecord('recording', startBody('rec-f3', base), {
          receivedAt: base + DAY + 1,
          verdict: 'invalid',
          mode: 'report',
        }),
      ]),
      { store: s, log: createLogger('test') },
    );
    const list = async (query: Parameters<DynamoTaskStore['listQuarantine']>[0]) => {
      const ids: (string | null)[] = [];
      for await (const e of s.listQuarantine(query)) if (e.taskId?.startsWith('rec-f')) ids.push(e.taskId);
      return ids;
    };
    expect(await list({ since: base })).toEqual(['rec-f3', 'rec-f2', 'rec-f1']);
    expect(await list({ since: base, reason: 'invalid_callback' })).toEqual(['rec-f2', 'rec-f1']);
    expect(await list({ since: base, appKey: 'app-g' })).toEqual(['rec-f2']);
    expect(await list({ since: base, taskId: 'rec-f1' })).toEqual(['rec-f1']);
    expect(await list({ since: base, until: base + DAY })).toEqual(['rec-f2', 'rec-f1']);
    expect(await list({ since: base + 1, until: base + DAY })).toEqual(['rec-f2']);
    expect(await list({ taskId: 'rec-f1', since: base + 1 })).toEqual([]);
    // Oldest first, as `quarantine apply` takes them: a limit leaves out the later ones.
    expect(await list({ since: base, oldestFirst: true })).toEqual(['rec-f1', 'rec-f2', 'rec-f3']);
    expect(await list({ since: base, oldestFirst: true, reason: 'invalid_callback', limit: 1 })).toEqual(['rec-f1']);
  });
});

async function quarantineEntries(s: DynamoTaskStore, taskId: string): Promise<QuarantineEntry[]> {
  const entries: QuarantineEntry[] = [];
  for await (const e of s.listQuarantine({ taskId, since: 0 })) entries.push(e);
  return entries;
}
