// `callbacks send --lifecycle`: a whole task's signed callbacks posted to a local stack in process, every
// answer returned, and the task the worker makes of them in the state the lifecycle ends in.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postLifecycle, type LifecycleOptions } from '../cli/commands/send.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import type { Task } from '../lib/domain/task.ts';
import { setLogSink } from '../lib/log.ts';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { eventually } from './support/eventually.ts';
import { runCliHere } from './support/cli-process.ts';

let dir: string;
let stack: LocalStack;
let target: Target;
let restoreSink: ReturnType<typeof setLogSink>;

const base: Omit<LifecycleOptions, 'lifecycle'> = { sign: 'header', timeout: 10_000 };

/** The task once the queue is drained (every callback applied and counted) and it has this status. */
async function settled(id: string, status: string): Promise<Task> {
  const task = await eventually(
    `task ${id} ${status}, its queue drained`,
    async () => {
      const q = await target.queue.depth();
      return q.visible + q.inFlight + q.delayed === 0 ? await target.tasks.getTask(id) : null;
    },
    (t) => t?.status === status,
  );
  return task!;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'callbacks-lifecycle-'));
  restoreSink = setLogSink(() => {});
  stack = await startLocalStack({ port: 0, memory: true, cwd: dir, quiet: true });
  target = await openTarget({ cwd: dir, env: {} });
}, 60_000);

afterAll(async () => {
  await target?.close();
  await stack?.stop();
  setLogSink(restoreSink);
  rmSync(dir, { recursive: true, force: true });
});

describe('callbacks send --lifecycle', () => {
  test('recording: start, slices, uploads and end, each accepted, make a completed task', async () => {
    const lines: string[] = [];
    const answers = await postLifecycle({ ...base, lifecycle: 'recording', seed: 'rec-1' }, (l) => lines.push(l), dir);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    // Slices come in the modes that write them.
    const types = new Set(answers.map((a) => a.type));
    for (const type of [1, 3, 4]) expect(types).toContain(type);
    expect(answers[0]!.type).toBe(1);
    expect(new Set(answers.map((a) => a.taskId)).size).toBe(1);
    expect(answers[0]!.url).toBe(`${stack.url}/callbacks/recording`);
    expect(lines).toHaveLength(answers.length);
    expect(lines[0]).toMatch(/^1 start\s+rec-\S+\s+POST http:\/\/127\.0\.0\.1:\d+\/callbacks\/recording -> 200 /);
    const task = await settled(answers[0]!.taskId, 'completed');
    expect(task.files.length).toBeGreaterThan(0);
    expect(task.files.every((f) => f.upload === 'uploaded')).toBe(true);
  });

  test('screenshot: start, images, uploads and end make a completed task', async () => {
    const answers = await postLifecycle({ ...base, lifecycle: 'screenshot', seed: 'img-1' }, undefined, dir);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers[0]!.url).toBe(`${stack.url}/callbacks/screenshot`);
    await settled(answers[0]!.taskId, 'completed');
  });

  test('--fail-uploads: the uploads are given up and the task ends upload_failed', async () => {
    const answers = await postLifecycle({ ...base, lifecycle: 'recording', failUploads: true }, undefined, dir);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const task = await settled(answers[0]!.taskId, 'upload_failed');
    expect(task.files.some((f) => f.upload === 'failed')).toBe(true);
  });

  test('a big task: --images, --duration and an outage window; beyond 200 callbacks only refusals print', async () => {
    const run = await runCliHere(
      [
        'send',
        '--lifecycle',
        'screenshot',
        '--seed',
        'big-1',
        '--images',
        '250',
        '--duration',
        '10m',
        '--outage-at',
        '2m',
        '--outage-for',
        '30s',
      ],
      { cwd: dir },
    );
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const [summary, ...rest] = run.stdout.split('\n').filter(Boolean);
    expect(rest).toEqual([]);
    const [, count, id] = /^(\d+) callbacks of screenshot task (\S+), all accepted \(beyond 200 callbacks/.exec(
      summary!,
    )!;
    // A start, an upload per image and the retries of those caught in the outage, an end.
    expect(Number(count)).toBeGreaterThan(2 + 250);
    const task = await settled(id!, 'completed');
    expect(task.files).toHaveLength(250);
    expect(task.files.filter((f) => f.attempts > 1).length).toBeGreaterThan(5);
    expect(task.endedAt! - task.startedAt!).toBe(10 * 60_000);
    // Options that shape a task need one; --images a screenshot task.
    const refused = await runCliHere(['send', '--lifecycle', 'recording', '--images', '5'], { cwd: dir });
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/--images .* --lifecycle screenshot/) });
    const bare = await runCliHere(['send', 'body.json', '--duration', '1h'], { cwd: dir });
    expect(bare.stderr).toMatch(/need --lifecycle/);
  }, 60_000);

  test('a wrong secret: every answer is the refusal, returned rather than thrown', async () => {
    // A seed whose task takes images: about one task in 140 takes none (a start and an end alone).
    const answers = await postLifecycle({ ...base, lifecycle: 'screenshot', seed: '5eed' }, undefined, dir, {
      CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['wrong'] }),
    });
    expect(answers.length).toBeGreaterThan(2);
    expect(answers.every((a) => a.status === 401)).toBe(true);
    expect(answers[0]!.body).toMatchObject({ error: { code: 'invalid_signature' } });
  });
});
