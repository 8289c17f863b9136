import { randomInt } from 'node:crypto';
import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { DEFAULT_COMPRESS, generateRun } from '../../devkit/emulator/lifecycles.ts';
import {
  checkReachable,
  sendAll,
  SENDER_DEFAULTS,
  SIGN_PLACEMENTS,
  type SendResult,
  type SendSummary,
  type SignPlacement,
} from '../../devkit/emulator/sender.ts';
import {
  expectedChecksOf,
  expectedIncidentsOf,
  expectedTaskEventsOf,
  expectedTasks,
  withMissingEvents,
  writeExpectFile,
} from '../../devkit/emulator/expect.ts';
import { EmulatedStorage, planStoredFiles, STORED_SIZE_DIVISOR } from '../../devkit/emulator/storage.ts';
import { type FileStorageOptions, localFileStorage, storageFaults, storageOutage } from '../file-storage.ts';
import type { StorageOutage } from '../../devkit/emulator/storage-outage.ts';
import { createRandom } from '../../devkit/emulator/random.ts';
import { decimalNumber, durationBetween, durationOption, instant, rate, wholeNumber } from '../option-parsers.ts';
import { colorsFor, printable } from '../format.ts';
import { cliIo, pathFromCwd, setExitCode } from '../io.ts';
import { readLocalStack } from '../../devkit/local/stack-file.ts';
import { type SenderSecretsOptions, secretToSign, senderSecrets, withSenderSecrets } from '../secrets.ts';
import { localReceiver } from './send.ts';
import { type TaskShapeOptions, taskShapeOf, withTaskShape } from '../task-shape-options.ts';

interface EmulateOptions extends SenderSecretsOptions, TaskShapeOptions, FileStorageOptions {
  storageOutage?: StorageOutage;
  url: string;
  recordings: number;
  screenshots: number;
  seed?: string;
  baseTime?: number;
  concurrency: number;
  duplicates: number;
  reorderWindow: number;
  outage?: true | number;
  giveUp: number;
  failedStarts: number;
  lose: number;
  stall: number;
  appKey: string;
  sign: SignPlacement;
  compress: number;
  maxAttempts: number;
  requestTimeout: number;
  expect?: string;
  json?: boolean;
  progress: boolean;
}

/** Probability of a task meeting a storage outage when --outage is given without a value. */
const DEFAULT_OUTAGE = 0.5;

export function register(program: Command): void {
  withTaskShape(withSenderSecrets(program.command('emulate')))
    .description(
      'send realistic recording and screenshot callbacks to a receiver, as the platform would, and write what it ' +
        'should end up holding',
    )
    .requiredOption(
      '--url <base>',
      'receiver base URL; callbacks go to <base>/callbacks/recording and /callbacks/screenshot',
    )
    .option('--recordings <n>', 'recording tasks', wholeNumber(0), 20)
    .option('--screenshots <n>', 'screenshot tasks', wholeNumber(0), 10)
    .option('--seed <seed>', 'seed for a reproducible run (default: random, printed in the summary)')
    .option(
      '--base-time <time>',
      'platform time the run starts at, epoch ms or ISO date (default: so that the run ends now)',
      instant,
    )
    .option('--concurrency <n>', 'requests in flight at once', wholeNumber(1), SENDER_DEFAULTS.concurrency)
    .option('--duplicates <rate>', 'probability that a callback is delivered twice or more', rate, 0)
    .addOption(
      new Option('--reorder-window <duration>', 'shuffle sends scheduled within this long of each other (wall clock)')
        .argParser(durationBetween(0))
        .default(0, '0'),
    )
    .option(
      '--outage [probability]',
      `storage outages: probability that a task's uploads fail and are retried every 10 s (bare flag: ` +
        `${DEFAULT_OUTAGE})`,
      rate,
    )
    .option(
      '--give-up <probability>',
      'probability that an outage outlasts the 24 h hold, so the upload is given up',
      rate,
      0.3,
    )
    .option('--failed-starts <rate>', 'probability that a task fails to start', rate, 0)
    .option(
      '--lose <rate>',
      "probability that a task's uploads fail for good: the platform gives up 24 h later and the files are lost",
      rate,
      0,
    )
    .option('--stall <rate>', 'probability that a task stops mid-way: no callback after some point, no end', rate, 0)
    .option(
      '--storage-faults <kinds>',
      'files reported uploaded that the storage does not hold as reported, of these kinds: ' +
        'missing,empty,truncated,forbidden (a local stack only)',
      storageFaults,
    )
    .option('--storage-fault-rate <rate>', 'share of the files reported uploaded that get a storage fault', rate)
    .option(
      '--storage-outage <start,length>',
      'a storage outage of the whole run, e.g. 5m,40m: uploads within it fail every 10 s until it ends (a storage ' +
        'incident of the receiver)',
      storageOutage,
    )
    .option(
      '--no-store-files',
      "do not put the files reported uploaded in the local stack's storage (its verifier then finds them missing)",
    )
    .option('--app-key <key>', 'appKey in the bodies', 'demo-app')
    .addOption(new Option('--sign <where>', 'where the signature travels').choices(SIGN_PLACEMENTS).default('header'))
    .option(
      '--compress <factor>',
      'platform time per unit of wall-clock time (3600: an hour of recording is sent in a second)',
      decimalNumber(0.001),
      DEFAULT_COMPRESS,
    )
    .option(
      '--max-attempts <n>',
      'tries per callback before giving up on it',
      wholeNumber(1),
      SENDER_DEFAULTS.maxAttempts,
    )
    .addOption(
      new Option('--request-timeout <duration>', 'time-out of one request')
        .argParser(durationOption)
        .default(SENDER_DEFAULTS.timeoutMs, `${SENDER_DEFAULTS.timeoutMs / 1000}s`),
    )
    .option(
      '--expect <file>',
      'write the tasks the receiver should hold and the task events it should publish (for "callbacks verify")',
    )
    .option('--json', 'machine-readable summary on stdout')
    .option('--no-progress', 'no progress bar')
    .action(async (opts: EmulateOptions) => {
      await emulate(opts);
    });
}

async function emulate(opts: EmulateOptions): Promise<void> {
  const seed = opts.seed ?? String(randomInt(0, 2 ** 31));
  const outage = opts.outage === undefined ? 0 : opts.outage === true ? DEFAULT_OUTAGE : opts.outage;
  await checkReachable(opts.url, opts.requestTimeout);
  // The secret the platform signs with: CALLBACK_SECRETS, the stage's parameter, or a local stack's demo key.
  const to = { base: opts.url, local: readLocalStack(cliIo().cwd) };
  const secret = opts.sign === 'none' ? '' : await secretToSign(senderSecrets(opts, localReceiver(to)), opts.appKey);
  // The files reported uploaded go to the local stack's storage, with the faults asked for.
  const storage = localFileStorage(localReceiver(to), opts);

  const run = generateRun({
    seed,
    recordings: opts.recordings,
    screenshots: opts.screenshots,
    appKey: opts.appKey,
    compress: opts.compress,
    baseTime: opts.baseTime,
    duplicates: opts.duplicates,
    reorderWindowMs: opts.reorderWindow,
    outage,
    giveUp: opts.giveUp,
    failedStarts: opts.failedStarts,
    lose: opts.lose,
    stall: opts.stall,
    ...taskShapeOf(opts, false),
    ...(storage ? { sizeDivisor: STORED_SIZE_DIVISOR } : {}),
    ...(opts.storageOutage ? { storageOutage: opts.storageOutage } : {}),
  });
  const stored = storage
    ? planStoredFiles(run.sends, { faults: storage.faults, rate: storage.rate, seed, settings: storage.settings })
    : null;
  const files = storage && stored ? new EmulatedStorage(storage.s3, storage.settings, stored) : null;

  const showBar = opts.progress && !opts.json && Boolean(cliIo().stderr.isTTY) && run.sends.length > 0;
  const bar = showBar
    ? new cliProgress.SingleBar(
        {
          stream: cliIo().stderr as NodeJS.WriteStream,
          format:
            'sending {bar} {value}/{total} callbacks | {delivered} acknowledged, {retried} retried, {undelivered} ' +
            'failed',
          hideCursor: true,
          clearOnComplete: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(run.sends.length, 0, { delivered: 0, retried: 0, undelivered: 0 });

  const report = await sendAll({
    url: opts.url,
    sends: run.sends,
    // Nonces and jitter from their own stream of the same seed, so they do not shift the bodies.
    random: createRandom(`${seed}/sender`),
    concurrency: opts.concurrency,
    sign: opts.sign,
    secret,
    maxAttempts: opts.maxAttempts,
    timeoutMs: opts.requestTimeout,
    ...(files ? { beforeSend: (send) => files.beforeSend(send) } : {}),
    onProgress: bar
      ? (p) => bar.update(p.done, { delivered: p.delivered, retried: p.retried, undelivered: p.undelivered })
      : undefined,
  });
  bar?.stop();
  storage?.s3.destroy();

  let expectFile: string | null = null;
  let expectedCount: number | null = null;
  if (opts.expect) {
    const tasks = expectedTasks(report.results);
    expectFile = pathFromCwd(opts.expect);
    expectedCount = tasks.length;
    const checks = stored ? expectedChecksOf(stored, report.results) : undefined;
    const events = expectedTaskEventsOf(report.results);
    const o = opts.storageOutage;
    const outage = o ? { from: run.baseTime + o.startMs, to: run.baseTime + o.startMs + o.lengthMs } : null;
    const incidents =
      storage && outage
        ? { expected: expectedIncidentsOf(report.results, storage.settings, outage), outage }
        : undefined;
    await writeExpectFile(
      expectFile,
      tasks,
      new Date(),
      checks ? withMissingEvents(events, checks) : events,
      checks,
      incidents,
    );
  }

  const { summary } = report;
  const failures = failureGroups(report.results);
  if (opts.json) {
    cliIo().stdout.write(
      `${JSON.stringify(
        {
          url: opts.url,
          seed,
          baseTime: run.baseTime,
          runId: run.runId,
          tasks: run.tasks,
          faults: {
            duplicates: opts.duplicates,
            reorderWindowMs: opts.reorderWindow,
            outage,
            giveUp: outage > 0 ? opts.giveUp : 0,
            failedStarts: opts.failedStarts,
            lose: opts.lose,
            stall: opts.stall,
            storage: storage ? { faults: storage.faults, rate: storage.faults.length ? storage.rate : 0 } : null,
          },
          stored: stored ? storedSummary(stored) : null,
          sign: opts.sign,
          summary,
          failures,
          expect: expectFile === null ? null : { file: expectFile, tasks: expectedCount },
        },
        null,
        2,
      )}\n`,
    );
  } else {
    printSummary(opts, seed, run.tasks, summary, failures, expectFile, expectedCount, stored);
  }
  if (summary.undelivered > 0) setExitCode(1);
}

interface FailureGroup {
  reason: string;
  count: number;
}

/** Undelivered callbacks grouped by why their last attempt failed. */
function failureGroups(results: readonly SendResult[]): FailureGroup[] {
  const counts = new Map<string, number>();
  for (const r of results) {
    if (r.delivered) continue;
    const reason = r.error ?? 'unknown';
    counts.set(reason, (counts.get(reason) ?? 0) + 1);
  }
  return [...counts].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count);
}

function printSummary(
  opts: EmulateOptions,
  seed: string,
  tasks: { recording: number; screenshot: number },
  s: SendSummary,
  failures: FailureGroup[],
  expectFile: string | null,
  expectedCount: number | null,
  stored: readonly { fault: string | null }[] | null,
): void {
  // Coloured on the run's terminal only, as every other output (cli/format.ts).
  const pc = colorsFor({});
  const ms = (v: number | null) => (v === null ? '-' : `${v} ms`);
  const notAcknowledged = s.undelivered ? pc.red(`${s.undelivered} not acknowledged`) : '0 not acknowledged';
  const lines = [
    `Sent ${s.callbacks} callbacks of ${tasks.recording} recording and ${tasks.screenshot} screenshot tasks to ` +
      `${opts.url} in ${(s.durationMs / 1000).toFixed(1)} s (seed ${seed}).`,
    `${s.delivered} acknowledged, ${notAcknowledged}; ${s.requests} requests: ${s.status2xx} 2xx, ` +
      `${s.status4xx ? pc.red(`${s.status4xx} 4xx`) : '0 4xx'}, ` +
      `${s.status5xx ? pc.yellow(`${s.status5xx} 5xx`) : '0 5xx'}, ${s.networkErrors} network errors, ` +
      `${s.retried} retries; latency p50 ${ms(s.latencyP50Ms)}, p99 ${ms(s.latencyP99Ms)}.`,
  ];
  for (const f of failures) lines.push(pc.red(`${f.count} callback(s) not acknowledged: ${printable(f.reason)}`));
  if (stored) {
    const { files, ...faults } = storedSummary(stored);
    const kinds = Object.entries(faults).map(([kind, n]) => `${n} ${kind}`);
    lines.push(
      `Stored the ${files} file(s) reported uploaded in the local stack's storage` +
        `${kinds.length ? `, with storage faults: ${kinds.join(', ')}` : ''}.`,
    );
  }
  if (failures.some((f) => f.reason === 'HTTP 401' || f.reason === 'HTTP 403')) {
    lines.push('The receiver rejected the signature or the appKey: check --app-key, the secrets and --sign.');
  }
  if (expectFile !== null) {
    lines.push(
      `Expected state of ${expectedCount} task(s) written to ${expectFile}; ` +
        `check it with: callbacks verify --expect ${opts.expect}`,
    );
  }
  cliIo().stdout.write(`${lines.join('\n')}\n`);
}

/** How many files the run stored, and how many of each fault. */
function storedSummary(files: readonly { fault: string | null }[]): Record<string, number> {
  const out: Record<string, number> = { files: files.length };
  for (const f of files) if (f.fault) out[f.fault] = (out[f.fault] ?? 0) + 1;
  return out;
}
