// The soak's kill part: the whole local stack as an operator runs it, judged from outside. `callbacks dev` runs as a
// child process on a data folder of its own, with `--faults` (DynamoDB errors, worker crashes, SNS refusals), a
// short retry delay and a sweeper every few seconds, while the sender emulator sends the platform's traffic
// (duplicates, reordering, storage outages, failed starts) and resends what is not acknowledged with a 200, as the
// platform does. Meanwhile the child is SIGKILLed at random moments, some just after its worker applied a record
// (its batch in hand), some anywhere (a request in flight, a publish, a sweep), and started again on the same
// folder. Once the traffic is done and the stack idle, it is stopped and started without faults, the dead-letter
// queue is redriven with `callbacks dlq redrive --yes`, and nothing else is done (no recount). Then every task is
// judged against the contract (./kill-oracle.ts): its callbacks applied once each, the task equal to their fold
// and to the facts of time, its counts equal to its files, its events between MUST and MAY and true of it.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectedTaskEventsOf, expectedTasks } from '../../devkit/emulator/expect.ts';
import { generateRun, type ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { sendAll, type SendResult } from '../../devkit/emulator/sender.ts';
import { verifyEvents } from '../../devkit/verify/events.ts';
import { atClock, checkTimeEvents, DEFAULT_CLOCK_SETTINGS } from '../../devkit/verify/time-facts.ts';
import { verifyTasks } from '../../devkit/verify/verify.ts';
import { TaskQueries } from '../../lib/aws/dynamo/queries.ts';
import { TableReader } from '../../lib/aws/dynamo/table-client.ts';
import { EventQueueReader } from '../../lib/aws/sqs/event-queue.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { inParallel } from '../../lib/in-parallel.ts';
import { countsAgainstRecount } from '../reliability/support/counts-chaos.ts';
import { runCli } from '../support/cli-process.ts';
import { freePort, idle, nextLogLine, startStack, type StackRun } from './kill-stack.ts';
import { countProblems, eventFactProblems, ledgerProblems, owedCallbacks, taskOfProblem } from './kill-oracle.ts';

export interface KillOptions {
  callbacks: number;
  kills: number;
  /** `callbacks dev --faults` while the traffic runs. */
  faults: string;
  seed: string;
  retryDelayS: number;
  say: (line: string) => void;
}

export interface KillFigures {
  sent: number;
  acknowledged: number;
  distinctAcknowledged: number;
  /** Applied though never acknowledged: their answer was lost as the stack died. */
  appliedUnacknowledged: number;
  tasks: number;
  kills: { midBatch: number; anyMoment: number; starts: number };
  sender: { requests: number; networkErrors: number; status5xx: number; retried: number };
  /** Log events of every run of the stack, by name. */
  logEvents: Record<string, number>;
  deadLettered: number;
  redriven: number;
  quarantined: number;
  events: { must: number; distinct: number; received: number };
  problems: string[];
  /** Where the data, the logs and a trace per task with a problem were kept (null: removed, nothing to see). */
  keptIn: string | null;
  timings: { sendS: number; drainS: number; judgeS: number; totalS: number };
}

const APP_KEY = 'soak-kill';
const SECRET = 'soak-kill-secret-5b1e09';
const SETTLE_AFTER_S = 30;
const SWEEP_EVERY_S = 2;
/** How long the child may be down before it is started again, at most (a supervisor's restart). */
const MAX_DOWN_MS = 3000;
/** Tries per callback: the sender keeps resending while the stack is down, as the platform does. */
const MAX_ATTEMPTS = 40;
const APPLIED = '"event":"callback_applied"';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whole emulator runs (both services, duplicates, reordering, outages, failed starts) until there are enough. */
function killSends(seed: string, callbacks: number): ScheduledSend[] {
  const sends: ScheduledSend[] = [];
  for (let wave = 0; sends.length < callbacks; wave++) {
    const run = generateRun({
      seed: `${seed}-kill-${wave}`,
      recordings: 20,
      screenshots: 10,
      appKey: APP_KEY,
      compress: 3600,
      duplicates: 0.05,
      reorderWindowMs: 200,
      outage: 0.3,
      giveUp: 0.2,
      failedStarts: 0.05,
    });
    sends.push(...run.sends);
  }
  // Sorted by schedule, the runs interleave, as tasks of many rooms would.
  return sends.sort((a, b) => a.at - b.at);
}

export async function runKill(opts: KillOptions): Promise<KillFigures> {
  const started = Date.now();
  const random = createRandom(`${opts.seed}/kill`);
  const cwd = mkdtempSync(join(tmpdir(), 'callbacks-kill-'));
  const port = await freePort();
  const sends = killSends(opts.seed, opts.callbacks);
  const env = { CALLBACK_SECRETS: JSON.stringify({ [APP_KEY]: [SECRET] }) };
  const common = ['--retry-delay', `${opts.retryDelayS}s`, '--sweep-every', `${SWEEP_EVERY_S}s`];
  const settle = ['--settle-after', `${SETTLE_AFTER_S}s`];
  let starts = 0;
  const start = (faulted: boolean) => {
    starts += 1;
    const faults = faulted ? ['--faults', opts.faults, '--seed', `${opts.seed}/${starts}`] : [];
    return startStack({ cwd, port, env, name: `run-${starts}`, args: [...common, ...settle, ...faults] });
  };
  opts.say(`kill: ${sends.length} callbacks, ${opts.kills} kills, faults ${opts.faults}; data under ${cwd}`);
  let stack: StackRun = await start(true);
  const kills = { midBatch: 0, anyMoment: 0, starts: 0 };
  const killAndRestart = async (midBatch: boolean) => {
    const applied = midBatch ? await nextLogLine(stack.logFile, APPLIED, 30_000) : false;
    if (!midBatch) await sleep(random.int(0, 1000));
    await stack.kill();
    if (applied) kills.midBatch += 1;
    else kills.anyMoment += 1;
    await sleep(random.int(0, MAX_DOWN_MS));
    stack = await start(true);
    opts.say(`kill: SIGKILLed ${applied ? 'just after a record was applied' : 'at a random moment'}, started again`);
  };

  // --- the traffic, and kills while it runs; a third of the kills once it is sent, while the worker catches up ---
  const duringDrain = Math.max(1, Math.floor(opts.kills / 3));
  const whileSending = opts.kills - duringDrain;
  let done = 0;
  let sending = true;
  const sendStart = Date.now();
  const sender = sendAll({
    url: `http://127.0.0.1:${port}`,
    sends,
    random: createRandom(`${opts.seed}/kill-sender`),
    secret: SECRET,
    followSchedule: false,
    concurrency: 8,
    maxAttempts: MAX_ATTEMPTS,
    onProgress: (p) => {
      done = p.done;
    },
  }).finally(() => {
    sending = false;
  });
  let killed = 0;
  for (let i = 0; i < whileSending; i++) {
    const at = ((i + random.next()) / whileSending) * 0.9 * sends.length;
    while (sending && done < at) await sleep(20);
    if (!sending) break;
    await killAndRestart(i % 2 === 0);
    killed += 1;
  }
  const report = await sender;
  const sendS = (Date.now() - sendStart) / 1000;
  opts.say(`kill: sent in ${sendS.toFixed(0)} s, ${report.summary.delivered}/${sends.length} acknowledged`);
  const drainStart = Date.now();
  for (; killed < opts.kills; killed++) await killAndRestart(true);
  if (!(await idle(stack.target, Date.now() + 20 * 60_000))) opts.say('kill: the stack did not go idle under faults');

  // --- as an operator: restart without faults, redrive the dead letters once, wait; nothing else ---
  await stack.stop();
  stack = await start(false);
  const deadLettered = (await stack.target.dlq.depth()).visible;
  const redrive = await runCli(['dlq', 'redrive', '--yes', '--json'], { cwd, node: process.execPath, env });
  if (redrive.code !== 0) throw new Error(`callbacks dlq redrive failed: ${redrive.stderr || redrive.stdout}`);
  const redriven = (JSON.parse(redrive.stdout) as { moved: number }).moved;
  opts.say(`kill: ${deadLettered} dead letters, ${redriven} redriven; waiting for the stack to go idle`);
  const settled = await idle(stack.target, Date.now() + 10 * 60_000);
  const drainS = (Date.now() - drainStart) / 1000;

  const judgeStart = Date.now();
  const judged = await judge(stack, report.results, sendStart + sendS * 1000);
  if (!settled) judged.problems.unshift('the stack did not go idle after the redrive');
  const leftDead = (await stack.target.dlq.depth()).visible;
  if (leftDead > 0) judged.problems.unshift(`${leftDead} dead letters again after the redrive`);
  await stack.stop();

  const logEvents = countLogEvents(cwd);
  const keptIn = judged.problems.length > 0 ? cwd : null;
  if (keptIn) writeTraces(cwd, judged.problems, report.results, judged.events);
  else rmSync(cwd, { recursive: true, force: true });
  const acknowledged = report.results.filter((r) => r.delivered);
  return {
    sent: sends.length,
    acknowledged: acknowledged.length,
    distinctAcknowledged: new Set(acknowledged.map((r) => `${r.taskId} ${eventKey(r.body)}`)).size,
    appliedUnacknowledged: judged.appliedUnacknowledged,
    tasks: judged.tasks,
    kills: { ...kills, starts },
    sender: {
      requests: report.summary.requests,
      networkErrors: report.summary.networkErrors,
      status5xx: report.summary.status5xx,
      retried: report.summary.retried,
    },
    logEvents,
    deadLettered,
    redriven,
    quarantined: judged.quarantined,
    events: judged.eventFigures,
    problems: judged.problems,
    keptIn,
    timings: { sendS, drainS, judgeS: (Date.now() - judgeStart) / 1000, totalS: (Date.now() - started) / 1000 },
  };
}

/** Everything the idle stack holds, against the callbacks sent and what the sender was told. */
async function judge(stack: StackRun, results: readonly SendResult[], sendingEndedAt: number) {
  const { target } = stack;
  const byTask = new Map<string, SendResult[]>();
  for (const r of results) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r]);
  const problems: string[] = [];
  // The raw callbacks stored, task by task: each owed one once.
  const stored = new Set<string>();
  await inParallel([...byTask], 8, async ([id, sent]) => {
    const keys = (await target.tasks.listEvents(id, APP_KEY)).map((e) => e.key);
    for (const k of keys) stored.add(k);
    problems.push(...ledgerProblems(id, sent, keys));
  });
  const owed = owedCallbacks(results, stored);
  const expected = expectedTasks(owed);
  const clock = {
    ...DEFAULT_CLOCK_SETTINGS,
    settleAfterMs: SETTLE_AFTER_S * 1000,
    nowMs: Date.now(),
    runEndedAt: sendingEndedAt,
  };
  const verdict = await verifyTasks({
    expected,
    getTask: (id, appKey) => target.tasks.getTask(id, appKey),
    // Idle: what differs now differs for good.
    waitForDrain: async () => true,
    settleMs: 0,
    timeoutMs: 60_000,
    expectAt: (e, actual) => atClock(e, actual, clock),
  });
  problems.push(...verdict.diffs.flatMap((d) => d.lines));

  const rows = new Map<string, TaskSummary>();
  for await (const row of target.tasks.listTasks({ appKey: APP_KEY, since: 0 })) rows.set(row.id, row);
  const queries = new TaskQueries(new TableReader(target.dynamo, target.tableName), Date.now);
  await inParallel(expected, 8, async (e) => {
    const task = await target.tasks.getTask(e.id, e.appKey);
    if (task) problems.push(...countProblems(task, rows.get(e.id)));
    const recounted = await countsAgainstRecount(queries, e.id, e.appKey);
    if (recounted) problems.push(recounted);
  });

  const events: TaskEvent[] = [];
  const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl!);
  const must = expectedTaskEventsOf(owed);
  const check = await verifyEvents({
    expected: must,
    poll: async () => {
      const fresh = (await reader.poll()).map((m) => m.body as unknown as TaskEvent);
      events.push(...fresh);
      return fresh;
    },
    // The sweeper still runs: a fact may have come true since the tasks were read.
    time: (published) => checkTimeEvents(expected, published, { ...clock, nowMs: Date.now() }),
    timeoutMs: 30_000,
  });
  for (const m of check.missing) problems.push(`task ${m.taskId}: event missing (MUST): ${m.type} ${m.fileName ?? ''}`);
  for (const u of check.unexpected) problems.push(`task ${u.taskId}: event published outside MAY: ${u.type}`);
  for (const m of check.time?.missing ?? []) problems.push(`fact of time not published: ${m}`);
  for (const u of check.time?.unexpected ?? []) problems.push(`fact of time published wrongly: ${u}`);
  problems.push(...eventFactProblems(events, expected));

  let quarantined = 0;
  for await (const q of target.tasks.listQuarantine({ sinceDays: 2 })) {
    quarantined += 1;
    problems.push(`task ${q.taskId}: a callback set aside (${q.reason}): nothing invalid was sent`);
  }
  return {
    problems,
    events,
    tasks: expected.length,
    quarantined,
    appliedUnacknowledged: owed.length - results.filter((r) => r.delivered).length,
    eventFigures: {
      must: new Set(must.must.map((r) => r.id)).size,
      distinct: check.distinct,
      received: check.received,
    },
  };
}

/** The log events of every run of the stack in the folder, by name (`fault_injected` by kind too). */
function countLogEvents(cwd: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const file of readdirSync(cwd).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(cwd, file), 'utf8').split('\n')) {
      const event = /"event":"([^"]+)"/.exec(line)?.[1];
      if (!event) continue;
      const kind = event === 'fault_injected' ? /"kind":"([^"]+)"/.exec(line)?.[1] : undefined;
      const name = kind ? `${event} ${kind}` : event;
      counts[name] = (counts[name] ?? 0) + 1;
    }
  }
  return counts;
}

/**
 * A trace per task a problem names, under `<cwd>/traces/`: its callbacks as sent (in the order sent, with what the
 * sender was told), every log line of every run of the stack that names it, and the events published about it.
 */
function writeTraces(cwd: string, problems: readonly string[], results: readonly SendResult[], events: TaskEvent[]) {
  const ids = new Set(results.map((r) => r.taskId));
  const named = [...new Set(problems.map((p) => taskOfProblem(p, ids)).filter((id) => id !== null))];
  const logs = readdirSync(cwd)
    .filter((f) => f.endsWith('.log'))
    .sort((a, b) => Number(a.replace(/\D/g, '')) - Number(b.replace(/\D/g, '')))
    .map((f) => ({ f, lines: readFileSync(join(cwd, f), 'utf8').split('\n') }));
  mkdirSync(join(cwd, 'traces'), { recursive: true });
  for (const id of named.slice(0, 20)) {
    const out = [`problems:`, ...problems.filter((p) => taskOfProblem(p, ids) === id), '', 'sent:'];
    for (const r of results.filter((x) => x.taskId === id)) {
      const o = r.body.output as Record<string, unknown> | undefined;
      out.push(
        `  type ${String(r.body.type)} code ${String(r.body.code)} at ${String(r.body.timestamp)} ` +
          `file ${String(o?.fileName ?? '-')} state ${String(o?.fileState ?? '-')}` +
          `${r.duplicate ? ' (duplicate)' : ''} -> ${r.delivered ? 'acknowledged' : `not acknowledged (${r.error})`}` +
          ` after ${r.attempts} attempts, key ${eventKey(r.body)}`,
      );
    }
    out.push('', 'log lines:');
    for (const { f, lines } of logs) for (const line of lines) if (line.includes(id)) out.push(`  ${f}: ${line}`);
    out.push('', 'events:');
    for (const e of events.filter((x) => x.task.id === id))
      out.push(
        `  ${e.type} seq ${e.sequence} ${e.task.status} ${JSON.stringify(e.task.files)} ${e.file?.fileName ?? ''}`,
      );
    writeFileSync(join(cwd, 'traces', `${id}.txt`), `${out.join('\n')}\n`);
  }
}

/** The part of test/soak/RESULTS.md these figures make. */
export function killMarkdown(f: KillFigures, opts: Omit<KillOptions, 'say'>): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  const log = (name: string) => n(f.logEvents[name] ?? 0);
  const rows: [string, string][] = [
    ['callbacks sent (duplicates included) / acknowledged with a 200', `${n(f.sent)} / ${n(f.acknowledged)}`],
    [
      'distinct callbacks acknowledged / applied though never acknowledged',
      `${n(f.distinctAcknowledged)} / ${n(f.appliedUnacknowledged)}`,
    ],
    ['tasks judged', n(f.tasks)],
    [
      'SIGKILLs: just after a record was applied / at a random moment / starts of the stack',
      `${n(f.kills.midBatch)} / ${n(f.kills.anyMoment)} / ${n(f.kills.starts)}`,
    ],
    [
      'sender: requests / network errors / 5xx answers / resends',
      `${n(f.sender.requests)} / ${n(f.sender.networkErrors)} / ${n(f.sender.status5xx)} / ${n(f.sender.retried)}`,
    ],
    [
      'faults injected: DynamoDB / worker crashes / SNS refusals',
      `${log('fault_injected dynamo')} / ${log('fault_injected crash')} / ${log('fault_injected sns')}`,
    ],
    [
      'dead letters after the traffic / redriven (`callbacks dlq redrive --yes`), then nothing else',
      `${n(f.deadLettered)} / ${n(f.redriven)}`,
    ],
    ['quarantined', n(f.quarantined)],
    [
      'task events: expected (MUST) / distinct published / messages received',
      `${n(f.events.must)} / ${n(f.events.distinct)} / ${n(f.events.received)}`,
    ],
    ['**problems**', `**${n(f.problems.length)}**`],
    [
      'time: sending / draining, redrive included / judging / wall',
      `${f.timings.sendS.toFixed(0)} s / ${f.timings.drainS.toFixed(0)} s / ${f.timings.judgeS.toFixed(0)} s / ` +
        `${f.timings.totalS.toFixed(0)} s`,
    ],
  ];
  return [
    `\`callbacks dev\` as a child process on a data folder, \`--faults ${opts.faults}\`, \`--retry-delay ` +
      `${opts.retryDelayS}s --sweep-every ${SWEEP_EVERY_S}s --settle-after ${SETTLE_AFTER_S}s\`, SIGKILLed and ` +
      'started again on its folder while the sender emulator sends (and resends what is not acknowledged); then ' +
      'started without faults, `callbacks dlq redrive --yes`, idle, and nothing else. Judged from outside: every ' +
      'acknowledged callback stored once, every task equal to the fold of its callbacks and the facts of time, its ' +
      'counts (listing, header against a recount of its items) equal to its files, events between MUST and MAY, ' +
      'every fact an event reports stored, nothing quarantined, no dead letter left.',
    '',
    '| Figure | Value |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
  ];
}
