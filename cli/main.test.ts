// run(argv, io): each run has its own folder, environment and streams, even when two run at once in one process,
// and resolves to its exit code instead of setting the process's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCliHere } from '../test/support/cli-process.ts';

const dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), 'callbacks-run-')));
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('two runs at once: each looks for the local stack in its own folder and prints to its own stderr', async () => {
  const runs = await Promise.all(dirs.map((cwd) => runCliHere(['tasks', 'get', 'rec-1'], { cwd })));
  expect(runs.map((r) => r.code)).toEqual([1, 1]);
  expect(runs.map((r) => r.stdout)).toEqual(['', '']);
  runs.forEach((r, i) => {
    expect(r.stderr).toBe(
      `callbacks: no local stack is running in ${dirs[i]} (start one with "npm start"), and neither --stage ` +
        'nor TASKS_TABLE names a deployed one\n',
    );
  });
  expect(process.exitCode ?? 0).toBe(0);
});

test("a run reads its own environment: TASKS_TABLE given to one names a table, the other's looks locally", async () => {
  const [deployed, local] = await Promise.all([
    runCliHere(['tasks', 'get', 'x'], {
      cwd: dirs[0]!,
      env: { TASKS_TABLE: 'my-tasks', AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL: 'http://127.0.0.1:9' },
    }),
    runCliHere(['tasks', 'get', 'x'], { cwd: dirs[1]! }),
  ]);
  expect(deployed.stderr).toMatch(/^callbacks: table my-tasks in eu-west-1: /);
  expect(local.stderr).toMatch(/^callbacks: no local stack is running in /);
});

test('usage errors and --help end the run with their code, never the process', async () => {
  const bad = await runCliHere(['tasks', 'list', '--bogus'], { cwd: dirs[0]! });
  expect(bad).toEqual({
    code: 1,
    stdout: '',
    stderr: 'error: unknown option \'--bogus\'\nRun "callbacks tasks list --help" for the usage.\n',
  });
  const help = await runCliHere(['tasks', '--help'], { cwd: dirs[0]! });
  expect(help.code).toBe(0);
  expect(help.stdout).toMatch(/^Usage: callbacks tasks/);
});
