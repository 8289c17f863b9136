// Runs the `callbacks` command as a user does, in a child process, in a given folder, without any AWS
// setting of the machine.
import { execFile } from 'node:child_process';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const nodeBin = join(root, 'node_modules/.bin/node');
const cliBin = join(root, 'bin/callbacks.js');
const ANSI = /\u001b\[/;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(cwd: string, args: string[], extraEnv: Record<string, string> = {}): Promise<CliRun> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(AWS_|TASKS_TABLE|QUEUE_URL|DLQ_URL|NO_COLOR|FORCE_COLOR)/.test(k)) continue;
    env[k] = v;
  }
  Object.assign(env, { AWS_EC2_METADATA_DISABLED: 'true' }, extraEnv);
  const run = await new Promise<CliRun>((resolve) => {
    execFile(nodeBin, [cliBin, ...args], { cwd, env, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
  // Output to a pipe is never coloured.
  expect(run.stdout).not.toMatch(ANSI);
  expect(run.stderr).not.toMatch(ANSI);
  return run;
}

/** `callbacks <args> --json`, which must succeed without a word on stderr. */
export async function runCliJson<T>(cwd: string, args: string[]): Promise<T> {
  const run = await runCli(cwd, [...args, '--json']);
  expect(run).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}
