// `callbacks dev` (and `npm start`): the whole receiver in this process (devkit/local/stack.ts), until Ctrl-C.
import { relative } from 'node:path';
import { Option, type Command } from 'commander';
import { startLocalStack, type LocalStack } from '../../devkit/local/stack.ts';
import { DEFAULT_RETRY_DELAY_S, DEFAULT_SCHEDULE_EVERY_MS } from '../../devkit/local/stack-options.ts';
import { describeFaults, type FaultRates } from '../../devkit/local/fault-spec.ts';
import { type LogSink, setLogSink } from '../../lib/log.ts';
import { type SignatureMode, SIGNATURE_MODES } from '../../lib/signature/verdicts.ts';
import { prettyLogLine, type LogFormat } from '../dev-log.ts';
import { colorsFor, fields, safeJson, styled, type Colors } from '../format.ts';
import { CliError, withTimeZone } from '../inspect.ts';
import { cidrList, durationBetween, durationOption, faultRates, portNumber, stageDuration } from '../option-parsers.ts';
import { ensureConsoleBuilt } from '../console-assets.ts';
import { type StorageSettings, storageNameOf } from '../../lib/config/storage-settings.ts';
import { errorSentence } from '../../lib/text.ts';
import { type CliIo, cliIo } from '../io.ts';

interface DevOptions {
  port: number;
  host: string;
  memory?: boolean;
  dataDir: string;
  signatureMode?: SignatureMode;
  allowCidr?: string[];
  /** ms. */
  retryDelay: number;
  /** ms; 0: never. */
  sweepEvery: number;
  /** ms. */
  settleAfter?: number;
  quiet?: boolean;
  logFormat?: LogFormat;
  color?: boolean;
  iam: boolean;
  faults?: FaultRates;
  seed?: string;
}

export function register(program: Command): void {
  const dev = program
    .command('dev')
    .description('the local stack in this process: DynamoDB and SQS emulators, the callback routes and the worker')
    .option('--port <port>', 'HTTP port of the callback routes (0: any free port)', portNumber, 3000)
    .option('--host <host>', 'address the callback routes listen on (the emulators stay on 127.0.0.1)', '127.0.0.1')
    .option('--memory', 'keep nothing on disk: the data is gone when the stack stops')
    .option('--data-dir <dir>', 'where the data is kept', '.data')
    .addOption(
      new Option(
        '--signature-mode <mode>',
        'enforce: reject unsigned or badly signed callbacks; report: accept and record the verdict; off: do not ' +
          'check (default: SIGNATURE_MODE, else enforce)',
      ).choices(SIGNATURE_MODES),
    )
    .option(
      '--allow-cidr <cidr>',
      'accept callbacks only from this IPv4/IPv6 range; repeat it or give a comma list ' +
        '(default: ALLOWED_SOURCE_CIDRS, else any address)',
      cidrList('--allow-cidr'),
    )
    .addOption(
      new Option(
        '--retry-delay <duration>',
        "how long before a failed record is retried, rounded up to whole seconds (deployed: the queue's visibility " +
          'time-out)',
      )
        // SQS hides a message for at most 12 hours.
        .argParser(durationBetween(0, 43_200_000))
        .default(DEFAULT_RETRY_DELAY_S * 1000, `${DEFAULT_RETRY_DELAY_S}s`),
    )
    .option(
      '--faults <rates>',
      'provoke faults to practise recovery: dynamo=<rate> (DynamoDB calls fail), crash=<rate> (worker ' +
        'invocations die), sns=<rate> (task-event publishes refused), e.g. dynamo=0.05,crash=0.02,sns=0.1',
      faultRates,
    )
    .option('--seed <seed>', 'with --faults: the seed of the draws, to provoke the same faults again (default: random)')
    .addOption(
      new Option(
        '--sweep-every <duration>',
        'time between two runs of the sweeper (deployed: every 5 minutes); 0: never',
      )
        .argParser(durationBetween(0, 86_400_000))
        .default(DEFAULT_SCHEDULE_EVERY_MS, `${DEFAULT_SCHEDULE_EVERY_MS / 1000}s`),
    )
    .option(
      '--settle-after <duration>',
      'how long a completed task stays unchanged before it is settled, e.g. 30s (deployed: 10m)',
      durationOption,
    )
    .option('--quiet', 'do not print the log lines of the handlers')
    .addOption(
      new Option(
        '--log-format <format>',
        "pretty: one readable line per callback; json: the functions' JSON lines (default: pretty on a terminal)",
      ).choices(['pretty', 'json']),
    )
    .option('--no-color', 'no colours (also NO_COLOR=1)')
    .option(
      '--no-iam',
      "for debugging only: do not check the functions' AWS calls against their roles (the deployed stack does)",
    );
  withTimeZone(dev).action(async (opts: DevOptions) => {
    // Held here: the log sink and the signals call back from outside the run.
    const io = cliIo();
    const c = colorsFor(opts);
    if (opts.seed !== undefined && !opts.faults) throw new CliError('--seed goes with --faults: give both, or neither');
    opts.logFormat ??= io.stdout.isTTY ? 'pretty' : 'json';
    // Before the handlers load: their first lines (configuration) come out in the chosen format too. Put back
    // once the stack stops, for whatever runs next in the process.
    let restoreSink: LogSink | undefined;
    if (!opts.quiet && opts.logFormat === 'pretty') {
      restoreSink = setLogSink((line) => {
        const shown = prettyLogLine(line, c);
        if (shown !== null) io.stdout.write(`${shown}\n`);
      });
    } else if (!opts.quiet) {
      // The same JSON, with what a terminal would act on written as escapes (cli/format.ts).
      restoreSink = setLogSink((line) => io.stdout.write(`${safeJson(line)}\n`));
    }
    try {
      await runStack(io, opts, c);
    } finally {
      if (restoreSink) setLogSink(restoreSink);
    }
  });
}

/** Starts the stack, prints its banner, and stops it at the first Ctrl-C. */
async function runStack(io: CliIo, opts: DevOptions, c: Colors): Promise<void> {
  // The stack runs without its console rather than not at all.
  const consoleDir = await ensureConsoleBuilt().catch((err: unknown) => {
    io.stderr.write(`callbacks: the console is not served: ${errorSentence(err)}\n`);
    return undefined;
  });
  const stack = await startLocalStack({
    port: opts.port,
    host: opts.host,
    memory: opts.memory ?? false,
    dataDir: opts.dataDir,
    signatureMode: opts.signatureMode,
    allowedSourceCidrs: opts.allowCidr,
    retryDelaySeconds: retryDelaySeconds(opts.retryDelay),
    quiet: opts.quiet ?? false,
    consoleDir,
    scheduleEveryMs: opts.sweepEvery,
    ...(opts.settleAfter ? { settleAfter: stageDuration(opts.settleAfter) } : {}),
    iam: opts.iam,
    ...(opts.faults ? { faults: { rates: opts.faults, ...(opts.seed ? { seed: opts.seed } : {}) } } : {}),
    cwd: io.cwd,
    env: io.env,
  });
  // Listening before the banner says Ctrl-C stops the stack: a Ctrl-C typed as soon as it shows is a stop, not a kill.
  const signal = untilSignal(io);
  io.stdout.write(banner(stack, { ...opts, console: consoleDir !== undefined }, c));
  try {
    await signal.received;
    io.stdout.write('\nStopping: finishing the requests and batches in progress...\n');
    await stack.stop();
    io.stdout.write('Stopped.\n');
  } finally {
    signal.stopListening();
  }
}

/** --retry-delay as the poller applies it: SQS hides a message for whole seconds. */
const retryDelaySeconds = (ms: number) => Math.ceil(ms / 1000);

const shown = (path: string) => {
  const rel = relative(cliIo().cwd, path);
  return rel && !rel.startsWith('..') ? rel : path;
};

/** Where the verifier checks each appKey's files, as the banner says it (docs/verification.md). */
function storageLine(settings: StorageSettings, c: Colors): string {
  const named = Object.entries(settings).map(([appKey, s]) => {
    const where = s.type === 'http' ? 'HEAD of the reported URL' : storageNameOf(s);
    return `${appKey} -> ${where}`;
  });
  const rest = c.dim('(the files emulate stores; any other appKey: unverifiable, no setting)');
  return named.length ? styled`${named.join(', ')}  ${rest}` : c.dim('no storage setting: every file unverifiable');
}

/** Where the worker archives the callbacks it stores, as the banner says it (docs/archive.md). */
function archiveLine(stack: LocalStack, c: Colors): string {
  if (!stack.archive) return c.dim('none: the template has no archive stream');
  const { endpoint, stream } = stack.archive;
  const query = c.dim('(SQL over it with DuckDB: callbacks archive query)');
  return styled`stream ${stream.name} at ${endpoint} -> s3://${stream.bucket}/${stream.prefix}  ${query}`;
}

/** How often the local sweeper runs, as the banner says it. */
function sweeperLine(everyMs: number, settleAfterMs: number | undefined): string {
  if (everyMs === 0) return 'never (--sweep-every 0)';
  const settle = settleAfterMs ? `, tasks settle after ${stageDuration(settleAfterMs)}` : '';
  return `every ${stageDuration(everyMs)}${settle}`;
}

export function banner(
  stack: LocalStack,
  opts: Pick<DevOptions, 'quiet' | 'retryDelay' | 'logFormat' | 'settleAfter'> & {
    console?: boolean;
    sweepEvery?: number;
  },
  c: Colors,
): string {
  const { info } = stack;
  const keys = stack.appKeys.length > 0 ? stack.appKeys.join(', ') : '(none: every signed callback is refused)';
  const demoKey = stack.secretsSource === 'default' ? c.dim('  (the demo key: CALLBACK_SECRETS is not set)') : '';
  const appKeys = stack.signatureMode === 'off' ? `any (signature mode off)` : styled`${keys}${demoKey}`;
  const data = info.dataDir
    ? styled`${shown(info.dataDir)}/  ${c.dim('(dynamodb/, sqs/: kept across restarts)')}`
    : styled`in memory ${c.dim('(--memory: gone when the stack stops)')}`;
  const readApiNote = c.dim('(loopback clients only, no signature)');
  const topic = info.eventsTopicArn?.split(':').pop() ?? '-';
  const tailQueue = info.eventsQueueUrl?.split('/').pop() ?? '-';
  const m = stack.settings.mappings[0]!;
  const queue = stack.settings.queues.find((q) => q.logicalId === m.queue);
  const templateName = stack.templateHash ?? 'given';
  const functions = stack.settings.functions.map((fn) => `${fn.key} ${fn.memoryMb} MB ${fn.timeoutS} s`).join(', ');
  const lines = [
    c.bold(`Local stack ready at ${info.url}`),
    '',
    fields(
      [
        ['recording', `POST ${info.url}/callbacks/recording`],
        ['screenshot', `POST ${info.url}/callbacks/screenshot`],
        ['health', `GET  ${info.url}/health`],
        ['read API', styled`GET  ${info.url}/tasks, /tasks/{id}, /tasks/{id}/events  ${readApiNote}`],
        ...(opts.console
          ? [['console', styled`${info.url}/console/  ${c.dim('(loopback clients only)')}`] satisfies [string, string]]
          : []),
        ['signature', stack.signatureMode],
        ['sources', stack.allowedSources.length > 0 ? stack.allowedSources.join(', ') : 'any address'],
        ['appKeys', appKeys],
        ['data', data],
        ['DynamoDB', `${info.dynamoEndpoint}  table ${info.tableName}`],
        ['SQS', `${info.sqsEndpoint}  queue ${info.queueUrl.split('/').pop()} (+ ${info.dlqUrl.split('/').pop()})`],
        ['task events', styled`SNS topic ${topic} -> queue ${tailQueue}  ${c.dim('(callbacks events tail --follow)')}`],
        ['storage', storageLine(info.storage?.settings ?? {}, c)],
        ['archive', archiveLine(stack, c)],
        [
          'worker',
          `batches of up to ${m.batchSize}${m.batchingWindowS > 0 ? ` within ${m.batchingWindowS} s` : ''}, ` +
            `${m.maximumConcurrency} at a time${queue?.fifo ? ', each task in one at a time' : ''}; a failed record ` +
            `is retried after ${retryDelaySeconds(opts.retryDelay)} s, dead-lettered after ${queue?.maxReceiveCount} ` +
            'receives',
        ],
        ['functions', functions],
        ['sweeper', sweeperLine(opts.sweepEvery ?? DEFAULT_SCHEDULE_EVERY_MS, opts.settleAfter)],
        [
          'IAM',
          stack.iam.enforced
            ? styled`each function's calls checked against its role ${c.dim(`(template ${templateName})`)}`
            : c.bold('OFF (--no-iam): for debugging only, calls the deployed roles refuse go through'),
        ],
        ...(stack.faults
          ? [
              [
                'faults',
                c.bold(
                  `${describeFaults(stack.faults.rates)} (--faults, seed ${stack.faults.seed}): ` +
                    'calls fail on purpose; restart without --faults, then `callbacks dlq redrive`',
                ),
              ] satisfies [string, string],
            ]
          : []),
        [
          'stack file',
          styled`${shown(stack.stackFile)}  ${c.dim('(other callbacks commands here find the stack through it)')}`,
        ],
      ],
      c,
    ),
    '',
    opts.quiet
      ? 'Ctrl-C stops the stack.'
      : opts.logFormat === 'pretty'
        ? 'One line per callback follows (time, route, status, task, type, signature verdict, duration), and the ' +
          'warnings and errors (--log-format json: every JSON line; --quiet: none). Ctrl-C stops the stack.'
        : 'Log lines follow, one JSON object per event (--quiet hides them). Ctrl-C stops the stack.',
    '',
  ];
  return lines.join('\n');
}

/**
 * `received` resolves at the first SIGINT or SIGTERM; another one a moment later ends the process at once
 * (until `stopListening`). Repeats within that moment are ignored: under `npm start` a Ctrl-C reaches the
 * process twice, from the terminal and forwarded by npm.
 */
function untilSignal(io: CliIo): { received: Promise<void>; stopListening(): void } {
  let stopListening = () => {};
  const received = new Promise<void>((resolve) => {
    let firstAt = 0;
    const onSignal = () => {
      if (firstAt === 0) {
        firstAt = Date.now();
        resolve();
      } else if (Date.now() - firstAt > 1000) {
        io.stderr.write('callbacks: stopped without finishing the work in progress\n');
        io.exit(130);
      }
    };
    stopListening = io.onStop(onSignal);
  });
  return { received, stopListening };
}
