// The local stack's life cycle: its data outlives a restart (tasks in dynalite, queued callbacks in
// fauxqs), the stack file comes and goes with it, and it refuses what it cannot do well.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startFauxqs } from 'fauxqs';
import { openTarget } from '../devkit/local/target.ts';
import { taskGroupId } from '../lib/fifo-ids.ts';
import { enqueueCallback } from '../lib/ingest/enqueue.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { LOCAL_CREDENTIALS } from '../devkit/local/deployed-settings.ts';
import { computeSignature } from '../lib/platform/signing.ts';
import { eventually } from './support/eventually.ts';
import { createLogger, setLogSink } from '../lib/log.ts';

let cwd: string;
const stacks: LocalStack[] = [];

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-stack-'));
});
afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()));
  await rm(cwd, { recursive: true, force: true });
});

async function start(opts: Parameters<typeof startLocalStack>[0] = {}) {
  const stack = await startLocalStack({ port: 0, cwd, quiet: true, ...opts });
  stacks.push(stack);
  return stack;
}

const port = (url: string) => Number(new URL(url).port);

function startBody(recordId: string) {
  return {
    timestamp: Date.now() - 1000,
    type: 1,
    appKey: 'demo-app',
    recordId,
    roomId: 'room-1',
    sessionId: 'session-1',
    userId: '',
    mode: 3,
    extra: '',
    code: 200,
    errorMessage: 'success',
    config: { mixLayout: 2 },
    output: { fileName: `session-1_room-1_${Date.now()}.mp4` },
  };
}

async function postSigned(url: string, body: unknown, secret = 'demo-secret'): Promise<Response> {
  const nonce = `n${Math.random().toString(36).slice(2)}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  return fetch(`${url}/callbacks/recording`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'RC-Nonce': nonce,
      'RC-Timestamp': timestamp,
      'RC-Signature': computeSignature(secret, nonce, timestamp),
    },
    body: JSON.stringify(body),
  });
}

async function waitForTask(id: string, folder = cwd) {
  const target = await openTarget({ cwd: folder, env: {} });
  try {
    return await eventually(`task ${id}`, () => target.tasks.getTask(id), undefined, { timeoutMs: 10_000 });
  } finally {
    await target.close();
  }
}

test('tasks and queued callbacks survive a restart on the same data folder', async () => {
  const first = await start({ dataDir: 'data' });
  expect(first.info.dataDir).toBe(join(cwd, 'data'));
  expect(JSON.parse(await readFile(join(cwd, '.data', 'stack.json'), 'utf8'))).toEqual(first.info);

  const res = await postSigned(first.url, startBody('rec-persist-1'));
  expect(res.status).toBe(200);
  expect((await waitForTask('rec-persist-1'))?.status).toBe('recording');

  // A second stack for the same folder is refused while the first runs.
  await expect(startLocalStack({ port: 0, cwd, memory: true, quiet: true })).rejects.toThrow(/already running/);

  await first.stop();
  expect(existsSync(join(cwd, '.data', 'stack.json'))).toBe(false);

  // While the stack is down, a callback that was acknowledged but not yet applied sits in the persisted
  // queue (written here straight into fauxqs' store, as the ingest would have).
  const fauxqs = await startFauxqs({ port: 0, logger: false, dataDir: join(cwd, 'data', 'sqs') });
  const sqs = new SQSClient({
    endpoint: `http://127.0.0.1:${fauxqs.port}`,
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
  });
  const queueUrl = `http://127.0.0.1:${fauxqs.port}/${new URL(first.info.queueUrl).pathname.slice(1)}`;
  const body = JSON.stringify(startBody('rec-persist-2'));
  await enqueueCallback(
    sqs,
    queueUrl,
    {
      body,
      service: 'recording',
      appKey: 'demo-app',
      receivedAt: Date.now(),
      requestId: null,
      verdict: 'valid',
      mode: 'enforce',
      replayKey: null,
    },
    { groupId: taskGroupId('demo-app', 'rec-persist-2'), deduplicationId: 'rec-persist-2' },
  );
  sqs.destroy();
  await fauxqs.stop();

  // Each stack builds its own handlers for its own emulators: the restart takes any free ports.
  const second = await start({ dataDir: 'data' });
  expect(port(second.info.dynamoEndpoint)).not.toBe(0);
  expect((await waitForTask('rec-persist-1'))?.status).toBe('recording');
  const queued = await waitForTask('rec-persist-2');
  expect(queued?.status).toBe('recording');
  expect(queued?.eventCount).toBe(1);

  await second.stop();
});

test('two stacks with other secrets run side by side in one process, each on its own emulators', async () => {
  const other = await mkdtemp(join(tmpdir(), 'callbacks-stack-other-'));
  const demo = await start({ memory: true });
  const beside = await startLocalStack({
    port: 0,
    cwd: other,
    memory: true,
    quiet: true,
    secrets: { 'demo-app': ['other-secret'] },
    sweepLookBack: '2h',
  });
  try {
    expect(beside.info.dynamoEndpoint).not.toBe(demo.info.dynamoEndpoint);
    // Its sweeper's first sweep reads back as far as it was told (a day by default).
    const sweptAt = Date.now();
    const [sweep] = (await beside.runSchedules()) as Array<{ from: number; to: number }>;
    expect(sweptAt - sweep!.from).toBeGreaterThan(2 * 3_600_000 - 1);
    expect(sweptAt - sweep!.from).toBeLessThanOrEqual(2 * 3_600_000 + 5 * 60_000);
    // Each ingest holds its own stack's secret (read through its own secrets extension): the other's is refused.
    expect((await postSigned(demo.url, startBody('rec-side-1'), 'other-secret')).status).toBe(401);
    expect((await postSigned(beside.url, startBody('rec-side-1'), 'demo-secret')).status).toBe(401);
    expect((await postSigned(demo.url, startBody('rec-side-demo'))).status).toBe(200);
    expect((await postSigned(beside.url, startBody('rec-side-other'), 'other-secret')).status).toBe(200);
    // Each worker writes to its own stack's table, and only there.
    expect((await waitForTask('rec-side-demo'))?.status).toBe('recording');
    expect((await waitForTask('rec-side-other', other))?.status).toBe('recording');
    const target = await openTarget({ cwd: other, env: {} });
    try {
      expect(await target.tasks.getTask('rec-side-demo')).toBeNull();
    } finally {
      await target.close();
    }
  } finally {
    await beside.stop();
    await demo.stop();
    await rm(other, { recursive: true, force: true });
  }
});

test('quiet stacks stopped in another order than they started let the lines of the one still running out', async () => {
  const lines: string[] = [];
  const restore = setLogSink((line) => lines.push(line));
  const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'callbacks-stack-quiet-'))));
  try {
    const first = await startLocalStack({ port: 0, cwd: dirs[0]!, memory: true, quiet: true });
    const second = await startLocalStack({ port: 0, cwd: dirs[1]!, memory: true, quiet: true });
    // The first stops while the second runs: the second stays quiet.
    await first.stop();
    expect((await postSigned(second.url, startBody('rec-quiet-1'))).status).toBe(200);
    expect((await waitForTask('rec-quiet-1', dirs[1]))?.status).toBe('recording');
    await second.stop();
    expect(lines).toEqual([]);
    // The last one stopped, the sink in place before the first started is back.
    createLogger('test').info('after_the_stacks');
    expect(lines.map((l) => JSON.parse(l).event)).toEqual(['after_the_stacks']);
  } finally {
    setLogSink(restore);
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
});

test('unusable CALLBACK_SECRETS stop the start with a message that shows no secret', async () => {
  const other = await mkdtemp(join(tmpdir(), 'callbacks-stack-secrets-'));
  try {
    const attempt = startLocalStack({
      port: 0,
      cwd: other,
      memory: true,
      quiet: true,
      env: { CALLBACK_SECRETS: '{"app":["s3cr3t"' },
    });
    await expect(attempt).rejects.toThrow('CALLBACK_SECRETS is not valid JSON.');
    await expect(attempt).rejects.not.toThrow(/s3cr3t/);
    await expect(
      startLocalStack({ cwd: other, memory: true, quiet: true, signatureMode: 'strict' as never }),
    ).rejects.toThrow(/enforce, report or off/);
  } finally {
    await rm(other, { recursive: true, force: true });
  }
});
