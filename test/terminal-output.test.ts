// The human output on a real terminal, with colours on: a pseudo-terminal (`script`) in front of the command run
// as a user runs it. Colour codes used to be printed as literal text (`\x1b[33m...`) wherever a coloured part was
// joined into a field or a cell by a plain template string: the quarantine line of `status`, the stalled and
// settled statuses of `tasks list`, the IAM line of the `dev` banner. On a terminal they must colour; piped, the
// same commands print no escape of either kind.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalStack, type LocalStack } from '../devkit/local/stack.ts';
import { openTarget, type Target } from '../devkit/local/target.ts';
import { TableClient } from '../lib/aws/dynamo/table/table-client.ts';
import { TaskSweeps } from '../lib/aws/dynamo/time/task-sweeps.ts';
import { defaultTimeSettings } from '../lib/domain/deadlines.ts';
import { createLogger, setLogSink } from '../lib/log.ts';
import { sweep } from '../lib/sweeper/sweep.ts';
import { postSigned, runCli } from './support/cli-process.ts';
import { eventually } from './support/eventually.ts';
import { hasScript, onTerminal } from './support/terminal.ts';

type Body = Record<string, unknown>;
const fixture = (name: string): Body =>
  JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8')) as Body;

/** An SGR escape as a terminal gets it, and the same written out as text (what the defect printed). */
const ESCAPE = '\u001b[';
const ESCAPE_AS_TEXT = /\\x1b|\\u001b/;

let cwd: string;
let stack: LocalStack;
let target: Target;
let restoreSink: ReturnType<typeof setLogSink>;

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'callbacks-terminal-'));
  restoreSink = setLogSink(() => {});
  // Report mode, so that an unsigned callback is quarantined; new tasks armed at once (SETTLE_AFTER of 1 ms) and
  // swept here, not on a schedule.
  stack = await startLocalStack({
    port: 0,
    memory: true,
    cwd,
    quiet: true,
    signatureMode: 'report',
    scheduleEveryMs: 0,
    settleAfter: '1ms',
  });
  target = await openTarget({ cwd, env: {} });
  const hourAgo = Date.now() - 3_600_000;
  // A recording completed an hour ago (settled by the sweep), a screenshot task silent for an hour (stalled).
  const rec = (name: string, at: number, output: Body) => ({
    ...fixture(name),
    recordId: 'rec-terminal',
    timestamp: at,
    output,
  });
  const fileName = 'room-terminal_1.mp4';
  for (const body of [
    rec('recording-1-start-mix', hourAgo, { fileName }),
    rec('recording-3-end', hourAgo + 60_000, { fileName, fileSize: 1024 }),
    rec('recording-4-upload-ok', hourAgo + 70_000, { fileName, fileUrl: `https://storage.example.com/${fileName}` }),
  ])
    expect((await postSigned(stack.url, 'recording', body)).status).toBe(200);
  const img = { ...fixture('screenshot-1-start'), imageId: 'img-terminal', timestamp: hourAgo };
  expect((await postSigned(stack.url, 'screenshot', img)).status).toBe(200);
  // Unsigned: accepted in report mode, then set aside.
  const unsigned = await fetch(`${stack.url}/callbacks/screenshot`, {
    method: 'POST',
    body: JSON.stringify({ ...img, imageId: 'img-unsigned' }),
  });
  expect(unsigned.status).toBe(200);
  await eventually(
    'the tasks applied and the unsigned callback quarantined',
    async () => {
      const [recTask, imgTask] = await Promise.all([
        target.tasks.getTask('rec-terminal'),
        target.tasks.getTask('img-terminal'),
      ]);
      let quarantined = 0;
      for await (const _ of target.tasks.listQuarantine({ sinceDays: 1 })) quarantined++;
      return { rec: recTask?.eventCount, img: imgTask?.eventCount, quarantined };
    },
    (seen) => seen.rec === 3 && seen.img === 1 && seen.quarantined === 1,
  );
  // A sweep as the sweeper would run it six minutes from now (a task's last change is kept in whole minutes, rounded
  // up, so its settle is due within the next bucket): the screenshot task stalls, the recording settles.
  const swept = await sweep(Date.now() + 6 * 60_000, {
    sweeps: new TaskSweeps(new TableClient(stack.tableClient(), stack.info.tableName)),
    events: { publish: async () => {} },
    time: { ...defaultTimeSettings, settleAfterMs: 1 },
    log: createLogger('test'),
    lookBackMs: 2 * 3_600_000,
  });
  expect(swept).toMatchObject({ stalled: 1, settled: 1 });
}, 120_000);

afterAll(async () => {
  await target?.close();
  await stack?.stop();
  setLogSink(restoreSink);
  await rm(cwd, { recursive: true, force: true });
});

const terminalTest = hasScript ? test : test.skip;

terminalTest('status: the quarantine line is coloured on a terminal, not printed as escape codes', async () => {
  const shown = await onTerminal(['status'], cwd);
  const line = shown.split('\n').find((l) => l.includes('quarantine'))!;
  expect(line).not.toMatch(ESCAPE_AS_TEXT);
  expect(line).toContain(
    `${ESCAPE}33m1 callback${ESCAPE}39m waiting, received in the last 7 days: missing_signature 1`,
  );
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
});

terminalTest('tasks list: the stalled and settled statuses are coloured, not printed as escape codes', async () => {
  const shown = await onTerminal(['tasks', 'list'], cwd);
  expect(shown).not.toMatch(ESCAPE_AS_TEXT);
  const row = (id: string) => shown.split('\n').find((l) => l.includes(id))!;
  expect(row('img-terminal')).toMatch(/\u001b\[33mstalled \d+ min\u001b\[39m/);
  expect(row('rec-terminal')).toContain(`${ESCAPE}2msettled${ESCAPE}22m`);
});

terminalTest(
  'dev: the banner is coloured, its IAM line too, and Ctrl-C stops it',
  async () => {
    const devCwd = await mkdtemp(join(tmpdir(), 'callbacks-terminal-dev-'));
    try {
      const shown = await onTerminal(['dev', '--port', '0', '--memory', '--quiet'], devCwd, {
        ready: 'Ctrl-C stops the stack.',
        typed: '\u0003',
      });
      expect(shown).toContain('Stopped.');
      expect(shown).not.toMatch(ESCAPE_AS_TEXT);
      const iam = shown.split('\n').find((l) => l.includes('IAM'))!;
      expect(iam).toMatch(/each function's calls checked against its role \u001b\[2m\(template [0-9a-f]+\)\u001b\[22m/);
    } finally {
      await rm(devCwd, { recursive: true, force: true });
    }
  },
  60_000,
);

test('piped, the same commands print no escape, as codes or as text', async () => {
  for (const args of [['status'], ['tasks', 'list']]) {
    const run = await runCli(args, { cwd });
    expect({ args, code: run.code }).toEqual({ args, code: 0 });
    expect(run.stdout).not.toContain('\u001b');
    expect(run.stdout).not.toMatch(ESCAPE_AS_TEXT);
  }
});
