// Operating the receiver through the real CLI: `callbacks dev` with its options, and the commands run against
// it in the same folder, each run as bin/callbacks.js runs it (cli/main.ts's run) in this process; in child
// processes, what only a process shows: bin's wiring and exit codes, the JSON logs of a dev stopped by SIGTERM,
// and the command started by an older Node, directly and through npx.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  childEnv,
  postSigned,
  runCli,
  runCliHere,
  type RunningDev,
  startDev,
  startDevHere,
} from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';

const STACK_FRAME = /\n\s+at /;
const running: RunningDev[] = [];
const dirs: string[] = [];

function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'callbacks-ops-'));
  dirs.push(dir);
  return dir;
}

/** `callbacks dev <args>` in this process, or in a child process with `child`. */
async function dev(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
  opts: { child?: boolean } = {},
): Promise<RunningDev> {
  const stack = await (opts.child ? startDev : startDevHere)(args, { cwd, env });
  running.push(stack);
  return stack;
}

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function waitForTask(cwd: string, id: string): Promise<any> {
  const run = await eventually(
    `task ${id}`,
    () => runCliHere(['tasks', 'get', id, '--json'], { cwd }),
    (r) => r.code === 0,
  );
  return JSON.parse(run.stdout);
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
    const run = await runCliHere(['dev', '--port', '0', '--memory', '--allow-cidr', '10.0.0.0/40'], {
      cwd: freshDir(),
    });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')[0]).toBe(
      "error: option '--allow-cidr <cidr>' argument '10.0.0.0/40' is invalid. " +
        '"10.0.0.0/40" has a prefix length outside 0 to 32 (such as 203.0.113.0/24 or 2001:db8::/32).',
    );
    expect(run.stderr).not.toMatch(STACK_FRAME);
  });

  test('--allow-cidr naming no range (commas only) is refused, not taken for every address', async () => {
    const run = await runCliHere(['dev', '--port', '0', '--memory', '--allow-cidr', ' , '], { cwd: freshDir() });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')[0]).toBe(
      "error: option '--allow-cidr <cidr>' argument ' , ' is invalid. --allow-cidr is set but names no range " +
        '(" , "): give ranges such as 203.0.113.0/24 or 2001:db8::/32, or leave it unset to accept every address.',
    );
  });

  test('an ALLOWED_SOURCE_CIDRS set but empty stops the start with its sentence', async () => {
    const run = await runCliHere(['dev', '--port', '0', '--memory'], {
      cwd: freshDir(),
      env: { ALLOWED_SOURCE_CIDRS: '' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'callbacks: ALLOWED_SOURCE_CIDRS is set but names no range (""): give ranges such as 203.0.113.0/24 or ' +
        '2001:db8::/32, or leave it unset to accept every address.\n',
    );
  });

  test('a malformed ALLOWED_SOURCE_CIDRS stops the start with its sentence', async () => {
    const run = await runCliHere(['dev', '--port', '0', '--memory'], {
      cwd: freshDir(),
      env: { ALLOWED_SOURCE_CIDRS: '192.0.2.0/24,not-a-range' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'callbacks: ALLOWED_SOURCE_CIDRS: "not-a-range" is not an IPv4 or IPv6 range ' +
        '(such as 203.0.113.0/24 or 2001:db8::/32).\n',
    );
  });
});

describe('callbacks quarantine apply', () => {
  const wrongSecrets = JSON.stringify({ 'demo-app': ['receiver-wrong-secret'] });

  async function quarantined(cwd: string, env: Record<string, string> = {}): Promise<any[]> {
    const run = await runCliHere(['quarantine', 'list', '--json'], { cwd, env });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(run.stdout);
  }

  test('report mode under a wrong secret sets the run aside; with the right one, apply brings it back', async () => {
    const cwd = freshDir();
    // 1. The receiver runs in report mode with a secret that is not the platform's.
    const wrong = await dev(['--signature-mode', 'report', '--quiet'], cwd, { CALLBACK_SECRETS: wrongSecrets });
    const emulated = await runCliHere(
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
      // The platform signs with its own secret, not the receiver's.
      { cwd, env: { CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['demo-secret'] }) } },
    );
    expect(emulated.code).toBe(0);
    const sent = JSON.parse(emulated.stdout).summary;
    expect(sent.delivered).toBe(sent.callbacks);
    const held = await eventually(
      'the worker to quarantine every callback',
      () => quarantined(cwd, { CALLBACK_SECRETS: wrongSecrets }),
      (entries) => entries.length === sent.delivered,
      { timeoutMs: 30_000 },
    );
    expect(new Set(held.map((e) => e.reason))).toEqual(new Set(['invalid_signature']));
    expect(held.every((e) => e.taskId && e.signature?.signature && e.mode === 'report')).toBe(true);
    // Nothing stored: verify fails and says so. Every callback is already quarantined (the worker is done), so
    // one read of the tasks is the answer: the expect file's tasks alone (the published events would be waited
    // for) and the shortest time-out.
    const expectFile = JSON.parse(readFileSync(join(cwd, 'expect.json'), 'utf8'));
    writeFileSync(join(cwd, 'expect-tasks.json'), JSON.stringify({ ...expectFile, events: undefined }));
    const before = await runCliHere(['verify', '--expect', 'expect-tasks.json', '--timeout', '1ms', '--no-progress'], {
      cwd,
    });
    expect(before.code).toBe(1);
    const taskCount = expectFile.tasks.length;
    expect(before.stdout).toContain(`${taskCount} of ${taskCount} task(s) differ`);

    // Not at a terminal and no --yes: refused, nothing written.
    const refused = await runCliHere(['quarantine', 'apply'], { cwd, env: { CALLBACK_SECRETS: wrongSecrets } });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe(
      'callbacks: quarantine apply writes to the tasks table: pass --yes to confirm when not at a terminal\n',
    );
    // Under the same wrong secret a dry run says they would all still fail, and why.
    const dry = await runCliHere(['quarantine', 'apply', '--dry-run', '--json'], {
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
    const unnamed = await runCliHere(['quarantine', 'apply', '--yes'], { cwd });
    expect(unnamed.code).toBe(1);
    expect(unnamed.stderr).toMatch(
      /^callbacks: the local stack was started with its own CALLBACK_SECRETS: set the same/,
    );
    await wrong.stop();

    // 2. The secret is fixed (the stack restarts with the platform's: the demo key), then apply.
    const right = await dev(['--signature-mode', 'report', '--quiet'], cwd);
    const dryRight = await runCliHere(['quarantine', 'apply', '--dry-run'], { cwd });
    expect(dryRight.stdout).toContain(`${sent.delivered} would be applied and 0 would still fail`);
    const applied = await runCliHere(['quarantine', 'apply', '--yes'], { cwd });
    expect(applied).toMatchObject({ code: 0, stderr: '' });
    expect(applied.stdout).toMatch(
      new RegExp(`: ${sent.delivered} applied, 0 duplicate \\(already applied\\), 0 still failing\\.`),
    );
    const verified = await runCliHere(['verify', '--expect', 'expect.json', '--timeout', '20s', '--no-progress'], {
      cwd,
    });
    // Tasks and their task events alike: what apply applies is published as the worker publishes it.
    expect(verified).toMatchObject({ code: 0, stderr: '' });
    expect(verified.stdout).not.toMatch(/missing/);

    // 3. A second run changes nothing: every callback is a duplicate, the marks stay those of the first.
    const firstMarks = (await quarantined(cwd)).map((e) => e.applied);
    expect(firstMarks.every((m) => m?.outcome === 'applied' && m.verdict === 'valid')).toBe(true);
    const again = await runCliHere(['quarantine', 'apply', '--yes', '--json'], { cwd });
    expect(JSON.parse(again.stdout)).toMatchObject({ applied: 0, duplicate: sent.delivered, stillFailing: 0 });
    expect((await quarantined(cwd)).map((e) => e.applied)).toEqual(firstMarks);
    expect((await runCliHere(['verify', '--expect', 'expect.json', '--no-progress'], { cwd })).code).toBe(0);
    const list = await runCliHere(['quarantine', 'list'], { cwd });
    expect(list.stdout).toContain(`(0 not applied)`);
    await right.stop();
  });

  test('a body the parser refuses is filed under its task; tasks get and quarantine list point at it', async () => {
    const cwd = freshDir();
    const stack = await dev(['--memory', '--quiet'], cwd);
    const noOutput = { timestamp: Date.now(), type: 2, appKey: 'demo-app', recordId: 'rec-no-output' };
    expect((await postSigned(stack.info.url, 'recording', noOutput)).status).toBe(200);
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-fine'))).status).toBe(200);
    const entries = await eventually(
      'the quarantine entry',
      () => quarantined(cwd),
      (listed) => listed.length === 1,
      {
        timeoutMs: 30_000,
      },
    );
    expect(entries[0]).toMatchObject({ reason: 'invalid_callback', taskId: 'rec-no-output', appKey: 'demo-app' });

    const get = await runCliHere(['tasks', 'get', 'rec-no-output'], { cwd });
    expect(get).toMatchObject({ code: 1, stdout: '' });
    expect(get.stderr).toBe(
      `callbacks: no task rec-no-output in the local stack at ${stack.info.url} (table ${stack.info.tableName}); ` +
        '1 quarantined callback names it (see them: callbacks quarantine list --task rec-no-output)\n',
    );
    const filtered = await runCliHere(
      ['quarantine', 'list', '--task', 'rec-no-output', '--reason', 'invalid_callback'],
      {
        cwd,
      },
    );
    expect(filtered.stdout.split('\n')[1]).toMatch(/invalid_callback\s+recording\s+rec-no-output\s+demo-app/);
    for (const args of [
      ['--task', 'rec-fine'],
      ['--reason', 'invalid_signature'],
      ['--app-key', 'other-app'],
      ['--since', '1h', '--until', '30m'],
    ]) {
      const none = await runCliHere(['quarantine', 'list', ...args, '--json'], { cwd });
      expect({ args, entries: JSON.parse(none.stdout) }).toEqual({ args, entries: [] });
    }
    const reversed = await runCliHere(['quarantine', 'list', '--since', '1h', '--until', '2h'], { cwd });
    expect(reversed).toMatchObject({
      code: 1,
      stderr: 'callbacks: --since is later than --until: the range is reversed\n',
    });
    // Still failing: the summary says why, and the exit code says it.
    const apply = await runCliHere(['quarantine', 'apply', '--yes'], { cwd });
    expect(apply.code).toBe(1);
    expect(apply.stdout).toMatch(/0 applied, 0 duplicate \(already applied\), 1 still failing\./);
    expect(apply.stdout).toMatch(/1 {2}the body does not parse: /);
    // Once the task exists, its view says the same.
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-no-output'))).status).toBe(200);
    await waitForTask(cwd, 'rec-no-output');
    const shown = await runCliHere(['tasks', 'get', 'rec-no-output'], { cwd });
    expect(shown.stdout.trimEnd().split('\n').at(-1)).toBe(
      '1 quarantined callback names this task: callbacks quarantine list --task rec-no-output',
    );
    await stack.stop();
  });
});

describe('the command line itself', () => {
  test.concurrent('--version prints the version of the package', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(await runCli(['--version'], { cwd: freshDir() })).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  test.concurrent('a bad flag or command: one error line and a hint to --help, not the whole help', async () => {
    const cwd = freshDir();
    // Three processes at once: each is a run of its own.
    const [bogus, unknown, missing] = await Promise.all([
      runCli(['tasks', 'list', '--bogus'], { cwd }),
      runCli(['taks', 'list'], { cwd }),
      runCli(['quarantine', 'list', '--limit'], { cwd }),
    ]);
    expect(bogus).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: unknown option '--bogus'\nRun "callbacks tasks list --help" for the usage.\n`,
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trimEnd().split('\n')).toEqual([
      "error: unknown command 'taks' (Did you mean tasks?)",
      'Run "callbacks --help" for the usage.',
    ]);
    expect(missing.stderr).toBe(
      `error: option '--limit <n>' argument missing\nRun "callbacks quarantine list --help" for the usage.\n`,
    );
  });

  test('emulate --url without a scheme, and https against a plain http server, say what is wrong', async () => {
    const cwd = freshDir();
    const noScheme = await runCliHere(['emulate', '--url', 'localhost:3000'], { cwd });
    expect(noScheme).toEqual({
      code: 1,
      stdout: '',
      stderr: 'callbacks: --url needs a scheme: write http://localhost:3000 (or https:// for a TLS endpoint)\n',
    });
    const plain = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const port = (plain.address() as AddressInfo).port;
    try {
      const tls = await runCliHere(['emulate', '--url', `https://127.0.0.1:${port}`], { cwd });
      expect(tls.code).toBe(1);
      expect(tls.stderr).toBe(
        `callbacks: https://127.0.0.1:${port} answers, but not over TLS (ERR_SSL_WRONG_VERSION_NUMBER): ` +
          `it looks like a plain http server; try http://127.0.0.1:${port}\n`,
      );
    } finally {
      plain.close();
    }
  });
});

describe('callbacks send', () => {
  test('signs and posts one body as the platform would, and prints the answer', async () => {
    const cwd = freshDir();
    const stack = await dev(['--memory', '--quiet'], cwd);
    const single = (recordId: string, userId: string) => ({
      ...startBody(recordId),
      userId,
      mode: 0,
      timestamp: Date.now(),
    });
    writeFileSync(join(cwd, 'a.json'), JSON.stringify(single('rec-send-a', 'user-a'), null, 2));
    writeFileSync(join(cwd, 'b.json'), JSON.stringify(single('rec-send-b', 'user-b')));
    const url = `${stack.info.url}/callbacks/recording`;

    // The local stack and its demo key are found without flags; the route comes from recordId.
    expect(await runCliHere(['send', 'a.json'], { cwd })).toEqual({
      code: 0,
      stdout: `POST ${url} -> 200 {"ok":true}\n`,
      stderr: '',
    });
    const viaQuery = await runCliHere(['send', 'b.json', '--sign', 'query', '--url', stack.info.url, '--json'], {
      cwd,
    });
    expect(JSON.parse(viaQuery.stdout)).toEqual({ url, status: 200, body: { ok: true } });

    // A wrong secret is answered as the receiver answers it, and the exit code says so.
    const secrets = (appKey: string, ...list: string[]) => ({ CALLBACK_SECRETS: JSON.stringify({ [appKey]: list }) });
    const wrong = await runCliHere(['send', 'a.json'], { cwd, env: secrets('demo-app', 'not-the-secret') });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toMatch(new RegExp(`^POST ${url} -> 401 \\{"error":\\{"code":"invalid_signature"`));
    // An appKey outside the body that differs from it is refused too.
    const mismatch = await runCliHere(['send', 'a.json', '--app-key', 'other-app'], {
      cwd,
      env: secrets('other-app', 'demo-secret'),
    });
    expect(mismatch.stdout).toContain('-> 401 {"error":{"code":"invalid_signature"');
    const screenshot = await runCliHere(['send', 'a.json', '--service', 'screenshot'], { cwd });
    expect(screenshot.stdout).toContain('/callbacks/screenshot -> 400 {"error":{"code":"invalid_body"');
    const noSecret = await runCliHere(['send', 'a.json', '--app-key', 'unknown-app'], { cwd });
    expect(noSecret.stderr).toBe(
      `callbacks: no secret for appKey "unknown-app" in the local stack's demo secrets: set CALLBACK_SECRETS to sign ` +
        'with others\n',
    );

    // A secret on the command line stays in the shell's history: refused, its value never repeated.
    const typed = await runCliHere(['send', 'a.json', '--secret', 'typed-secret-1234'], { cwd });
    expect(typed).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'callbacks: a secret is not taken on the command line (the shell history and the process list would keep ' +
        'it): set CALLBACK_SECRETS, or name the stage (--stage) whose parameter holds it\n',
    });

    // --user narrows tasks list to that user's tasks.
    await waitForTask(cwd, 'rec-send-a');
    await waitForTask(cwd, 'rec-send-b');
    const listed = await runCliHere(['tasks', 'list', '--user', 'user-b', '--json'], { cwd });
    expect(JSON.parse(listed.stdout).map((t: any) => [t.id, t.userId])).toEqual([['rec-send-b', 'user-b']]);

    // The emulator's summary is a few lines, not a box.
    const emulated = await runCliHere(
      ['emulate', '--url', stack.info.url, '--recordings', '1', '--screenshots', '1', '--no-progress'],
      { cwd },
    );
    expect(emulated.code).toBe(0);
    const lines = emulated.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^Sent \d+ callbacks of 1 recording and 1 screenshot tasks to http:\/\/127\.0\.0\.1:\d+ in /,
    );
    expect(lines[1]).toMatch(/^(\d+) acknowledged, 0 not acknowledged; \1 requests: \1 2xx, 0 4xx, 0 5xx, /);
    // Against a local stack, the files it reported uploaded are in the stack's storage (docs/verification.md).
    expect(lines[2]).toMatch(/^Stored the \d+ file\(s\) reported uploaded in the local stack's storage\.$/);
    await stack.stop();
  });
});

describe('signing during a rotation', () => {
  test('send and emulate signed with the last secret of a rotation, which lists the new one first', async () => {
    const cwd = freshDir();
    // The receiver already dropped the old secret; the shell still holds the rotation, new secret first.
    const stack = await dev(['--memory', '--quiet'], cwd, {
      CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['new'] }),
    });
    const env = { CALLBACK_SECRETS: JSON.stringify({ 'demo-app': ['new', 'old'] }) };
    writeFileSync(join(cwd, 'a.json'), JSON.stringify(startBody('rec-rotation')));
    expect(await runCliHere(['send', 'a.json'], { cwd, env })).toEqual({
      code: 0,
      stdout: `POST ${stack.info.url}/callbacks/recording -> 200 {"ok":true}\n`,
      stderr: '',
    });
    const emulated = await runCliHere(
      ['emulate', '--url', stack.info.url, '--recordings', '1', '--screenshots', '1', '--json', '--no-progress'],
      { cwd, env },
    );
    const { summary } = JSON.parse(emulated.stdout);
    expect({ code: emulated.code, refused: summary.status4xx }).toEqual({ code: 0, refused: 0 });
    await stack.stop();
  });
});

describe('logs of callbacks dev', () => {
  async function waitForOutput(stack: RunningDev, pattern: RegExp): Promise<string> {
    await stack.until(({ stdout }) => pattern.test(stdout), `output matching ${pattern}`);
    return stack.output().stdout.match(pattern)![0];
  }

  test.concurrent("not at a terminal: the functions' JSON lines, with the keys searched in CloudWatch", async () => {
    // In a child process: the lines as they leave it, and SIGTERM ends it with exit code 0.
    const stack = await dev(['--memory'], freshDir(), {}, { child: true });
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-json-log'))).status).toBe(200);
    await waitForOutput(stack, /"event":"callback_applied"[^\n]*\n/);
    const lines = stack
      .output()
      .stdout.split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    const request = lines.find((l) => l.event === 'callback_request');
    expect(request).toMatchObject({
      level: 'info',
      function: 'ingest',
      awsRequestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      coldStart: true,
      route: 'POST /callbacks/recording',
      id: 'rec-json-log',
      status: 200,
    });
    const applied = lines.find((l) => l.event === 'callback_applied');
    expect(applied).toMatchObject({ function: 'worker', awsRequestId: expect.any(String), coldStart: true });
    expect(applied.awsRequestId).not.toBe(request.awsRequestId);
    expect(await stack.stop()).toBe(0);
    expect(stack.output().stdout).toMatch(
      /Stopping: finishing the requests and batches in progress\.\.\.\nStopped\.\n$/,
    );
  });

  test('--log-format pretty: one readable line per callback', async () => {
    const stack = await dev(['--memory', '--log-format', 'pretty'], freshDir());
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-pretty-log'))).status).toBe(200);
    expect((await postSigned(stack.info.url, 'recording', startBody('rec-pretty-bad'), 'wrong')).status).toBe(401);
    const ok = await waitForOutput(stack, /^.*rec-pretty-log.*$/m);
    expect(ok.split(/\s{2,}/)).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d\.\d{3}$/),
      'POST /callbacks/recording',
      '200',
      'rec-pretty-log',
      '1 start',
      'valid',
      expect.stringMatching(/^\d+(\.\d+)? ms$/),
    ]);
    const refused = await waitForOutput(stack, /^.*rec-pretty-bad.*$/m);
    expect(refused.split(/\s{2,}/).slice(2)).toEqual([
      '401',
      'rec-pretty-bad',
      '1 start',
      'invalid',
      expect.stringMatching(/ ms$/),
      'invalid_signature',
    ]);
    expect(stack.output().stdout).not.toMatch(/^\{/m);
  });
});

describe('the command on a machine whose Node is older than 24', () => {
  const root = new URL('..', import.meta.url).pathname;
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  // The machine's own PATH: the one npm gave this run, without the project's node_modules/.bin (its pinned Node).
  const machinePath = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  // The machine's own Node (the project pins 24 for its scripts); found on that PATH or where it usually is.
  const candidates = [
    ...execFileSync('sh', ['-c', 'which -a node || true'], {
      encoding: 'utf8',
      env: { ...process.env, PATH: machinePath },
    }).split('\n'),
    '/usr/local/bin/node',
    '/usr/bin/node',
  ].filter((p) => p && existsSync(p));
  const oldNode = candidates.find(
    (p) => Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 24,
  );
  const npx = execFileSync('sh', ['-c', 'command -v npx || true'], {
    encoding: 'utf8',
    env: { ...process.env, PATH: machinePath },
  }).trim();

  (oldNode ? test.concurrent : test.concurrent.skip)(
    `bin/callbacks.js runs itself under the pinned Node, and prints nothing more (${oldNode ?? 'no old Node here'})`,
    async () => {
      expect(await runCli(['--version'], { cwd: freshDir(), node: oldNode! })).toEqual({
        code: 0,
        stdout: `${version}\n`,
        stderr: '',
      });
      // A command that loads the AWS SDK: no warning of the SDK about an old Node, one sentence.
      const stage = await runCli(['tasks', 'list', '--stage', 'x', '--region', 'eu-west-1'], {
        cwd: freshDir(),
        node: oldNode!,
      });
      expect(stage.code).toBe(1);
      expect(stage.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^callbacks: stage x in eu-west-1/)]);
    },
  );

  (oldNode && npx ? test.concurrent : test.concurrent.skip)(
    `npx callbacks printed ten lines of EBADENGINE warnings: a README command prints nothing else (${npx || 'no npx'})`,
    async () => {
      const cache = freshDir();
      // npm's settings of this run (npm_config_*, npm_package_*) are not a user's shell's.
      const env = Object.fromEntries(
        Object.entries(childEnv()).filter(([name]) => !name.startsWith('npm_') && name !== 'PATH'),
      );
      const npxRun = (args: string[]) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          execFile(
            npx,
            ['callbacks', ...args],
            {
              cwd: root,
              env: { ...env, PATH: machinePath, npm_config_cache: cache, npm_config_update_notifier: 'false' },
            },
            (err, stdout, stderr) =>
              resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
          );
        });
      // The first run of a fresh npm cache is the one npm checked the package's engines on.
      expect(await npxRun(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
      const help = await npxRun(['tasks', 'list', '--help']);
      expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: '' });
      expect(help.stdout).toMatch(/^Usage: callbacks tasks list/);
    },
    60_000,
  );
});
