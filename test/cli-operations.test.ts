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

describe('callbacks quarantine apply', () => {
  const wrongSecrets = JSON.stringify({ 'demo-app': ['receiver-wrong-secret'] });

  async function quarantined(cwd: string, env: Record<string, string> = {}): Promise<any[]> {
    const run = await runCli(['quarantine', 'list', '--json'], { cwd, env });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout);
  }

  async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  test('a report-mode run under a wrong secret is set aside; with the right secret, apply brings it all back', async () => {
    const cwd = freshDir();
    // 1. The receiver runs in report mode with a secret that is not the platform's.
    const wrong = await dev(['--signature-mode', 'report', '--quiet'], cwd, { CALLBACK_SECRETS: wrongSecrets });
    const emulated = await runCli(
      [
        'emulate',
        '--url',
        wrong.info.url,
        '--recordings',
        '3',
        '--screenshots',
        '2',
        '--seed',
        'quarantine-apply',
        '--expect',
        'expect.json',
        '--json',
        '--no-progress',
      ],
      { cwd },
    );
    expect(emulated.code).toBe(0);
    const sent = JSON.parse(emulated.stdout).summary;
    expect(sent.delivered).toBe(sent.callbacks);
    const held = await waitFor('the worker to quarantine every callback', async () => {
      const entries = await quarantined(cwd, { CALLBACK_SECRETS: wrongSecrets });
      return entries.length === sent.delivered ? entries : undefined;
    });
    expect(new Set(held.map((e) => e.reason))).toEqual(new Set(['invalid_signature']));
    expect(held.every((e) => e.taskId && e.signature?.signature && e.mode === 'report')).toBe(true);
    // Nothing stored: verify fails and says so.
    const before = await runCli(['verify', '--expect', 'expect.json', '--timeout', '2s', '--no-progress'], { cwd });
    expect(before.code).not.toBe(0);

    // Not at a terminal and no --yes: refused, nothing written.
    const refused = await runCli(['quarantine', 'apply'], { cwd, env: { CALLBACK_SECRETS: wrongSecrets } });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe(
      'callbacks: quarantine apply writes to the tasks table: pass --yes to confirm when not at a terminal\n',
    );
    // Under the same wrong secret a dry run says they would all still fail, and why.
    const dry = await runCli(['quarantine', 'apply', '--dry-run', '--json'], {
      cwd,
      env: { CALLBACK_SECRETS: wrongSecrets },
    });
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dryRun: true,
      matched: sent.delivered,
      wouldApply: 0,
      stillFailing: sent.delivered,
      reasons: [
        {
          why: 'the signature does not verify: no secret configured for appKey "demo-app" reproduces it',
          count: sent.delivered,
        },
      ],
    });
    // The local stack runs with its own secrets: this shell must name them.
    const unnamed = await runCli(['quarantine', 'apply', '--yes'], { cwd });
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toMatch(
      /^callbacks: the local stack was started with its own CALLBACK_SECRETS: set the same/,
    );
    await wrong.stop();

    // 2. The secret is fixed (the stack restarts with the platform's: the demo key), then apply.
    const right = await dev(['--signature-mode', 'report', '--quiet'], cwd);
    const dryRight = await runCli(['quarantine', 'apply', '--dry-run'], { cwd });
    expect(dryRight.stdout).toContain(`${sent.delivered} would be applied and 0 would still fail`);
    const applied = await runCli(['quarantine', 'apply', '--yes'], { cwd });
    expect(applied).toMatchObject({ code: 0, stderr: '' });
    expect(applied.stdout).toMatch(
      new RegExp(`: ${sent.delivered} applied, 0 duplicate \\(already applied\\), 0 still failing\\.`),
    );
    const verified = await runCli(['verify', '--expect', 'expect.json', '--timeout', '20s', '--no-progress'], { cwd });
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);

    // 3. A second run changes nothing: every callback is a duplicate, the marks stay those of the first.
    const firstMarks = (await quarantined(cwd)).map((e) => e.applied);
    expect(firstMarks.every((m) => m?.outcome === 'applied' && m.verdict === 'valid')).toBe(true);
    const again = await runCli(['quarantine', 'apply', '--yes', '--json'], { cwd });
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: 0, duplicate: sent.delivered, stillFailing: 0 });
    expect((await quarantined(cwd)).map((e) => e.applied)).toEqual(firstMarks);
    expect((await runCli(['verify', '--expect', 'expect.json', '--no-progress'], { cwd })).code).toBe(0);
    const list = await runCli(['quarantine', 'list'], { cwd });
    expect(list.stdout).toContain(`(0 not applied)`);
    await right.stop();
  });

  test('a body the parser refuses is filed under its task; tasks get and quarantine list point at it', async () => {
    const cwd = freshDir();
    const stack = await dev(['--memory', '--quiet'], cwd);
    const noOutput = { timestamp: Date.now(), type: 2, appKey: 'demo-app', recordId: 'rec-no-output' };
    expect((await postSigned(stack.info.url, 'recording', noOutput)).status).toBe(200);
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-fine'))).status).toBe(200);
    const entries = await waitFor('the quarantine entry', async () => {
      const listed = await quarantined(cwd);
      return listed.length === 1 ? listed : undefined;
    });
    expect(entries[0]).toMatchObject({ reason: 'invalid_callback', taskId: 'rec-no-output', appKey: 'demo-app' });

    const get = await runCli(['tasks', 'get', 'rec-no-output'], { cwd });
    expect(get).toMatchObject({ code: 1, stdout: '' });
    expect(get.stderr).toBe(
      `callbacks: no task rec-no-output in the local stack at ${stack.info.url} (table ${stack.info.tableName}); ` +
        '1 quarantined callback names it (see them: callbacks quarantine list --task rec-no-output)\n',
    );
    const filtered = await runCli(['quarantine', 'list', '--task', 'rec-no-output', '--reason', 'invalid_callback'], {
      cwd,
    });
    expect(filtered.stdout.split('\n')[1]).toMatch(/invalid_callback\s+recording\s+rec-no-output\s+demo-app/);
    for (const args of [
      ['--task', 'rec-fine'],
      ['--reason', 'invalid_signature'],
      ['--app-key', 'other-app'],
      ['--since', '1h', '--until', '30m'],
    ]) {
      const none = await runCli(['quarantine', 'list', ...args, '--json'], { cwd });
      expect({ args, entries: JSON.parse(none.stdout) }).toEqual({ args, entries: [] });
    }
    const reversed = await runCli(['quarantine', 'list', '--since', '1h', '--until', '2h'], { cwd });
    expect(reversed).toMatchObject({
      code: 1,
      stderr: 'callbacks: --since is later than --until: the range is reversed\n',
    });
    // Still failing: the summary says why, and the exit code says it.
    const apply = await runCli(['quarantine', 'apply', '--yes'], { cwd });
    expect(apply.code).toBe(1);
    expect(apply.stdout).toMatch(/0 applied, 0 duplicate \(already applied\), 1 still failing\./);
    expect(apply.stdout).toMatch(/1 {2}the body does not parse: /);
    // Once the task exists, its view says the same.
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-no-output'))).status).toBe(200);
    await waitForTask(cwd, 'rec-no-output');
    const shown = await runCli(['tasks', 'get', 'rec-no-output'], { cwd });
    expect(shown.stdout.trimEnd().split('\n').at(-1)).toBe(
      '1 quarantined callback names this task: callbacks quarantine list --task rec-no-output',
    );
    await stack.stop();
  });
});
