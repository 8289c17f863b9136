// `npm run soak`: a long run of the whole receiver as `callbacks dev` runs it (devkit/local/stack.ts in this
// process: HTTP gateway, the deployed ingest and worker handlers, fauxqs, dynalite), fed by the sender
// emulator with duplicates, reordering and storage outages, while faults are injected: random DynamoDB
// errors, DynamoDB outages, SQS outages at ingest. Then the dead-letter queue is redriven (as an operator
// would, once the faults are over) and every task is verified. Reports sent, acknowledged, stored,
// quarantined, lost (must be 0), the task events published against the expected ones (none missing,
// none outside MAY) and the process's peak memory, and writes test/soak/RESULTS.md.
//
// Two more parts run after it, each in a module of its own: the header counts' chaos run over thousands of
// seeds (chaos.ts), and a screenshot task of 100,000 images with a day-long recording of 1,440 slices fed
// through the worker's batch path (large-tasks.ts), and the receiver over several simulated days on a fake clock,
// its facts of time checked against a brute force at each midnight (days.ts), and `callbacks dev` as a child process
// under `--faults`, SIGKILLed and restarted on its data folder while it takes traffic, judged from outside once its
// dead letters are redriven (kill.ts). `--parts` picks among them;
// RESULTS.md keeps one section per part, and a run rewrites the sections of the parts it ran only.
//
//   node test/soak/run.ts [--callbacks 100000] [--images 50000] [--memory] [--concurrency 16]
//                         [--error-rate 0.002] [--retry-delay 5] [--seed soak] [--max-minutes 60] [--no-results]
//                         [--parts receiver,chaos,large,days] [--chaos-seeds 2000] [--large-images 100000] [--hours 24]
//                         [--days 16] [--tasks-per-day 48] [--lose 0.1] [--stall 0.1] [--outage-hours 6]
//                         [--days-trace <task id>] [--kill-callbacks 2000] [--kills 6]
//                         [--kill-faults dynamo=0.03,crash=0.02,sns=0.05] [--kill-retry-delay 1]
//   node test/soak/run.ts --sized-tests   (instead of the long run: npm test's sized tests at full size)
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openLocal, type Target } from '../../devkit/local/target.ts';
import { redriveDeadLetters } from '../../lib/aws/sqs/dlq.ts';
import { eventKey } from '../../lib/domain/canonical.ts';
import { EventQueueReader } from '../../lib/aws/sqs/event-queue.ts';
import { expectedTaskEventsOf, expectedTasks } from '../../devkit/emulator/expect.ts';
import { verifyEvents } from '../../devkit/verify/events.ts';
import { generateRun, type ScheduledSend } from '../../devkit/emulator/lifecycles.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { sendAll, type SendResult, type SendSummary } from '../../devkit/emulator/sender.ts';
import { startLocalStack, type LocalStack } from '../../devkit/local/stack.ts';
import { setLogSink } from '../../lib/log.ts';
import { verifyTasks } from '../../devkit/verify/verify.ts';
import { chaosMarkdown, runChaosSeeds } from './chaos.ts';
import { imageTaskSends } from './images.ts';
import { runSizedTests } from './sized-tests.ts';
import { largeTasksMarkdown, runLargeTasks } from './large-tasks.ts';
import { daysMarkdown, runDays } from './days.ts';
import { killMarkdown, runKill } from './kill.ts';
import { writeSections } from './results-file.ts';
import { installFaults, type FaultCounts } from './inject.ts';
import { inParallel } from '../../lib/in-parallel.ts';

/** The parts of the soak, in the order they run and RESULTS.md lists them. */
const PARTS = ['receiver', 'chaos', 'large', 'days', 'kill'] as const;
type Part = (typeof PARTS)[number];
const SECTION: Record<Part, string> = {
  receiver: 'The whole receiver under faults',
  chaos: 'Header counts under chaos',
  large: 'Large tasks',
  days: 'Days on a fake clock',
  kill: 'The whole stack killed and restarted',
};

const { values: args } = parseArgs({
  options: {
    callbacks: { type: 'string', default: '100000' },
    images: { type: 'string', default: '50000' },
    memory: { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '16' },
    'error-rate': { type: 'string', default: '0.002' },
    seed: { type: 'string', default: 'soak' },
    'max-minutes': { type: 'string', default: '60' },
    'retry-delay': { type: 'string', default: '5' },
    'no-results': { type: 'boolean', default: false },
    'sized-tests': { type: 'boolean', default: false },
    parts: { type: 'string', default: PARTS.join(',') },
    'chaos-seeds': { type: 'string', default: '2000' },
    'large-images': { type: 'string', default: '100000' },
    hours: { type: 'string', default: '24' },
    days: { type: 'string', default: '16' },
    'tasks-per-day': { type: 'string', default: '48' },
    lose: { type: 'string', default: '0.1' },
    stall: { type: 'string', default: '0.1' },
    'outage-hours': { type: 'string', default: '6' },
    'days-trace': { type: 'string' },
    'kill-callbacks': { type: 'string', default: '2000' },
    kills: { type: 'string', default: '6' },
    'kill-faults': { type: 'string', default: 'dynamo=0.03,crash=0.02,sns=0.05' },
    'kill-retry-delay': { type: 'string', default: '1' },
  },
});

const count = (name: string, value: string | undefined, min = 0): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer of at least ${min}, got ${value}`);
  return n;
};
const CALLBACKS = count('callbacks', args.callbacks);
const IMAGES = count('images', args.images);
const CONCURRENCY = count('concurrency', args.concurrency, 1);
const ERROR_RATE = Number(args['error-rate']);
if (!(ERROR_RATE >= 0 && ERROR_RATE < 0.2)) throw new Error('--error-rate must be between 0 and 0.2');
const MAX_MS = count('max-minutes', args['max-minutes'], 1) * 60_000;
const SEED = args.seed!;
/** Seconds before a failed record comes back (deployed: the 180 s visibility time-out; `callbacks dev`: 10 s). */
const RETRY_DELAY_S = count('retry-delay', args['retry-delay']);
const CHAOS_SEEDS = count('chaos-seeds', args['chaos-seeds'], 1);
const LARGE_IMAGES = count('large-images', args['large-images'], 1);
const HOURS = count('hours', args.hours, 1);
const DAYS = count('days', args.days, 1);
const TASKS_PER_DAY = count('tasks-per-day', args['tasks-per-day'], 1);
const rate = (name: 'lose' | 'stall'): number => {
  const r = Number(args[name]);
  if (!(r >= 0 && r <= 1)) throw new Error(`--${name} must be a probability between 0 and 1, got ${args[name]}`);
  return r;
};
const OUTAGE_HOURS = count('outage-hours', args['outage-hours']);
const KILL_CALLBACKS = count('kill-callbacks', args['kill-callbacks'], 1);
const KILLS = count('kills', args.kills);
const KILL_RETRY_DELAY_S = count('kill-retry-delay', args['kill-retry-delay']);
const LOSE = rate('lose');
const STALL = rate('stall');
const parts = args.parts!.split(',').map((p) => p.trim());
for (const p of parts)
  if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--parts takes ${PARTS.join(', ')}; got ${p}`);
const runs = (part: Part) => parts.includes(part);

const APP_KEY = 'soak-app';
const SECRET = 'soak-secret-0f9a77c3';
/** Callbacks handed to the sender at a time: between chunks the deadline is checked. */
const CHUNK = 5000;
/** Where in the run (fraction of the sends) each outage starts, and how long it lasts. */
const DYNAMO_OUTAGES = [0.2, 0.5, 0.8];
const DYNAMO_OUTAGE_MS = 2000;
const SQS_OUTAGES = [0.35, 0.65];
const SQS_OUTAGE_MS = 1500;

const started = Date.now();
const deadline = started + MAX_MS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (line: string) =>
  process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s] ${line}\n`);
const mb = (kb: number) => Math.round(kb / 1024);

// ---------------------------------------------------------------------------------------------------
// The callbacks: emulator runs (both services, duplicates, reordering, storage outages, failed starts),
// interleaved, plus one screenshot task with IMAGES images spread evenly among them.

function buildSends(): { sends: ScheduledSend[]; imageTaskId: string | null; waves: number } {
  const waves: ScheduledSend[][] = [];
  let total = 0;
  while (total < CALLBACKS) {
    const run = generateRun({
      seed: `${SEED}-${waves.length}`,
      recordings: 200,
      screenshots: 100,
      appKey: APP_KEY,
      compress: 3600,
      duplicates: 0.05,
      reorderWindowMs: 200,
      outage: 0.3,
      giveUp: 0.2,
      failedStarts: 0.05,
    });
    waves.push(run.sends);
    total += run.sends.length;
  }
  // All waves start at 0: sorting by schedule interleaves them, as tasks of many rooms would be.
  const callbacks = waves
    .flat()
    .sort((a, b) => a.at - b.at)
    .slice(0, CALLBACKS);
  if (IMAGES === 0) return { sends: callbacks, imageTaskId: null, waves: waves.length };
  const imageTaskId = `img-soak-${SEED.replace(/[^A-Za-z0-9]/g, '')}-${started.toString(36)}`;
  const images = imageTaskSends({
    images: IMAGES,
    appKey: APP_KEY,
    taskId: imageTaskId,
    baseTime: started - (IMAGES + 10) * 5000,
    random: createRandom(`${SEED}/images`),
  });
  const sends: ScheduledSend[] = [];
  let next = 0;
  callbacks.forEach((s, i) => {
    sends.push(s);
    while (next < images.length && next * callbacks.length <= (i + 1) * images.length) sends.push(images[next++]!);
  });
  while (next < images.length) sends.push(images[next++]!);
  return { sends, imageTaskId, waves: waves.length };
}

// ---------------------------------------------------------------------------------------------------

async function drained(stack: LocalStack, target: Target, until: number, settleMs = 3000): Promise<boolean> {
  let quietSince: number | null = null;
  while (Date.now() < until) {
    const depth = await target.queue.depth().catch(() => null);
    const idle = depth !== null && depth.visible + depth.inFlight + depth.delayed === 0 && stack.poller.busy() === 0;
    if (idle) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= settleMs) return true;
    } else quietSince = null;
    await sleep(250);
  }
  return false;
}

interface Figures {
  sent: number;
  acknowledged: number;
  unacknowledged: number;
  duplicatesSent: number;
  distinctAcknowledged: number;
  stored: number;
  quarantined: number;
  lost: number;
  tasks: number;
  tasksMatching: number;
  /** Task events: expected (MUST), distinct published, missing, outside MAY, messages received. */
  events: { must: number; distinct: number; missing: number; unexpected: number; received: number };
  imageTask: { images: number; files: number; eventCount: number; status: string } | null;
  deadLettered: number;
  redriven: number;
  sender: Pick<
    SendSummary,
    'requests' | 'status2xx' | 'status4xx' | 'status5xx' | 'networkErrors' | 'timeouts' | 'retried'
  >;
  faults: FaultCounts;
  worker: { recordFailures: number; batchFailures: number; records: number; batches: number };
  logEvents: Record<string, number>;
  timings: { sendS: number; drainS: number; verifyS: number; totalS: number };
  peakRssMb: number;
  stoppedEarly: boolean;
}

/** The whole receiver under faults: its exit code and its section of RESULTS.md. */
async function receiverPart(): Promise<{ code: number; section: string[] }> {
  const random = createRandom(`${SEED}/faults`);
  const faults = installFaults(random, 0);
  const dir = mkdtempSync(join(tmpdir(), 'callbacks-soak-'));
  const { sends, imageTaskId, waves } = buildSends();
  say(
    `${sends.length} callbacks to send (${CALLBACKS} from ${waves} emulator runs, ${sends.length - CALLBACKS} for ` +
      `one task of ${IMAGES} images); data ${args.memory ? 'in memory' : `under ${dir}`}`,
  );

  const stack = await startLocalStack({
    port: 0,
    cwd: dir,
    memory: args.memory,
    dataDir: join(dir, '.data'),
    quiet: true,
    retryDelaySeconds: RETRY_DELAY_S,
    secrets: { [APP_KEY]: [SECRET] },
    signatureMode: 'enforce',
  });
  // The stack's log lines are counted by event, not printed.
  const logEvents: Record<string, number> = {};
  const previousSink = setLogSink((line) => {
    const event = /"event":"([^"]+)"/.exec(line)?.[1] ?? '?';
    logEvents[event] = (logEvents[event] ?? 0) + 1;
  });
  const target = openLocal(stack.info);
  let stoppedEarly = false;
  const results: SendResult[] = [];
  const summaries: SendSummary[] = [];
  const timings = { sendS: 0, drainS: 0, verifyS: 0, totalS: 0 };

  try {
    // --- send, with faults ---------------------------------------------------------------------------
    faults.errorRate = ERROR_RATE;
    const pendingOutages = [
      ...DYNAMO_OUTAGES.map((at) => ({ at, start: () => faults.dynamoOutage(DYNAMO_OUTAGE_MS) })),
      ...SQS_OUTAGES.map((at) => ({ at, start: () => faults.sqsOutage(SQS_OUTAGE_MS) })),
    ].sort((a, b) => a.at - b.at);
    const sendStart = Date.now();
    let lastReport = 0;
    for (let offset = 0; offset < sends.length; offset += CHUNK) {
      if (Date.now() > deadline) {
        stoppedEarly = true;
        say(`time is up: ${sends.length - offset} callbacks not sent`);
        break;
      }
      const chunk = sends.slice(offset, offset + CHUNK);
      const report = await sendAll({
        url: stack.url,
        sends: chunk,
        random: createRandom(`${SEED}/sender/${offset}`),
        secret: SECRET,
        followSchedule: false,
        concurrency: CONCURRENCY,
        maxAttempts: 8,
        onProgress: (p) => {
          const fraction = (offset + p.done) / sends.length;
          while (pendingOutages.length && pendingOutages[0]!.at <= fraction) pendingOutages.shift()!.start();
          if (Date.now() - lastReport > 10_000) {
            lastReport = Date.now();
            const s = stack.poller.stats;
            say(
              `sent ${offset + p.done}/${sends.length}, acknowledged ` +
                `${results.filter((r) => r.delivered).length + p.delivered}, worker applied ${s.succeeded} records ` +
                `(${s.failed} failed deliveries), rss ${mb(process.resourceUsage().maxRSS)} MB`,
            );
          }
        },
      });
      results.push(...report.results);
      summaries.push(report.summary);
    }
    timings.sendS = (Date.now() - sendStart) / 1000;
    say(`sending done in ${timings.sendS.toFixed(0)} s; waiting for the queue to drain`);

    // --- drain, end the faults, redrive the dead-letter queue --------------------------------------------
    const drainStart = Date.now();
    await drained(stack, target, deadline);
    faults.stop();
    await drained(stack, target, deadline + 120_000);
    const deadLettered = (await target.dlq.depth()).visible;
    let redriven = 0;
    if (deadLettered > 0) {
      say(`${deadLettered} messages in the dead-letter queue: redriving them now that the faults are over`);
      const { queueUrl, dlqUrl } = await target.queues();
      redriven = (await redriveDeadLetters(target.sqs, { from: dlqUrl!, to: queueUrl! })).moved;
      await drained(stack, target, deadline + 240_000);
    }
    timings.drainS = (Date.now() - drainStart) / 1000;

    // --- verify and count ----------------------------------------------------------------------------------
    say('verifying every task');
    const verifyStart = Date.now();
    const expected = expectedTasks(results);
    const verdict = await verifyTasks({
      expected,
      getTask: (id, appKey) => target.tasks.getTask(id, appKey),
      timeoutMs: 120_000,
      concurrency: 16,
      settleMs: 0,
    });
    const acked = new Map<string, Set<string>>();
    for (const r of results) {
      if (!r.delivered) continue;
      const keys = acked.get(r.taskId) ?? new Set<string>();
      acked.set(r.taskId, keys);
      keys.add(eventKey(r.body));
    }
    const perTask = await inParallel([...acked.entries()], 16, async ([id, keys]) => {
      const [task, events] = await Promise.all([target.tasks.getTask(id), target.tasks.listEvents(id)]);
      const ledger = new Set(events.map((e) => e.key));
      let lost = 0;
      for (const k of keys) if (!ledger.has(k)) lost += 1;
      return { id, eventCount: task?.eventCount ?? 0, lost, task };
    });
    say('verifying the task events');
    const expectedEvents = expectedTaskEventsOf(results);
    const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl!);
    const eventCheck = await verifyEvents({
      expected: expectedEvents,
      poll: async () => (await reader.poll()).map((m) => m.body),
      timeoutMs: 120_000,
      pollIntervalMs: 2000,
    });
    for (const m of eventCheck.missing.slice(0, 10)) say(`MISSING EVENT ${m.type} ${m.taskId} ${m.fileName ?? ''}`);
    for (const u of eventCheck.unexpected.slice(0, 10)) say(`UNEXPECTED EVENT ${u.type} ${u.taskId}`);
    let quarantined = 0;
    for await (const _ of target.tasks.listQuarantine({ sinceDays: 2 })) quarantined += 1;
    timings.verifyS = (Date.now() - verifyStart) / 1000;
    timings.totalS = (Date.now() - started) / 1000;

    const image = imageTaskId ? (perTask.find((t) => t.id === imageTaskId)?.task ?? null) : null;
    const sum = (pick: (s: SendSummary) => number) => summaries.reduce((n, s) => n + pick(s), 0);
    const stats = stack.poller.stats;
    const figures: Figures = {
      sent: results.length,
      acknowledged: results.filter((r) => r.delivered).length,
      unacknowledged: results.filter((r) => !r.delivered).length,
      duplicatesSent: results.filter((r) => r.duplicate).length,
      distinctAcknowledged: [...acked.values()].reduce((n, k) => n + k.size, 0),
      stored: perTask.reduce((n, t) => n + t.eventCount, 0),
      quarantined,
      lost: perTask.reduce((n, t) => n + t.lost, 0),
      tasks: verdict.checked,
      tasksMatching: verdict.matched,
      events: {
        must: new Set(expectedEvents.must.map((r) => r.id)).size,
        distinct: eventCheck.distinct,
        missing: eventCheck.missing.length,
        unexpected: eventCheck.unexpected.length,
        received: eventCheck.received,
      },
      imageTask: image
        ? { images: IMAGES, files: image.files.length, eventCount: image.eventCount, status: image.status }
        : null,
      deadLettered,
      redriven,
      sender: {
        requests: sum((s) => s.requests),
        status2xx: sum((s) => s.status2xx),
        status4xx: sum((s) => s.status4xx),
        status5xx: sum((s) => s.status5xx),
        networkErrors: sum((s) => s.networkErrors),
        timeouts: sum((s) => s.timeouts),
        retried: sum((s) => s.retried),
      },
      faults: { ...faults.counts },
      worker: {
        recordFailures: stats.failed,
        batchFailures: stats.batchFailures,
        records: stats.records,
        batches: stats.batches,
      },
      logEvents,
      timings,
      peakRssMb: mb(process.resourceUsage().maxRSS),
      stoppedEarly,
    };
    for (const d of verdict.diffs.slice(0, 10)) say(`MISMATCH ${d.id}: ${d.lines.slice(0, 3).join(' | ')}`);
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
    const ok = figures.lost === 0 && verdict.ok && eventCheck.ok && !stoppedEarly;
    const eventsSaid = `events: ${figures.events.missing} missing, ${figures.events.unexpected} unexpected`;
    say(
      ok
        ? `PASS: lost 0, ${figures.tasksMatching}/${figures.tasks} tasks match, ${eventsSaid}`
        : `FAIL: lost ${figures.lost}, ${figures.tasksMatching}/${figures.tasks} tasks match, ` +
            `${eventsSaid}${stoppedEarly ? ', stopped early' : ''}`,
    );
    return { code: ok ? 0 : 1, section: resultsMarkdown(figures, verdict.ok) };
  } finally {
    setLogSink(previousSink);
    faults.uninstall();
    await target.close();
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function resultsMarkdown(f: Figures, verified: boolean): string[] {
  const n = (v: number) => v.toLocaleString('en-US');
  const cmd =
    `npm run soak -- --callbacks ${CALLBACKS} --images ${IMAGES}${args.memory ? ' --memory' : ''} ` +
    `--concurrency ${CONCURRENCY} --error-rate ${ERROR_RATE} --retry-delay ${RETRY_DELAY_S} --seed ${SEED}`;
  const rows: [string, string][] = [
    ['sent (callbacks handed to the sender, duplicates included)', n(f.sent)],
    ['acknowledged (200 from the receiver)', n(f.acknowledged)],
    ['not acknowledged after every retry', n(f.unacknowledged)],
    ['distinct callbacks among the acknowledged', n(f.distinctAcknowledged)],
    ['stored (distinct events applied: sum of eventCount)', n(f.stored)],
    ['quarantined', n(f.quarantined)],
    ['**lost** (acknowledged, not stored)', `**${n(f.lost)}**`],
    ['tasks verified / matching', `${n(f.tasks)} / ${n(f.tasksMatching)}`],
    [
      'task events: expected (MUST) / distinct published / **missing** / outside MAY / messages received',
      `${n(f.events.must)} / ${n(f.events.distinct)} / **${n(f.events.missing)}** / ${n(f.events.unexpected)} / ` +
        `${n(f.events.received)}`,
    ],
    [
      'task with many images: files / eventCount / status',
      f.imageTask ? `${n(f.imageTask.files)} / ${n(f.imageTask.eventCount)} / ${f.imageTask.status}` : '-',
    ],
    ['dead-lettered during the faults, then redriven', `${n(f.deadLettered)}, ${n(f.redriven)}`],
    ['peak RSS of the process (stack, worker and sender together)', `${n(f.peakRssMb)} MB`],
  ];
  const faults: [string, string][] = [
    ['duplicates sent by the emulator', n(f.duplicatesSent)],
    [
      'HTTP requests (retries included) / 503 answers / sender retries',
      `${n(f.sender.requests)} / ${n(f.sender.status5xx)} / ${n(f.sender.retried)}`,
    ],
    [
      'SQS outages at ingest (SendMessage refused)',
      `${f.faults.sqsOutages} (${n(f.faults.sendMessageOutageErrors)} calls)`,
    ],
    ['DynamoDB outages (every call refused)', `${f.faults.dynamoOutages} (${n(f.faults.dynamoOutageErrors)} calls)`],
    [
      'random DynamoDB errors before / after the request',
      `${n(f.faults.dynamoErrorsBefore)} / ${n(f.faults.dynamoErrorsAfter)} of ${n(f.faults.dynamoCalls)} calls`,
    ],
    [
      'task-event publishes refused by SNS (injected) / publish calls',
      `${n(f.faults.snsErrors)} / ${n(f.faults.snsCalls)}`,
    ],
    [
      'worker: record deliveries failed and retried / whole batches failed',
      `${n(f.worker.recordFailures)} / ${n(f.worker.batchFailures)}`,
    ],
  ];
  return [
    `Written by \`npm run soak\` (test/soak/run.ts) on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} ` +
      `CPUs, Node ${process.versions.node}.`,
    '',
    `Command: \`${cmd}\``,
    '',
    `Verification: ${verified ? 'every task matches' : 'MISMATCHES'}; ` +
      `${f.stoppedEarly ? 'stopped early at the time limit' : 'ran to the end'}.`,
    `Durations: sending ${f.timings.sendS.toFixed(0)} s, draining ${f.timings.drainS.toFixed(0)} s, verifying ` +
      `${f.timings.verifyS.toFixed(0)} s, total ${f.timings.totalS.toFixed(0)} s.`,
    '',
    '| Figure | Value |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    '',
    '| Fault | Count |',
    '|---|---|',
    ...faults.map(([k, v]) => `| ${k} | ${v} |`),
  ];
}

/** When and how a part other than the receiver's was run, for its section. */
function ranWith(command: string): string[] {
  const date = new Date().toISOString().slice(0, 10);
  return [
    `Written by \`npm run soak\` (test/soak/run.ts) on ${date}: ${cpus().length} CPUs, Node ${process.versions.node}.`,
    '',
    `Command: \`npm run soak -- ${command}\``,
    '',
  ];
}

async function chaosPart(): Promise<{ code: number; section: string[] }> {
  say(`chaos: ${CHAOS_SEEDS} seeds of the header counts' chaos run`);
  const f = await runChaosSeeds({
    seeds: CHAOS_SEEDS,
    onProgress: (done, failed) => done % 500 === 0 && say(`chaos: ${done} seeds, ${failed} failed`),
  });
  for (const p of f.problems) say(`CHAOS ${p.slice(0, 400)}`);
  const ok = f.failedSeeds.length === 0 && f.seeds === CHAOS_SEEDS;
  say(`${ok ? 'PASS' : 'FAIL'}: chaos, ${f.seeds} seeds, ${f.failedSeeds.length} failed`);
  return { code: ok ? 0 : 1, section: [...ranWith(`--parts chaos --chaos-seeds ${CHAOS_SEEDS}`), ...chaosMarkdown(f)] };
}

async function largePart(): Promise<{ code: number; section: string[] }> {
  say(`large tasks: ${LARGE_IMAGES} images and a recording of ${HOURS} hours, fed through the worker's batch path`);
  const f = await runLargeTasks({ images: LARGE_IMAGES, hours: HOURS, seed: SEED, say });
  say(`${f.ok ? 'PASS' : 'FAIL'}: large tasks`);
  return {
    code: f.ok ? 0 : 1,
    section: [
      ...ranWith(`--parts large --large-images ${LARGE_IMAGES} --hours ${HOURS} --seed ${SEED}`),
      `Verification: ${f.ok ? 'every figure below as expected' : 'FAILED'}.`,
      '',
      ...largeTasksMarkdown(f),
    ],
  };
}

async function daysPart(): Promise<{ code: number; section: string[] }> {
  const trace = args['days-trace'];
  const f = await runDays({
    days: DAYS,
    tasksPerDay: TASKS_PER_DAY,
    seed: SEED,
    lose: LOSE,
    stall: STALL,
    outageHours: OUTAGE_HOURS,
    say,
    ...(trace ? { trace } : {}),
  });
  for (const p of f.firstProblems) say(`DAYS ${p.slice(0, 400)}`);
  say(`${f.ok ? 'PASS' : 'FAIL'}: days, ${f.days} simulated in ${f.realS.toFixed(0)} s, ${f.problems} problems`);
  return {
    code: f.ok ? 0 : 1,
    section: [
      ...ranWith(
        `--parts days --days ${DAYS} --tasks-per-day ${TASKS_PER_DAY} --lose ${LOSE} --stall ${STALL} ` +
          `--outage-hours ${OUTAGE_HOURS} --seed ${SEED}`,
      ),
      `Verification: ${f.ok ? 'every check as the brute force says' : 'FAILED'}.`,
      '',
      ...daysMarkdown(f),
    ],
  };
}

async function killPart(): Promise<{ code: number; section: string[] }> {
  const opts = { callbacks: KILL_CALLBACKS, kills: KILLS, faults: args['kill-faults']!, seed: SEED };
  const f = await runKill({ ...opts, retryDelayS: KILL_RETRY_DELAY_S, say });
  for (const p of f.problems.slice(0, 30)) say(`KILL ${p.slice(0, 400)}`);
  if (f.keptIn) say(`kill: data, logs and traces of the tasks with problems kept in ${f.keptIn}`);
  process.stdout.write(`${JSON.stringify({ ...f, problems: f.problems.length }, null, 2)}\n`);
  const ok = f.problems.length === 0;
  say(`${ok ? 'PASS' : 'FAIL'}: kill, ${f.kills.midBatch + f.kills.anyMoment} kills, ${f.problems.length} problems`);
  return {
    code: ok ? 0 : 1,
    section: [
      ...ranWith(
        `--parts kill --kill-callbacks ${KILL_CALLBACKS} --kills ${KILLS} --kill-faults ${opts.faults} ` +
          `--kill-retry-delay ${KILL_RETRY_DELAY_S} --seed ${SEED}`,
      ),
      `Verification: ${ok ? 'no problem' : 'PROBLEMS FOUND'}.`,
      '',
      ...killMarkdown(f, { ...opts, retryDelayS: KILL_RETRY_DELAY_S }),
    ],
  };
}

async function main(): Promise<number> {
  const sections = new Map<string, string[]>();
  let code = 0;
  const chosen: [Part, () => Promise<{ code: number; section: string[] }>][] = [
    ['receiver', receiverPart],
    ['chaos', chaosPart],
    ['large', largePart],
    ['days', daysPart],
    ['kill', killPart],
  ];
  for (const [part, run] of chosen) {
    if (!runs(part)) continue;
    const result = await run();
    code = Math.max(code, result.code);
    sections.set(SECTION[part], result.section);
  }
  if (!args['no-results']) {
    const file = new URL('./RESULTS.md', import.meta.url);
    writeSections(file, sections, Object.values(SECTION), SECTION.receiver);
    say(`wrote ${file.pathname} (${[...sections.keys()].join(', ')})`);
  }
  return code;
}

(args['sized-tests'] ? runSizedTests(say) : main()).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`soak failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(2);
  },
);
