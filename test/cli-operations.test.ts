// Operating the receiver through the real CLI, as child processes: `callbacks dev` with its options, and
// the commands run against it in the same folder.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postSigned, runCli, startDev, type DevProcess } from './support/cli-process.ts';

const STACK_FRAME = /\n\s+at /;
const running: DevProcess[] = [];
const dirs: string[] = [];

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'callbacks-ops-'));
  dirs.push(dir);
  return dir;
}

async function dev(args: string[], cwd: string, env: Record<string, string> = {}): Promise<DevProcess> {
  const stack = await startDev(args, { cwd, env });
  running.push(stack);
  return stack;
}

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function waitForTask(cwd: string, id: string, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await runCli(['tasks', 'get', id, '--json'], { cwd });
    if (run.code === 0) return JSON.parse(run.stdout);
    if (Date.now() > deadline) throw new Error(`task ${id} never appeared: ${run.stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const startBody = (recordId: string) => ({
  timestamp: Date.now(),
  type: 1,
  appKey: 'demo-app',
  recordId,
  roomId: 'room-ops',
  sessionId: 'session-ops',
  userId: '',
  mode: 3,
  code: 200,
  errorMessage: 'success',
  config: {},
  output: { fileName: 'session-ops_room-ops.mp4' },
});

describe('callbacks dev --allow-cidr', () => {
  test('a source outside the ranges gets 403 source_not_allowed; inside, the callback is accepted', async () => {
    const outside = await dev(
      ['--memory', '--quiet', '--allow-cidr', '10.0.0.0/8', '--allow-cidr', '192.0.2.0/24,2001:db8::/32'],
      freshDir(),
    );
    expect(outside.output().stdout).toMatch(/sources\s+10\.0\.0\.0\/8, 192\.0\.2\.0\/24, 2001:db8::\/32/);
    const refused = await postSigned(outside.info.url, 'recording', startBody('rec-cidr-1'));
    expect(refused).toEqual({
      status: 403,
      json: { error: { code: 'source_not_allowed', message: 'Requests from this source address are not accepted.' } },
    });
    await outside.stop();

    const cwd = freshDir();
    const inside = await dev(['--memory', '--quiet', '--allow-cidr', '127.0.0.0/8'], cwd);
    expect((await postSigned(inside.info.url, 'recording', startBody('rec-cidr-2'))).status).toBe(200);
    // Applied by the worker shortly after the 200.
    expect(await waitForTask(cwd, 'rec-cidr-2')).toMatchObject({ id: 'rec-cidr-2', status: 'recording' });
    await inside.stop();
  });

  test('a malformed range: one line naming it, exit code 1, nothing started', async () => {
    const run = await runCli(['dev', '--port', '0', '--memory', '--allow-cidr', '10.0.0.0/40'], { cwd: freshDir() });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')[0]).toBe(
      "error: option '--allow-cidr <cidr>' argument '10.0.0.0/40' is invalid. \"10.0.0.0/40\" has a prefix length outside 0 to 32 (such as 203.0.113.0/24 or 2001:db8::/32).",
    );
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });

  test('a malformed ALLOWED_SOURCE_CIDRS stops the start with its sentence', async () => {
    const run = await runCli(['dev', '--port', '0', '--memory'], {
      cwd: freshDir(),
      env: { ALLOWED_SOURCE_CIDRS: '192.0.2.0/24,not-a-range' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'callbacks: ALLOWED_SOURCE_CIDRS: "not-a-range" is not an IPv4 or IPv6 range (such as 203.0.113.0/24 or 2001:db8::/32).\n',
    );
  });
});
