// Storage incidents (docs/verification.md, "Storage incidents") through the real worker, verifier and store
// (dynalite) and the storage's S3 (fauxqs): the worker applies failed and successful uploads and publishes their
// events, the verifier keeps them as its queue would deliver them, and its sweep, at a clock of the test's, opens
// one incident per storage and outage with its first failure, files affected, earliest purge and exact switch-by,
// resolves it once uploads succeed again or every file is uploaded or lost, and publishes each once whatever
// crashes; a probe says what the storage answers.
import { readFileSync } from 'node:fs';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs, type FauxqsServer } from 'fauxqs';
import { setClientHook } from '../lib/aws/clients.ts';
import { IncidentStore } from '../lib/aws/dynamo/storage/storage-incidents.ts';
import { tableDefinition } from '../lib/aws/dynamo/table/table.ts';
import { TableReader } from '../lib/aws/dynamo/table/table-client.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { VerifierStore } from '../lib/aws/dynamo/storage/verifier-store.ts';
import { probeStorage } from '../lib/aws/storage/probe.ts';
import { StorageChecks } from '../lib/aws/storage/storage-checks.ts';
import type { S3Setting, StorageSettings } from '../lib/config/storage-settings.ts';
import { STORAGE_CHANGE_DELAY_MS } from '../lib/domain/deadlines.ts';
import type { StorageEvent } from '../lib/domain/storage-incidents.ts';
import type { TaskEvent } from '../lib/domain/task-events.ts';
import { FILE_HOLD_MS } from '../lib/platform/delivery.ts';
import { createLogger } from '../lib/log.ts';
import { sweepIncidents } from '../lib/verifier/incidents.ts';
import { processVerifyBatch } from '../lib/verifier/verify-batch.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { createActiveTable } from '../devkit/local/dynamo.ts';
import { enforceIam, IamSession } from '../devkit/local/iam/enforce.ts';
import { useQuietDynamo } from './support/quiet-dynamo.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';

type Body = Record<string, any>;
const local = useQuietDynamo();
const log = createLogger('test');
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;
const BUCKET = 'incident-test-files';
const STORAGE = `s3://${BUCKET}`;
const credentials = { accessKeyId: 'l', secretAccessKey: 'l' };
const MIN = 60_000;
/** Platform time of the tests' outages. */
const T0 = 1_763_800_000_000;

let fauxqs: FauxqsServer;
let endpoint: string;

beforeAll(async () => {
  fauxqs = await startFauxqs({ port: 0, logger: false });
  endpoint = `http://127.0.0.1:${fauxqs.port}`;
  const s3 = new S3Client({ endpoint, forcePathStyle: true, region: 'us-east-1', credentials });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  s3.destroy();
});
afterAll(() => fauxqs.stop());

const setting = (over: Partial<S3Setting> = {}): StorageSettings => ({
  'demo-app': { type: 's3', bucket: BUCKET, key: 'url-path', prefix: '', incidentAfter: 0, probe: true, ...over },
});

let tables = 0;
let tasks = 0;

/** A table of its own, the worker, and a verifier whose events (task and storage) the test keeps. */
async function world(settings: StorageSettings = setting()) {
  const tableName = `incidents-${++tables}`;
  await createActiveTable(local.db.client, tableDefinition(tableName));
  const store = new DynamoTaskStore({ client: local.db.client, tableName });
  const table = new TableReader(local.db.client, tableName);
  const published: TaskEvent[] = [];
  const storageEvents: StorageEvent[] = [];
  const storage = new StorageChecks(settings, {
    timeoutMs: 2000,
    clients: { region: 'us-east-1', credentials, endpoints: { s3: endpoint } },
  });
  let refuse = 0;
  const deps = {
    store: new VerifierStore(table),
    incidents: new IncidentStore(table),
    storage,
    log,
    maxReceiveCount: 3,
    storageEvents: {
      publish: async (events: readonly StorageEvent[]) => {
        if (refuse > 0) {
          refuse -= 1;
          throw new Error('SNS refused the publish');
        }
        storageEvents.push(...events);
      },
    },
  };
  const delivered: TaskEvent[] = [];
  /** The callbacks applied by the worker; their file events wait for `handOver`. */
  const apply = async (...bodies: Body[]) => {
    const events = { publish: async (batch: readonly TaskEvent[]) => void delivered.push(...batch) };
    for (const body of bodies) {
      const res = await processBatch(sqsEvent([sqsRecord('recording', body)]), { store, log, events });
      expect(res.batchItemFailures).toEqual([]);
    }
  };
  /** The file events published so far, handed to the verifier as its queue would. */
  const handOver = async () => {
    const records = delivered
      .filter((e) => e.type === 'file.uploaded' || e.type === 'file.upload_failed')
      .map((e) => sqsRecord('recording', JSON.stringify(e)));
    published.push(...delivered.splice(0));
    const res = await processVerifyBatch({ Records: records }, deps);
    expect(res.batchItemFailures).toEqual([]);
  };
  /** The callbacks applied by the worker, and their file events handed to the verifier. */
  const deliver = async (...bodies: Body[]) => {
    await apply(...bodies);
    await handOver();
  };
  return {
    apply,
    deliver,
    sweep: (now: number) => sweepIncidents(now, deps),
    storageEvents,
    incidents: () => deps.incidents.incidents('demo-app', STORAGE),
    refuseNextPublish: () => {
      refuse = 1;
    },
    deps,
  };
}

/** A recording's file: its upload failing at `at` (and every 10 s after, as the platform retries), or succeeding. */
function file() {
  const id = `rec-incident-${++tasks}`;
  const fileName = `${id}.mp4`;
  const upload = (at: number, ok: boolean): Body => {
    const base = fixture(ok ? 'recording-4-upload-ok' : 'recording-4-upload-failed');
    const url = ok ? `https://storage.example.com/recordings/${fileName}` : '';
    return { ...base, recordId: id, timestamp: at, output: { fileName, fileUrl: url } };
  };
  return { id, fileName, fails: (at: number) => upload(at, false), succeeds: (at: number) => upload(at, true) };
}

test('failures of a storage open one incident at the next sweep: first failure, files, exact switch-by', async () => {
  const w = await world();
  const [a, b, c] = [file(), file(), file()];
  await w.deliver(b.fails(T0 + 20_000), a.fails(T0 + 5_000), c.fails(T0 + 40_000));
  const first = await w.sweep(T0 + 60_000);
  expect(first).toMatchObject({ storages: 1, opened: 1, resolved: 0 });
  expect(w.storageEvents.map((e) => e.type)).toEqual(['storage.incident_opened']);
  const opened = w.storageEvents[0]!.incident;
  expect(opened).toMatchObject({
    appKey: 'demo-app',
    storage: STORAGE,
    firstFailure: { taskId: a.id, fileName: a.fileName, at: T0 + 5_000, purgeAt: T0 + 5_000 + FILE_HOLD_MS },
    filesAffected: 3,
    earliestPurgeAt: T0 + 5_000 + FILE_HOLD_MS,
    switchBy: T0 + 5_000 + FILE_HOLD_MS - STORAGE_CHANGE_DELAY_MS,
    openedAt: T0 + 60_000,
    resolvedAt: null,
    probe: { result: 'ok' },
  });
  // The platform retries: the same files fail again (their events come again), a fourth one fails.
  const d = file();
  await w.deliver(a.fails(T0 + 15_000), b.fails(T0 + 20_000), d.fails(T0 + 50_000));
  expect(await w.sweep(T0 + 120_000)).toMatchObject({ opened: 0, open: 1 });
  expect(w.storageEvents).toHaveLength(1);
  expect(await w.incidents()).toEqual([expect.objectContaining({ id: opened.id, filesAffected: 4 })]);
});

test('uploads that succeed again resolve it at the next sweep; a late failure of the outage opens none', async () => {
  const w = await world();
  const [a, b] = [file(), file()];
  await w.deliver(a.fails(T0), b.fails(T0 + 1_000));
  await w.sweep(T0 + 30_000);
  await w.deliver(a.succeeds(T0 + 40 * MIN));
  expect(await w.sweep(T0 + 41 * MIN)).toMatchObject({ resolved: 1 });
  expect(w.storageEvents.map((e) => [e.type, e.incident.resolution])).toEqual([
    ['storage.incident_opened', null],
    ['storage.incident_resolved', 'uploads_succeed'],
  ]);
  const [opened, resolved] = w.storageEvents;
  expect(resolved!.incident.id).toBe(opened!.incident.id);
  expect(resolved!.incident.resolvedAt).toBe(T0 + 41 * MIN);
  // A failure of the resolved outage, delivered late, belongs to it.
  await w.deliver(file().fails(T0 + 2_000));
  await w.sweep(T0 + 42 * MIN);
  expect(w.storageEvents).toHaveLength(2);
  // A failure after it is a new outage: a new incident.
  await w.deliver(file().fails(T0 + 50 * MIN));
  await w.sweep(T0 + 51 * MIN);
  expect(w.storageEvents.map((e) => e.type)).toEqual([
    'storage.incident_opened',
    'storage.incident_resolved',
    'storage.incident_opened',
  ]);
  expect(w.storageEvents[2]!.incident.id).not.toBe(opened!.incident.id);
});

test('failures without a URL and the success ending them are one storage when no S3 setting names it', async () => {
  // The failed uploads report no URL, the success its file's: both are the appKey's storage, and the success resolves.
  const w = await world({});
  const [a, b] = [file(), file()];
  await w.deliver(a.fails(T0), b.fails(T0 + 1_000));
  await w.sweep(T0 + 30_000);
  await w.deliver(b.succeeds(T0 + 20 * MIN));
  await w.sweep(T0 + 21 * MIN);
  expect(w.storageEvents.map((e) => [e.type, e.incident.storage, e.incident.resolution])).toEqual([
    ['storage.incident_opened', 'appKey demo-app', null],
    ['storage.incident_resolved', 'appKey demo-app', 'uploads_succeed'],
  ]);
  expect(w.storageEvents[0]!.incident).toMatchObject({ filesAffected: 2, probe: null });
});

test('a failure delivered after its incident resolved on its files uploaded, but older, opens none', async () => {
  // The files' uploads are in the table before the verifier is told of them: the sweep resolves on them, and a
  // failure of the same outage delivered late belongs to the incident, not to a new one.
  const w = await world();
  const [a, b, c] = [file(), file(), file()];
  await w.deliver(a.fails(T0), b.fails(T0 + 1_000));
  await w.sweep(T0 + 30_000);
  await w.apply(a.succeeds(T0 + 40 * MIN), b.succeeds(T0 + 40 * MIN + 1_000));
  await w.sweep(T0 + 41 * MIN);
  await w.deliver(c.fails(T0 + 20 * MIN));
  await w.sweep(T0 + 42 * MIN);
  expect(w.storageEvents.map((e) => [e.type, e.incident.resolution])).toEqual([
    ['storage.incident_opened', null],
    ['storage.incident_resolved', 'uploads_succeed'],
  ]);
});

test('an incident whose files are all uploaded or lost is resolved, whatever order the successes came in', async () => {
  const w = await world();
  const [a, b] = [file(), file()];
  // a's retry succeeded before b's first failure: no later success, but a is uploaded.
  await w.deliver(a.fails(T0), b.fails(T0 + 1_000), a.succeeds(T0 + 500));
  await w.sweep(T0 + 30_000);
  await w.sweep(T0 + 11 * MIN);
  expect(w.storageEvents.map((e) => e.type)).toEqual(['storage.incident_opened']);
  // b is lost once its purge has passed: every file is uploaded or lost.
  await w.sweep(T0 + 1_000 + FILE_HOLD_MS);
  expect(w.storageEvents.map((e) => [e.type, e.incident.resolution])).toEqual([
    ['storage.incident_opened', null],
    ['storage.incident_resolved', 'files_uploaded_or_lost'],
  ]);
});

test('incidentAfter: a failure the next retry mends makes no incident; one that lasts does', async () => {
  const w = await world(setting({ incidentAfter: MIN }));
  const a = file();
  await w.deliver(a.fails(T0), a.succeeds(T0 + 10_000));
  await w.sweep(T0 + 30_000);
  await w.sweep(T0 + 5 * MIN);
  expect(w.storageEvents).toEqual([]);
  const b = file();
  await w.deliver(b.fails(T0 + 10 * MIN), b.fails(T0 + 10 * MIN + 10_000));
  // Not a minute yet (receiver's clock), then failing for three.
  await w.sweep(T0 + 10 * MIN + 20_000);
  expect(w.storageEvents).toEqual([]);
  await w.sweep(T0 + 13 * MIN);
  expect(w.storageEvents.map((e) => e.type)).toEqual(['storage.incident_opened']);
  expect(w.storageEvents[0]!.incident.firstFailure.taskId).toBe(b.id);
});

test('a sweep whose publish fails opens once: the next sweep publishes the opening with the same id', async () => {
  const w = await world();
  await w.deliver(file().fails(T0));
  w.refuseNextPublish();
  expect(await w.sweep(T0 + 30_000)).toMatchObject({ failed: 1 });
  expect(w.storageEvents).toEqual([]);
  await w.sweep(T0 + 60_000);
  await w.sweep(T0 + 90_000);
  expect(w.storageEvents.map((e) => e.type)).toEqual(['storage.incident_opened']);
  expect(w.storageEvents[0]!.incident.openedAt).toBe(T0 + 30_000);
});

test('two sweeps at once open the incident once', async () => {
  const w = await world();
  await w.deliver(file().fails(T0), file().fails(T0 + 1));
  await Promise.all([w.sweep(T0 + 30_000), w.sweep(T0 + 30_000), w.sweep(T0 + 30_000)]);
  expect(w.storageEvents.map((e) => e.type)).toEqual(['storage.incident_opened']);
});

test('a probe says what the storage answers: ok, no such bucket, access denied, no answer', async () => {
  const s3 = (at = endpoint) =>
    new S3Client({ endpoint: at, forcePathStyle: true, region: 'us-east-1', credentials, maxAttempts: 1 });
  const of = (bucket: string): S3Setting => ({
    type: 's3',
    bucket,
    key: 'url-path',
    prefix: '',
    incidentAfter: 0,
    probe: true,
  });
  expect(await probeStorage(s3(), of(BUCKET))).toMatchObject({
    result: 'ok',
    message: 'bucket reachable, canary written, read back and deleted',
  });
  expect(await probeStorage(s3(), of('no-such-bucket-here'))).toMatchObject({ result: 'not_found' });
  // A role that may look at the bucket but not write its canary, as the local stack enforces it.
  const session = new IamSession({ region: 'us-east-1', accountId: '000000000000' });
  session.setPrincipal('verifier', {
    roleName: 'verifier',
    sessionName: 'test',
    statements: [
      {
        statement: { Effect: 'Allow', Action: ['s3:ListBucket', 's3:GetObject'], Resource: '*' },
        source: 'test',
      },
    ],
  });
  const refused = s3();
  enforceIam(refused, 'verifier', session);
  expect(await probeStorage(refused, of(BUCKET))).toMatchObject({
    result: 'forbidden',
    message: expect.stringContaining('writing the canary'),
  });
  // Nothing listens on port 1.
  expect(await probeStorage(s3('http://127.0.0.1:1'), of(BUCKET))).toMatchObject({ result: 'unreachable' });
  setClientHook(undefined);
});
