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
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expectedTaskEventsOf, expectedTasks } from '../../devkit/emulator/expect.ts';
import { generateRun, type ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { createRandom, type Random } from '../../devkit/emulator/random.ts';
import { sendAll, type SendResult } from '../../devkit/emulator/sender.ts';
import { verifyEvents } from '../../devkit/verify/events.ts';
import { atClock, checkTimeEvents, DEFAULT_CLOCK_SETTINGS } from '../../devkit/verify/time-facts.ts';
import { verifyTasks } from '../../devkit/verify/verify.ts';
import { TaskQueries } from '../../lib/aws/dynamo/read/queries.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { EventQueueReader } from '../../lib/aws/sqs/event-queue.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import type { TaskEvent } from '../../lib/domain/task-events.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { inParallel } from '../../lib/in-parallel.ts';
import { countsAgainstRecount } from '../reliability/support/counts-chaos.ts';
import { runCli } from '../support/cli-process.ts';
import { freePort, idle, nextLogLine, startStack, type StackRun } from './kill-stack.ts';
import { countLogEvents, writeTraces } from './kill-traces.ts';
import { countProblems, eventFactProblems, ledgerProblems, owedCallbacks } from './kill-oracle.ts';

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

/** The child stack of a run: started, killed and started again on one folder and port. */
class Stacks {
  current: StackRun | null = null;
  starts = 0;
  readonly kills = { midBatch: 0, anyMoment: 0 };
  readonly cwd = mkdtempSync(join(tmpdir(), 'callbacks-kill-'));
  readonly env = { CALLBACK_SECRETS: JSON.stringify({ [APP_KEY]: [SECRET] }) };
  private readonly opts: KillOptions;
  private readonly port: number;
  private readonly random: Random;

  constructor(opts: KillOptions, port: number) {
    this.opts = opts;
    this.port = port;
    this.random = createRandom(`${opts.seed}/kill`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The stack, with faults (each start drawing its own, from the run's seed) or without. */
  async start(faulted: boolean): Promise<StackRun> {
    this.starts += 1;
    const { opts } = this;
    const faults = faulted ? ['--faults', opts.faults, '--seed', `${opts.seed}/${this.starts}`] : [];
    const args = ['--retry-delay', `${opts.retryDelayS}s`, '--sweep-every', `${SWEEP_EVERY_S}s`];
    args.push('--settle-after', `${SETTLE_AFTER_S}s`, ...faults);
    const run = await startStack({ cwd: this.cwd, port: this.port, env: this.env, name: `run-${this.starts}`, args });
    this.current = run;
    return run;
  }

  /** SIGKILL just after the worker applies a record (its batch in hand), or at a random moment; a start after. */
  async killAndRestart(midBatch: boolean): Promise<void> {
    const stack = this.current!;
    const applied = midBatch ? await nextLogLine(stack.logFile, APPLIED, 30_000) : false;
    if (!midBatch) await sleep(this.random.int(0, 1000));
    this.current = null;
    await stack.kill();
    if (applied) this.kills.midBatch += 1;
    else this.kills.anyMoment += 1;
    await sleep(this.random.int(0, MAX_DOWN_MS));
    await this.start(true);
    this.opts.say(`kill: SIGKILLed ${applied ? 'just after a record was applied' : 'at a random moment'}, started`);
  }

  /** Ctrl-C: what is in hand finishes. */
  async stop(): Promise<void> {
    const stack = this.current;
    this.current = null;
    await stack?.stop();
  }
}

export async function runKill(opts: KillOptions): Promise<KillFigures> {
  const started = Date.now();
  const stacks = new Stacks(opts, await freePort());
  const sends = killSends(opts.seed, opts.callbacks);
  opts.say(`kill: ${sends.length} callbacks, ${opts.kills} kills, faults ${opts.faults}; data under ${stacks.cwd}`);
  try {
    await stacks.start(true);
    const traffic = await sendWhileKilling(stacks, sends, opts);
    const drainStart = Date.now();
    // The rest of the kills while the worker catches up.
    for (let k = traffic.killed; k < opts.kills; k++) await stacks.killAndRestart(true);
    const idleUnderFaults = await idle(stacks.current!.target, Date.now() + 20 * 60_000);

    // As an operator: restart without faults, redrive the dead letters once, wait until idle; nothing else.
    await stacks.stop();
    const stack = await stacks.start(false);
    const deadLettered = (await stack.target.dlq.depth()).visible;
    const redrive = await runCli(['dlq', 'redrive', '--yes', '--json'], {
      cwd: stacks.cwd,
      node: process.execPath,
      env: stacks.env,
      // Thousands of dead letters, each sent and deleted, on busy cores.
      timeoutMs: 15 * 60_000,
    });
    if (redrive.code !== 0)
      throw new Error(`callbacks dlq redrive failed (${redrive.code}): ${redrive.stderr || redrive.stdout}`);
    const redriven = (JSON.parse(redrive.stdout) as { moved: number }).moved;
    opts.say(`kill: ${deadLettered} dead letters, ${redriven} redriven; waiting for the stack to go idle`);
    const idleAfterRedrive = await idle(stack.target, Date.now() + 10 * 60_000);
    const drainS = (Date.now() - drainStart) / 1000;

    const judgeStart = Date.now();
    const judged = await judge(stack, traffic.report.results, traffic.endedAt);
    const leftDead = (await stack.target.dlq.depth()).visible;
    if (leftDead > 0) judged.problems.unshift(`${leftDead} dead letters again after the redrive`);
    if (!idleAfterRedrive) judged.problems.unshift('the stack did not go idle after the redrive');
    if (!idleUnderFaults) judged.problems.unshift('the stack did not go idle under faults in 20 minutes');
    const { results, summary } = traffic.report;
    const keptIn = judged.problems.length > 0 ? stacks.cwd : null;
    if (keptIn) {
      const stored = (id: string) => stack.target.tasks.getTask(id, APP_KEY);
      await writeTraces(stacks.cwd, judged.problems, results, judged.events, { expected: judged.expected, stored });
    }
    await stacks.stop();
    const logEvents = countLogEvents(stacks.cwd);
    if (!keptIn) rmSync(stacks.cwd, { recursive: true, force: true });
    const acknowledged = results.filter((r) => r.delivered);
    return {
      sent: sends.length,
      acknowledged: acknowledged.length,
      distinctAcknowledged: new Set(acknowledged.map((r) => `${r.taskId} ${eventKey(r.body)}`)).size,
      appliedUnacknowledged: judged.appliedUnacknowledged,
      tasks: judged.tasks,
      kills: { ...stacks.kills, starts: stacks.starts },
      sender: {
        requests: summary.requests,
        networkErrors: summary.networkErrors,
        status5xx: summary.status5xx,
        retried: summary.retried,
      },
      logEvents,
      deadLettered,
      redriven,
      quarantined: judged.quarantined,
      events: judged.eventFigures,
      problems: judged.problems,
      keptIn,
      timings: {
        sendS: traffic.sendS,
        drainS,
        judgeS: (Date.now() - judgeStart) / 1000,
        totalS: (Date.now() - started) / 1000,
      },
    };
  } finally {
    // A run that failed half-way leaves no stack behind (its folder stays, to be looked at).
    await stacks.current?.kill();
  }
}

/**
 * The traffic, sent as fast as 8 requests at a time go, resent while the stack is down; two thirds of the kills at
 * random points of it (a third at least is left for the worker's catching up).
 */
async function sendWhileKilling(stacks: Stacks, sends: ScheduledSend[], opts: KillOptions) {
  const random = createRandom(`${opts.seed}/kill-moments`);
  const whileSending = opts.kills - Math.max(1, Math.floor(opts.kills / 3));
  let done = 0;
  let sending = true;
  const sendStart = Date.now();
  const sender = sendAll({
    url: stacks.url,
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
    await stacks.killAndRestart(i % 2 === 0);
    killed += 1;
  }
  const report = await sender;
  const endedAt = Date.now();
  const sendS = (endedAt - sendStart) / 1000;
  opts.say(`kill: sent in ${sendS.toFixed(0)} s, ${report.summary.delivered}/${sends.length} acknowledged`);
  return { report, killed, sendS, endedAt };
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
      // Task events only: the storage events of the verifier's incidents (the run's failed uploads) name no task.
      const fresh = (await reader.poll())
        .map((m) => m.body as unknown as TaskEvent)
        .filter((e) => e.task !== undefined);
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
    expected,
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
