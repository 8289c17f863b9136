// The check of every file reported uploaded in its storage (docs/verification.md) through the real worker, store
// (dynalite) and storage (fauxqs' S3, and an HTTP server for the HEAD setting): the worker publishes
// `file.uploaded`, the verifier is given those events as its queue would deliver them, checks each file, and
// stores and announces what it found. Storage faults each give their state; a 403 or a 404 is never read as ok;
// a storage that does not answer is asked again until the last receive; the task's counts of checks stay exact
// whatever write of the verifier fails, and whichever checks of one file run at once.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SQSRecord } from 'aws-lambda';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { setClientHook } from '../lib/aws/clients.ts';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { IncidentStore } from '../lib/aws/dynamo/storage/storage-incidents.ts';
import { VerifierStore } from '../lib/aws/dynamo/storage/verifier-store.ts';
import { readVerificationCounts } from '../lib/aws/dynamo/storage/verifications.ts';
import { StorageChecks } from '../lib/aws/storage/storage-checks.ts';
import type { StorageSettings } from '../lib/config/storage-settings.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { CHECKED_STATES, type VerifiedFileView } from '../lib/domain/verification.ts';
import { createLogger } from '../lib/log.ts';
import { processVerifyBatch, type VerifierDeps } from '../lib/verifier/verify-batch.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';
import { enforceStoredAccess } from '../devkit/local/stack-storage.ts';
import { DENIED_METADATA } from '../devkit/emulator/storage.ts';
import { dyingClient } from './support/faulty-client.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

type Body = Record<string, any>;
const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const BUCKET = 'verify-test-files';
const credentials = { accessKeyId: 'l', secretAccessKey: 'l' };

let fauxqs: FauxqsServer;
let s3Endpoint: string;
let s3: S3Client;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  s3Endpoint = `http://127.0.0.1:${fauxqs.port}`;
  s3 = new S3Client({ endpoint: s3Endpoint, forcePathStyle: true, region: 'us-east-1', credentials });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
});
afterAll(async () => {
  s3.destroy();
  await fauxqs.stop();
});

const s3Settings: StorageSettings = {
  'demo-app': { type: 's3', bucket: BUCKET, key: 'url-path', prefix: '', incidentAfter: 0, probe: false },
};

let tables = 0;
let tasks = 0;

/** A table of its own, the worker that fills it, and a verifier of the given settings and S3 endpoint. */
async function world(settings: StorageSettings = s3Settings, opts: { endpoint?: string; timeoutMs?: number } = {}) {
  const tableName = `verify-${++tables}`;
  await createActiveTable(local.db.client, tableDefinition(tableName));
  const uploaded: TaskEvent[] = [];
  const store = new DynamoTaskStore({ client: local.db.client, tableName, verifications: true });
  const published: TaskEvent[] = [];
  // The verifier's own S3 client answers 403 for the objects marked refused, as the local stack's does.
  const previous = setClientHook((client) => {
    if (client.constructor.name === 'S3Client') enforceStoredAccess(client);
  });
  let storage: StorageChecks;
  try {
    storage = new StorageChecks(settings, {
      timeoutMs: opts.timeoutMs ?? 3000,
      clients: { region: 'us-east-1', credentials, endpoints: { s3: opts.endpoint ?? s3Endpoint } },
    });
  } finally {
    setClientHook(previous);
  }
  const deps = (client = local.db.client): VerifierDeps => ({
    store: new VerifierStore(new TableReader(client, tableName)),
    incidents: new IncidentStore(new TableReader(client, tableName)),
    storage,
    events: { publish: async (events) => void published.push(...events) },
    log,
    maxReceiveCount: 3,
  });
  /** The callbacks applied by the worker; the file.uploaded events it published, kept for the verifier. */
  const deliver = async (bodies: Body[]) => {
    const events = { publish: async (batch: readonly TaskEvent[]) => void uploaded.push(...batch) };
    for (const body of bodies) {
      const service = body.recordId ? 'recording' : 'screenshot';
      const res = await processBatch(sqsEvent([sqsRecord(service, body)]), { store, log, events });
      expect(res.batchItemFailures).toEqual([]);
    }
  };
  /** The verify queue's records of every file.uploaded published so far, as its raw delivery carries them. */
  const records = (receiveCount = 1): SQSRecord[] =>
    uploaded
      .filter((e) => e.type === 'file.uploaded')
      .map((e, i) => ({
        ...sqsRecord('recording', JSON.stringify(e), { receiveCount }),
        messageId: `verify-${tableName}-${i}-${receiveCount}`,
      }));
  const verify = async (receiveCount = 1, client = local.db.client) => {
    const res = await processVerifyBatch({ Records: records(receiveCount) }, deps(client));
    uploaded.length = 0;
    return res;
  };
  const filesOf = async (id: string) =>
    ((await store.getTaskPage({ id }, { limit: 100 }))?.task.files ?? []) as VerifiedFileView[];
  const counts = (id: string) => readVerificationCounts(new TableReader(local.db.client, tableName), 'demo-app', id);
  return { store, deliver, verify, records, filesOf, counts, published, deps };
}

/** A recording task: an end reporting `size` for the file, and its successful upload to `key` of the bucket. */
function recording(size: number) {
  const id = `rec-verify-${++tasks}`;
  const fileName = `${id}.mp4`;
  const end = { ...fixture('recording-3-end'), recordId: id, output: { fileName, fileSize: size } };
  const upload = {
    ...fixture('recording-4-upload-ok'),
    recordId: id,
    output: { fileName, fileUrl: `https://storage.example.com/recordings/${fileName}` },
  };
  return { id, fileName, key: `recordings/${fileName}`, bodies: [end, upload] as Body[] };
}

const put = (key: string, bytes: number, denied = false) =>
  s3.send(
    new PutObjectCommand({
      Bucket: BUCKET,
      Key: key,
      Body: Buffer.alloc(bytes),
      ...(denied ? { Metadata: { [DENIED_METADATA.key]: DENIED_METADATA.value } } : {}),
    }),
  );

test('a file stored as reported is verified: its stored size matches the size its end reported; its ETag', async () => {
  const w = await world();
  const t = recording(1234);
  await put(t.key, 1234);
  await w.deliver(t.bodies);
  expect((await w.filesOf(t.id))[0]!.verification).toEqual(expect.objectContaining({ state: 'pending' }));
  const res = await w.verify();
  expect(res.outcomes).toEqual(['verified']);
  const [file] = await w.filesOf(t.id);
  expect(file!.verification).toEqual({
    state: 'verified',
    checkedAt: expect.any(Number),
    size: 1234,
    sizeMatches: 'matches',
    etag: expect.stringMatching(/^"?[0-9a-f]{32}"?$/),
    // The SDK stores a checksum with each object by default.
    checksum: expect.stringMatching(/^(crc32|crc32c|crc64nvme|sha1|sha256):/),
    reason: null,
  });
  expect(await w.counts(t.id)).toMatchObject({ verified: 1, missing: 0 });
  expect(w.published).toEqual([]);
});

test('each storage fault gives its state; file.missing goes out once per file the storage does not hold', async () => {
  const w = await world();
  const missing = recording(100);
  const empty = recording(100);
  const truncated = recording(100);
  const forbidden = recording(100);
  await put(empty.key, 0);
  await put(truncated.key, 50);
  await put(forbidden.key, 100, true);
  for (const t of [missing, empty, truncated, forbidden]) await w.deliver(t.bodies);
  const res = await w.verify();
  expect(res.batchItemFailures).toEqual([]);
  const stateOf = async (t: { id: string }) => (await w.filesOf(t.id))[0]!.verification;
  expect(await stateOf(missing)).toMatchObject({ state: 'missing', reason: expect.stringContaining('404') });
  expect(await stateOf(empty)).toMatchObject({ state: 'empty', size: 0, sizeMatches: 'differs' });
  expect(await stateOf(truncated)).toMatchObject({ state: 'size_differs', size: 50, sizeMatches: 'differs' });
  // A 403 is no answer about the file: never read as there, never as missing.
  expect(await stateOf(forbidden)).toMatchObject({ state: 'unverifiable', reason: expect.stringContaining('403') });

  const missingEvents = w.published.filter((e) => e.type === 'file.missing');
  expect(missingEvents.map((e) => e.task.id).sort()).toEqual([missing.id, empty.id, truncated.id].sort());
  expect(missingEvents.every((e) => e.file?.upload === 'uploaded' && e.verification?.state !== 'verified')).toBe(true);
  // Checked again (the worker publishes file.uploaded again for a duplicate upload): the same id, the same time.
  await w.deliver([missing.bodies[1]!]);
  await w.verify();
  const again = w.published.filter((e) => e.task.id === missing.id);
  expect(new Set(again.map((e) => e.id)).size).toBe(1);
  expect(new Set(again.map((e) => e.occurredAt)).size).toBe(1);
});

test('a file put in storage after it was found missing is verified at its next check, and counted once', async () => {
  const w = await world();
  const t = recording(10);
  await w.deliver(t.bodies);
  await w.verify();
  expect(await w.counts(t.id)).toMatchObject({ missing: 1, verified: 0 });
  await put(t.key, 10);
  await w.deliver([t.bodies[1]!]);
  await w.verify();
  expect((await w.filesOf(t.id))[0]!.verification).toMatchObject({ state: 'verified', sizeMatches: 'matches' });
  expect(await w.counts(t.id)).toMatchObject({ missing: 0, verified: 1 });
});

test('an appKey without a storage setting has its files unverifiable, with that reason, never skipped', async () => {
  const w = await world({});
  const t = recording(10);
  await w.deliver(t.bodies);
  expect((await w.verify()).outcomes).toEqual(['unverifiable']);
  expect((await w.filesOf(t.id))[0]!.verification).toMatchObject({
    state: 'unverifiable',
    reason: expect.stringContaining('no storage setting'),
  });
  expect(w.published).toEqual([]);
});

test('a silent storage is asked again at the next receive; at the last receive, the file is unverifiable', async () => {
  // Nothing listens on port 1.
  const w = await world(s3Settings, { endpoint: 'http://127.0.0.1:1', timeoutMs: 500 });
  const t = recording(10);
  await w.deliver(t.bodies);
  const records = w.records(1);
  const first = await processVerifyBatch({ Records: records }, w.deps());
  expect(first.outcomes).toEqual(['retry']);
  expect(first.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
  expect((await w.filesOf(t.id))[0]!.verification?.state).toBe('pending');
  const last = await processVerifyBatch({ Records: w.records(3) }, w.deps());
  expect(last.outcomes).toEqual(['unverifiable']);
  expect(last.batchItemFailures).toEqual([]);
  expect((await w.filesOf(t.id))[0]!.verification).toMatchObject({
    state: 'unverifiable',
    reason: expect.stringContaining('did not answer'),
  });
});

test('a file whose later upload failed is not checked: it is no longer reported uploaded', async () => {
  const w = await world();
  const t = recording(10);
  await w.deliver(t.bodies);
  const failed = fixture('recording-4-upload-failed');
  const later = {
    ...failed,
    recordId: t.id,
    timestamp: t.bodies[1]!.timestamp + 1000,
    output: { ...failed.output, fileName: t.fileName },
  };
  await w.deliver([later]);
  expect((await w.verify()).outcomes).toEqual(['skipped']);
  expect((await w.filesOf(t.id))[0]!.verification).toBeNull();
});

test('an HTTP HEAD of the reported URL: 2xx with a length holds the file, 404 does not, 403 tells none', async () => {
  const status: Record<string, number> = { '/ok.mp4': 200, '/gone.mp4': 404, '/private.mp4': 403 };
  const server: Server = createServer((req, res) => {
    const code = status[req.url ?? ''] ?? 500;
    res.writeHead(code, code === 200 ? { 'content-length': '10', etag: '"abc"' } : {});
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const w = await world({ 'demo-app': { type: 'http', hosts: [], incidentAfter: 0 } });
    const states: string[] = [];
    for (const path of Object.keys(status)) {
      const t = recording(10);
      const upload = { ...t.bodies[1]!, output: { fileName: t.fileName, fileUrl: `${base}${path}` } };
      await w.deliver([t.bodies[0]!, upload]);
      await w.verify();
      states.push((await w.filesOf(t.id))[0]!.verification!.state);
    }
    expect(states).toEqual(['verified', 'missing', 'unverifiable']);
  } finally {
    server.close();
  }
});

test('the counts of checks stay exact when a verifier dies at any of its writes, landed or not', async () => {
  for (const when of ['before', 'after'] as const) {
    for (let failWrite = 1; failWrite <= 8; failWrite++) {
      const w = await world();
      const a = recording(10);
      const b = recording(10);
      await put(a.key, 10);
      await w.deliver([...a.bodies, ...b.bodies]);
      // A first check (a verified, b missing), then b found stored: every state moves once more.
      await w.verify(1, dyingClient(local.db.client, { failWrite, when }).client);
      await put(b.key, 10);
      await w.deliver([a.bodies[1]!, b.bodies[1]!]);
      await w.verify(1, dyingClient(local.db.client, { failWrite, when }).client);
      // The messages come back (the batch failed) and are checked by a verifier that lives.
      await w.deliver([a.bodies[1]!, b.bodies[1]!]);
      await w.verify(2);
      const states = await Promise.all([a, b].map(async (t) => (await w.filesOf(t.id))[0]!.verification!.state));
      expect(states).toEqual(['verified', 'verified']);
      for (const t of [a, b]) {
        const counts = await w.counts(t.id);
        expect({ failWrite, when, counts }).toEqual({
          failWrite,
          when,
          counts: Object.fromEntries(CHECKED_STATES.map((s) => [s, s === 'verified' ? 1 : 0])),
        });
      }
    }
  }
});

test('checks of one file at the same time count it once', async () => {
  const w = await world();
  const t = recording(10);
  await w.deliver(t.bodies);
  await w.deliver([t.bodies[1]!, t.bodies[1]!, t.bodies[1]!]);
  const records = w.records(1);
  expect(records.length).toBeGreaterThanOrEqual(3);
  await processVerifyBatch({ Records: records }, { ...w.deps(), concurrency: records.length });
  expect(await w.counts(t.id)).toMatchObject({ missing: 1, verified: 0, unverifiable: 0 });
});

test('tasks list and the read API filter by verification state: a missing file, a pending one', async () => {
  const w = await world();
  const checked = recording(10);
  const waiting = recording(10);
  await w.deliver(checked.bodies);
  await w.verify();
  await w.deliver(waiting.bodies);
  const ids = async (verification: 'missing' | 'pending' | 'verified') => {
    const out: string[] = [];
    for await (const s of w.store.listTasks({ appKey: 'demo-app', verification })) out.push(s.id);
    return out;
  };
  expect(await ids('missing')).toEqual([checked.id]);
  expect(await ids('pending')).toEqual([waiting.id]);
  expect(await ids('verified')).toEqual([]);
});
