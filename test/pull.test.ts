// `callbacks pull`: a deployed task's raw callbacks copied into the local stack. The stage is stood in for by
// a table of its own name in a second DynamoDB emulator, reached the way `--stage` reaches a stage (its
// table name, the SDK's endpoint from AWS_ENDPOINT_URL_DYNAMODB); the local stack runs in process.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pullTask, type PullOptions } from '../cli/commands/pull.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { DynamoTaskStore } from '../lib/aws/dynamo/read/task-store.ts';
import { generateRun } from '../devkit/emulator/lifecycles.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { startDynamo, type LocalDynamo } from '../devkit/local/dynamo.ts';
import { LOCAL_CREDENTIALS, resourceNames } from '../devkit/local/deployed-settings.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { processBatch } from '../lib/worker/process-batch.ts';
import { sqsEvent, sqsRecord } from './support/sqs-events.ts';
import { eventually } from './support/eventually.ts';

const STAGE = 'prod';
let dir: string;
let stack: LocalStack;
let stageDb: LocalDynamo;
let stage: Target;
let local: Target;
let restoreSink: ReturnType<typeof setLogSink>;
const savedEnv: Record<string, string | undefined> = {};
const opts: PullOptions = { timeout: 10_000 };

/** Fills the stage's table as its worker would: one generated task per call, its id. */
async function stageTask(appKey: string, seed: string, failUploads = false): Promise<string> {
  const store = new DynamoTaskStore({ client: stageDb.client, tableName: stageDb.tableName });
  const run = generateRun({
    seed,
    recordings: 1,
    screenshots: 0,
    appKey,
    compress: 3600,
    outage: failUploads ? 1 : 0,
    giveUp: failUploads ? 1 : 0,
  });
  const records = run.sends.map((s) => sqsRecord(s.service, JSON.stringify(s.body), { receivedAt: Date.now() }));
  const { outcomes } = await processBatch(sqsEvent(records), { store, log: createLogger('worker') });
  expect(outcomes.every((o) => o === 'applied')).toBe(true);
  return run.sends[0]!.taskId;
}

/** The local task once the worker applied `events` callbacks to it. */
async function localTask(id: string, events: number) {
  return (await eventually(
    `local task ${id} with ${events} events`,
    () => local.tasks.getTask(id),
    (task) => task?.eventCount === events,
  ))!;
}

function restoreEnv(): void {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-pull-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
  stageDb = await startDynamo(resourceNames(STAGE).table);
  // What --stage resolves to, its endpoint overridden as the SDK allows for any deployed target. A client
  // resolves AWS_ENDPOINT_URL_DYNAMODB at its first request and keeps it: the variable is the stage's only
  // for that request, the local stack's again for the handlers, which read it as theirs (handlers.ts).
  const env = {
    AWS_ENDPOINT_URL_DYNAMODB: stageDb.endpoint,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
  };
  for (const [name, value] of Object.entries(env)) {
    savedEnv[name] = process.env[name];
    process.env[name] = value;
  }
  try {
    stage = await openTarget({ stage: STAGE, region: 'us-east-1', env: {} });
    expect(await stage.tasks.getTask('no-such-task')).toBeNull();
  } finally {
    restoreEnv();
  }
  local = await openTarget({ cwd: dir, env: {} });
}, 60_000);

afterAll(async () => {
  await stage?.close();
  await local?.close();
  await stageDb?.stop();
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

describe('callbacks pull', () => {
  test("the stage's task is rebuilt locally from its raw callbacks, byte for byte", async () => {
    const id = await stageTask('demo-app', 'pull-1', true);
    const lines: string[] = [];
    const result = await pullTask(stage, stack.info, { id }, opts, (l) => lines.push(l));
    expect(result).toMatchObject({ service: 'recording', taskId: id, appKey: 'demo-app', to: stack.url });
    expect(result.from).toContain(`table ${resourceNames(STAGE).table}`);
    const stageEvents = await stage.tasks.listEvents(id);
    expect(result.callbacks.map((c) => [c.key, c.status])).toEqual(stageEvents.map((e) => [e.key, 200]));
    expect(lines).toHaveLength(stageEvents.length);
    expect(lines[0]).toMatch(/^1 start {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z( {2}\S+)? {2}-> 200 \{"ok":true\}$/);
    expect(lines.some((l) => /^4 upload .* -> 200 /.test(l))).toBe(true);

    const stageTaskNow = await stage.tasks.getTask(id);
    const pulled = await localTask(id, stageEvents.length);
    expect(pulled).toEqual(stageTaskNow);
    expect(pulled.status).toBe('upload_failed');
    const localEvents = await local.tasks.listEvents(id);
    expect(localEvents.map((e) => [e.key, e.raw])).toEqual(stageEvents.map((e) => [e.key, e.raw]));
    expect(localEvents.every((e) => e.verdict === 'valid')).toBe(true);
  });

  test('an appKey without a local secret: one sentence naming it, nothing posted; CALLBACK_SECRETS signs', async () => {
    const id = await stageTask('prod-app', 'pull-2');
    await expect(pullTask(stage, stack.info, { id }, opts)).rejects.toThrow(
      `no secret for appKey "prod-app" in the local stack's demo secrets: set CALLBACK_SECRETS to sign with others`,
    );
    expect(await local.tasks.getTask(id)).toBeNull();
    // Signed all the same, for an appKey the local stack has no secret for: refused, and said so per callback.
    const env = { CALLBACK_SECRETS: JSON.stringify({ 'prod-app': ['demo-secret'] }) };
    const refused = await pullTask(stage, stack.info, { id }, { ...opts, env });
    expect(refused.callbacks.length).toBeGreaterThan(2);
    for (const c of refused.callbacks) {
      expect(c).toMatchObject({ status: 403, body: { error: { code: 'unknown_app_key' } } });
    }
  });

  test('pull signed with the last secret of a rotation, which lists the new one first', async () => {
    const id = await stageTask('demo-app', 'pull-rotation');
    // The local stack knows the demo secret alone; the shell holds it as the new one of a rotation.
    const env = { CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['demo-secret', 'retired-secret'] }) };
    const result = await pullTask(stage, stack.info, { id }, { ...opts, env });
    expect(result.callbacks.length).toBeGreaterThan(2);
    expect(result.callbacks.every((c) => c.status === 200)).toBe(true);
  });

  test('a task the stage does not have, and a local target, are refused in one sentence', async () => {
    await expect(pullTask(stage, stack.info, { id: 'rec-nowhere' }, opts)).rejects.toThrow(
      `no task rec-nowhere in stage ${STAGE} in us-east-1`,
    );
    await expect(pullTask(local, stack.info, { id: 'rec-nowhere' }, opts)).rejects.toThrow(
      /name the stage with --stage/,
    );
  });
});
