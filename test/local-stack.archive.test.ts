// The archive on the local stack: the worker, run from the template with its role, archives every delivery it
// stores through the Firehose stand-in into fauxqs's S3, where the table `raw` (devkit/local/archive.ts, DuckDB)
// reads one row per delivery, with its verdict and what the worker made of it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { banner } from '../cli/commands/dev.ts';
import { colorsFor } from '../cli/format.ts';
import { copyArchive, queryLocalArchive } from '../devkit/local/archive.ts';
import { LOCAL_CREDENTIALS, LOCAL_STAGE, SERVICE } from '../devkit/local/deployed-settings.ts';
import { type LocalStack, startLocalStack } from '../devkit/local/stack.ts';
import { archivedSentence } from '../lib/domain/archived-callbacks.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import { runCliHere } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';
import { conformance } from './support/openapi.ts';

let cwd: string;
let stack: LocalStack;
let s3: S3Client;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-archive-'));
  // Report mode: a callback whose signature does not verify is set aside rather than refused, and archived.
  stack = await startLocalStack({ port: 0, cwd, memory: true, quiet: true, signatureMode: 'report', env: {} });
  s3 = new S3Client({
    endpoint: stack.info.sqsEndpoint,
    region: stack.info.region,
    credentials: LOCAL_CREDENTIALS,
    forcePathStyle: true,
  });
});

afterAll(async () => {
  s3?.destroy();
  await stack?.stop();
  await rm(cwd, { recursive: true, force: true });
});

async function post(body: object, secret = 'demo-secret'): Promise<void> {
  const nonce = `n${Math.random().toString(36).slice(2)}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const res = await fetch(`${stack.url}/callbacks/recording`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'RC-Nonce': nonce,
      'RC-Timestamp': timestamp,
      'RC-Signature': computeSignature(secret, nonce, timestamp),
    },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
}

/** `sql` against `raw`, over a fresh copy of what the stack archived so far. */
async function query(sql: string) {
  const dir = await mkdtemp(join(cwd, 'q-'));
  await copyArchive(s3, stack.info.archive!.bucket, stack.info.archive!.prefix, dir);
  return (await queryLocalArchive(join(dir, stack.info.archive!.prefix), sql)).rows;
}

test('the stack names its archive: the stream the worker writes to, the bucket and prefix the stand-in fills', () => {
  expect(stack.info.archive).toEqual({ bucket: expect.any(String), prefix: 'raw/' });
  expect(stack.archive?.stream).toEqual({ name: `${SERVICE}-${LOCAL_STAGE}-archive`, ...stack.info.archive });
  expect(stack.settings.functions.find((f) => f.key === 'worker')!.environment.ARCHIVE_STREAM).toBe(
    `${SERVICE}-${LOCAL_STAGE}-archive`,
  );
  // `callbacks dev` says where the archive is.
  const line = banner(stack, { retryDelay: 1000 }, colorsFor({ color: false }))
    .split('\n')
    .find((l) => l.trimStart().startsWith('archive'));
  expect(line).toContain(
    `stream ${SERVICE}-${LOCAL_STAGE}-archive at ${stack.archive!.endpoint} -> s3://${stack.info.archive!.bucket}/raw/`,
  );
});

test('callbacks sent through the stack are rows of raw, one per delivery, with their verdicts', async () => {
  const id = `rec-archive-${Date.now().toString(36)}`;
  const at = Date.now() - 60_000;
  const base = {
    ...{ appKey: 'demo-app', recordId: id, roomId: 'room-a', sessionId: 's-a', userId: '', mode: 3 },
    ...{ code: 200, errorMessage: 'success' },
  };
  const fileName = `s-a_room-a_${at}.mp4`;
  const start = { ...base, timestamp: at, type: 1, output: { fileName } };
  await post(start);
  await post({ ...base, timestamp: at + 1000, type: 2, output: { fileName, fileSize: 1000 } });
  await post({ ...base, timestamp: at + 2000, type: 3, output: { fileName } });
  // The platform sends the start again (signed anew): one more delivery, found a duplicate.
  await post(start);
  // Signed with a wrong secret: accepted in report mode, set aside.
  await post({ ...base, timestamp: at + 3000, type: 2, output: { fileName: `x-${fileName}`, fileSize: 5 } }, 'wrong');

  const rows = await eventually(
    'five deliveries archived',
    () =>
      query(
        `SELECT type, verdict, outcome, reason, service, app_key, delivery_id FROM raw WHERE task_id = '${id}' ` +
          'ORDER BY type, outcome, verdict',
      ),
    (r) => r.length >= 5,
  );
  expect(rows.map((r) => [r.type, r.verdict, r.outcome, r.reason])).toEqual([
    [1, 'valid', 'applied', null],
    [1, 'valid', 'duplicate', null],
    [2, 'valid', 'applied', null],
    [2, 'invalid', 'quarantined', 'invalid_signature'],
    [3, 'valid', 'applied', null],
  ]);
  expect(new Set(rows.map((r) => r.delivery_id)).size).toBe(5);
  expect(new Set(rows.map((r) => `${r.service} ${r.app_key}`))).toEqual(new Set(['recording demo-app']));
  // Under the IAM checks: the worker's PutRecordBatch was allowed by its role's statement, on the stream alone.
  expect(stack.iam.denials).toEqual([]);
  expect([...stack.iam.grants].filter(([key]) => key.includes('firehose:'))).toEqual([
    [
      `${SERVICE}-${LOCAL_STAGE}-worker firehose:PutRecordBatch ` +
        `arn:aws:firehose:us-east-1:000000000000:deliverystream/${SERVICE}-${LOCAL_STAGE}-archive`,
      'WorkerRole/worker#ArchiveCallbacks',
    ],
  ]);
});

test("a task begun before the table's retention: its events name the archive, whose query lists it", async () => {
  const id = `rec-old-${Date.now().toString(36)}`;
  const at = Date.now() - 10 * 86_400_000;
  const start = {
    ...{ appKey: 'demo-app', recordId: id, roomId: 'room-o', sessionId: 's-o', userId: '', mode: 3 },
    ...{ code: 200, errorMessage: 'success', timestamp: at, type: 1, output: { fileName: `s-o_room-o_${at}.mp4` } },
  };
  await post(start);
  const page = (await eventually(
    `the events of ${id}`,
    async () => {
      const res = await fetch(`${stack.url}/tasks/${id}/events`);
      return res.status === 200 ? ((await res.json()) as Record<string, any>) : null;
    },
    (p) => p !== null && p.events.length === 1,
  )) as Record<string, any>;
  expect(conformance('GET /tasks/{id}/events', 200, page)).toEqual([]);
  // The table keeps 7 days (the template's rawRetentionDays): the task began 10 days ago.
  expect(Date.parse(page.archived.before)).toBeGreaterThan(Date.now() - 7 * 86_400_000 - 60_000);
  // Its query, run as `callbacks archive query` runs it locally, lists the task's history from the archive.
  const rows = await eventually(
    'the archived start',
    () => query(page.archived.query),
    (r) => r.length === 1,
  );
  expect(rows.map((r) => [r.type, r.outcome, r.verdict, JSON.parse(String(r.body)).recordId])).toEqual([
    [1, 'applied', 'valid', id],
  ]);
  // `callbacks tasks events` says it beside the callbacks it lists.
  const run = await runCliHere(['tasks', 'events', id], { cwd });
  expect(run.code).toBe(0);
  // (Its clock read a moment later: its own `before`.)
  const said = run.stdout.replace(/\s+/g, ' ');
  const before = /Callbacks received before (\S+) are/.exec(said)?.[1];
  expect(said).toContain(archivedSentence({ ...page.archived, before }).replace(/\s+/g, ' '));
});
