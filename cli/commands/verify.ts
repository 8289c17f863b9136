import { InvalidArgumentError, Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { durationOption } from '../option-parsers.ts';
import { colorsFor, jsonText, printable } from '../format.ts';
import { openTargetOf } from '../inspect.ts';
import { readExpectFile } from '../../devkit/emulator/expect.ts';
import { verifyTasks, type VerifyResult } from '../../devkit/verify/verify.ts';
import { EventQueueReader } from '../../lib/aws/sqs/event-queue.ts';
import { verifyEvents, type EventsResult } from '../../devkit/verify/events.ts';
import { type ChecksResult, type IncidentsResult, verifyChecks, verifyIncidents } from '../../devkit/verify/storage.ts';
import { IncidentStore } from '../../lib/aws/dynamo/storage/storage-incidents.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import {
  atClock,
  checkTimeEvents,
  DEFAULT_CLOCK_SETTINGS,
  differsInTimeOnly,
  type ClockExpectation,
} from '../../devkit/verify/time-facts.ts';
import { isoTime, parseTimePoint } from '../format.ts';
import { errorSentence } from '../../lib/text.ts';
import { cliIo, pathFromCwd, setExitCode } from '../io.ts';
import { durationText } from './tasks.ts';

interface VerifyCommandOptions {
  expect: string;
  timeout: number;
  stage?: string;
  region?: string;
  queueUrl?: string;
  json?: boolean;
  progress: boolean;
  now?: number;
  sweepLag: number;
}

/** Time left for the events once the tasks match: at least this much. */
const MIN_EVENTS_WAIT_MS = 5000;

/** Diff lines printed before the rest is summarised; --json always has them all. */
const MAX_PRINTED_LINES = 200;

export function register(program: Command): void {
  program
    .command('verify')
    .description(
      'compare the stored tasks and the published task events with an expect file written by "callbacks emulate"; ' +
        'exit code 0 only if all match',
    )
    .requiredOption('--expect <file>', 'expect file written by "callbacks emulate --expect"')
    .addOption(
      new Option('--timeout <duration>', 'how long to wait for the queue to drain and the tasks to match')
        .argParser(durationOption)
        .default(60_000, '60s'),
    )
    .option('--stage <stage>', 'a deployed stage instead of the local stack')
    .option('--region <region>', 'AWS region of the deployed stage')
    .option(
      '--queue-url <url>',
      "an SQS queue subscribed to the task-events topic (default: the local stack's; env TASK_EVENTS_QUEUE_URL)",
    )
    .option(
      '--now <time>',
      "the receiver's clock, for the facts of time (lost files, stalled tasks): an ISO time or epoch ms " +
        '(default: now)',
      clockOption,
    )
    .addOption(
      new Option(
        '--sweep-lag <duration>',
        'how late the receiver may find a fact of time (its sweep interval, a 5-minute bucket, slack)',
      )
        .argParser(durationOption)
        .default(DEFAULT_CLOCK_SETTINGS.lagMs, '10m'),
    )
    .option('--json', 'machine-readable result on stdout')
    .option('--no-progress', 'no progress bar')
    .action(async (opts: VerifyCommandOptions) => {
      await verify(opts);
    });
}

/** --now: a time as typed (an ISO time, epoch ms, or a duration back from now). */
function clockOption(text: string): number {
  try {
    return parseTimePoint(text, Date.now());
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

async function verify(opts: VerifyCommandOptions): Promise<void> {
  const started = Date.now();
  const file = await readExpectFile(pathFromCwd(opts.expect));
  const runEndedAt = Date.parse(file.generatedAt);
  // The receiver's clock: --now, or the time of each reading, so that a fact that falls due while verify waits
  // is expected from then on.
  const clock = (): ClockExpectation => ({
    ...DEFAULT_CLOCK_SETTINGS,
    lagMs: opts.sweepLag,
    nowMs: opts.now ?? Date.now(),
    // The run's callbacks were all acknowledged when it wrote the file: a completed task settles from there, and
    // a fact due before the receiver had its task's callbacks is found a sweep after that at most.
    ...(Number.isFinite(runEndedAt) ? { runEndedAt } : {}),
  });
  const target = await openTargetOf(opts);
  try {
    const isDrained = async () => {
      const d = await target.queue.depth();
      return d.visible + d.inFlight + d.delayed === 0;
    };
    // Without a readable queue (no QUEUE_URL, say) there is nothing to wait for but the tasks themselves.
    let queueNote: string | null = null;
    let waitForDrain: (() => Promise<boolean>) | undefined = isDrained;
    try {
      await isDrained();
    } catch (err) {
      waitForDrain = undefined;
      queueNote = `queue depth unknown (${errorSentence(err)}); polling the tasks only`;
    }

    const showBar = opts.progress && !opts.json && Boolean(cliIo().stderr.isTTY) && file.tasks.length > 0;
    const bar = showBar
      ? new cliProgress.SingleBar(
          {
            stream: cliIo().stderr as NodeJS.WriteStream,
            format: 'verifying {bar} {value}/{total} tasks match | queue {queue}',
            hideCursor: true,
            clearOnComplete: true,
          },
          cliProgress.Presets.shades_classic,
        )
      : null;
    bar?.start(file.tasks.length, 0, { queue: waitForDrain ? 'draining' : 'unknown' });
    const result = await verifyTasks({
      expected: file.tasks,
      getTask: (id, appKey) => target.tasks.getTask(id, appKey),
      waitForDrain,
      timeoutMs: opts.timeout,
      expectAt: (expected, actual) => atClock(expected, actual, clock()),
      differsInTimeOnly,
      onRound: (r) =>
        bar?.update(r.matched, { queue: r.drained === null ? 'unknown' : r.drained ? 'drained' : 'draining' }),
    });
    bar?.stop();

    // Task events: every expected one published at least once, none that could not have been.
    let events: EventsResult | null = null;
    let eventsNote: string | null = null;
    if (!file.events) eventsNote = 'the expect file holds no task events: events not checked';
    else if (!target.eventsQueueUrl)
      eventsNote = 'no queue subscribed to the task-events topic is known (--queue-url): events not checked';
    else {
      const reader = new EventQueueReader(target.sqs, target.eventsQueueUrl);
      events = await verifyEvents({
        expected: file.events,
        poll: async () => (await reader.poll()).map((m) => m.body),
        time: (published) => checkTimeEvents(file.tasks, published, clock()),
        timeoutMs: Math.max(MIN_EVENTS_WAIT_MS, opts.timeout - (Date.now() - started)),
      });
    }
    // The checks of the files in their storage: each as the sender emulator left the file (devkit/verify/storage.ts).
    const storage = file.storage
      ? await verifyChecks({
          expected: file.storage.files,
          getTask: (id, appKey) => target.tasks.getTask(id, appKey),
          timeoutMs: Math.max(MIN_EVENTS_WAIT_MS, opts.timeout - (Date.now() - started)),
        })
      : null;
    // The incidents of the run's storage outage: one per storage, its facts exact, resolved once uploads succeeded.
    const expectedIncidents = file.storage?.incidents ?? [];
    const incidents =
      expectedIncidents.length > 0
        ? await verifyIncidents({
            expected: expectedIncidents,
            read: (appKey, storageName) =>
              new IncidentStore(new TableReader(target.dynamo, target.tableName)).incidents(appKey, storageName, 100),
            outage: file.storage!.outage!,
            timeoutMs: Math.max(MIN_EVENTS_WAIT_MS, opts.timeout - (Date.now() - started)),
          })
        : null;
    const ok = result.ok && (events?.ok ?? true) && (storage?.ok ?? true) && (incidents?.ok ?? true);
    // When nothing differs but facts of time, when a sweep will have found every fact due by now.
    const storageOk = (storage?.ok ?? true) && (incidents?.ok ?? true);
    const rerunAfter = !ok && storageOk && onlyFactsOfTime(result, events) ? Date.now() + opts.sweepLag : null;

    if (opts.json) {
      const out = {
        target: target.describe,
        expect: opts.expect,
        ...result,
        ok,
        note: queueNote,
        events,
        eventsNote,
        onlyFactsOfTime: rerunAfter !== null,
        rerunAfter,
        storage,
        incidents,
      };
      cliIo().stdout.write(`${jsonText(out, 2)}\n`);
    } else {
      printResult(result, target.describe, queueNote);
      printEvents(events, eventsNote);
      printStorage(storage);
      printIncidents(incidents);
      if (rerunAfter !== null) printRerun(rerunAfter, opts.sweepLag);
    }
    if (!ok) setExitCode(1);
  } finally {
    await target.close();
  }
}

function printResult(result: VerifyResult, describe: string, queueNote: string | null): void {
  // Coloured on the run's terminal only, as every other output (cli/format.ts).
  const pc = colorsFor({});
  const out = (line: string) => cliIo().stdout.write(`${line}\n`);
  if (queueNote) out(pc.yellow(queueNote));
  if (result.ok) {
    out(
      result.checked === 0
        ? pc.yellow('The expect file names no task: nothing to check (did every callback of the run fail?).')
        : pc.green(`All ${result.checked} expected task(s) match in ${describe}.`),
    );
    return;
  }
  let printed = 0;
  const total = result.diffs.reduce((n, d) => n + d.lines.length, 0);
  for (const diff of result.diffs) {
    for (const line of diff.lines) {
      if (printed++ < MAX_PRINTED_LINES) out(printable(line));
    }
  }
  if (total > MAX_PRINTED_LINES) out(`... and ${total - MAX_PRINTED_LINES} more line(s) (--json has them all)`);
  out(pc.red(`${result.checked - result.matched} of ${result.checked} task(s) differ in ${describe}.`));
  if (result.drained === false)
    out('The queue had not drained: the receiver may still be processing (raise --timeout).');
  else if (result.timedOut) out('Timed out while waiting for the tasks to match.');
}

/** Whether every difference found is one of the facts of time (lost files, stalls, settles and their events). */
function onlyFactsOfTime(result: VerifyResult, events: EventsResult | null): boolean {
  const tasks = result.diffs.every((d) => d.timeOnly);
  const published =
    events === null ||
    (events.missing.length === 0 && events.unexpected.length === 0 && (events.time?.unexpected.length ?? 0) === 0);
  return tasks && published;
}

function printRerun(after: number, lagMs: number): void {
  const pc = colorsFor({});
  cliIo().stdout.write(
    `${pc.yellow(
      `Only facts of time differ (lost files, stalls, settles and their events): the receiver finds each up to a ` +
        `sweep after it falls due, or after it received the task's callbacks (--sweep-lag ${durationText(lagMs)}). ` +
        `Run verify again after ${isoTime(after)}, or with a --timeout that reaches it.`,
    )}\n`,
  );
}

function printEvents(events: EventsResult | null, note: string | null): void {
  // Coloured on the run's terminal only, as every other output (cli/format.ts).
  const pc = colorsFor({});
  const out = (line: string) => cliIo().stdout.write(`${line}\n`);
  if (!events) {
    if (note) out(pc.yellow(note));
    return;
  }
  const counts = `${events.distinct} distinct, ${events.received} received (duplicates allowed)`;
  const doubled = events.time?.doubled ?? [];
  for (const d of doubled.slice(0, MAX_PRINTED_LINES)) out(pc.yellow(printable(`received more than once: ${d}`)));
  if (events.ok) {
    out(pc.green(`Every expected task event was published, and none that could not have been: ${counts}.`));
    return;
  }
  for (const m of events.missing.slice(0, MAX_PRINTED_LINES))
    out(printable(`missing ${m.type} of ${m.service} ${m.taskId}${m.fileName ? ` file ${m.fileName}` : ''} (${m.id})`));
  for (const u of events.unexpected.slice(0, MAX_PRINTED_LINES))
    out(printable(`unexpected ${u.type} of task ${u.taskId} (${u.id})`));
  for (const m of events.time?.missing.slice(0, MAX_PRINTED_LINES) ?? []) out(printable(`missing ${m}`));
  for (const u of events.time?.unexpected.slice(0, MAX_PRINTED_LINES) ?? []) out(printable(`unexpected ${u}`));
  const missing = events.missing.length + (events.time?.missing.length ?? 0);
  const unexpected = events.unexpected.length + (events.time?.unexpected.length ?? 0);
  out(pc.red(`${missing} task event(s) missing, ${unexpected} unexpected; ${counts}.`));
}

function printStorage(storage: ChecksResult | null): void {
  if (!storage) return;
  // Coloured on the run's terminal only, as every other output (cli/format.ts).
  const pc = colorsFor({});
  const out = (line: string) => cliIo().stdout.write(`${line}\n`);
  const kinds = Object.entries(storage.byFault)
    .map(([kind, n]) => `${kind === 'none' ? 'stored as reported' : kind} ${n.found}/${n.expected}`)
    .join(', ');
  if (storage.ok) {
    out(pc.green(`Every file reported uploaded was found in its storage as the run left it: ${kinds}.`));
    return;
  }
  for (const line of storage.diffs.slice(0, MAX_PRINTED_LINES)) out(printable(line));
  if (storage.diffs.length > MAX_PRINTED_LINES)
    out(`... and ${storage.diffs.length - MAX_PRINTED_LINES} more line(s) (--json has them all)`);
  out(pc.red(`${storage.checked - storage.matched} of ${storage.checked} file check(s) differ: ${kinds}.`));
}

function printIncidents(incidents: IncidentsResult | null): void {
  if (!incidents) return;
  const pc = colorsFor({});
  const out = (line: string) => cliIo().stdout.write(`${line}\n`);
  if (incidents.ok) {
    out(
      pc.green(`Each storage outage made one incident, its facts and switch-by exact, resolved: ${incidents.checked}.`),
    );
    return;
  }
  for (const line of incidents.diffs.slice(0, MAX_PRINTED_LINES)) out(printable(line));
  out(pc.red(`${incidents.diffs.length} difference(s) in the storage incidents.`));
}
