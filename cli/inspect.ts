// What the inspection commands share: the target options, opening and closing the target, and turning
// any failure into one sentence that names the table and region (cli/main.ts prints it, exit code 1).
import { createInterface } from 'node:readline/promises';
import { Option, type Command } from 'commander';
import { errorSentence } from '../lib/text.ts';
import { TargetError, openTarget, type Target } from '../devkit/local/target.ts';
import { colorsFor, jsonText, setTimeZone, type Colors } from './format.ts';
import { cliIo } from './io.ts';

export interface CommonOptions {
  stage?: string;
  /** `callbacks events` and `callbacks verify`: the queue subscribed to the task-events topic. */
  queueUrl?: string;
  region?: string;
  json?: boolean;
  color?: boolean;
  tz?: string;
}

/** --tz: the zone times are printed in and zone-less times typed are read in (before any time is parsed). */
export function withTimeZone(cmd: Command): Command {
  return cmd
    .option('--tz <zone>', 'IANA time zone of the times printed and of times typed without a zone (default UTC)')
    .hook('preAction', (_cmd, action) => setTimeZone(action.opts().tz));
}

/** --stage, --region, --json, --no-color and --tz, on every inspection command. */
export function withCommonOptions(cmd: Command): Command {
  return withTimeZone(cmd)
    .addOption(
      new Option('--stage <stage>', 'a deployed stage instead of the local stack (table <service>-<stage>-tasks)'),
    )
    .addOption(new Option('--region <region>', 'AWS region of the deployed stage (default: AWS_REGION)'))
    .option('--json', 'machine-readable JSON on stdout')
    .option('--no-color', 'no colours (also NO_COLOR=1; output that is not a terminal is never coloured)');
}

export interface Context {
  target: Target;
  c: Colors;
  now: number;
  /** `table T in R`, or the local stack's description: where a failure happened. */
  where: string;
  out(text: string): void;
}

/** The target the options name (`--stage`, `--region`, `--queue-url`), as the CLI's environment and folder find it. */
export function openTargetOf(opts: Pick<CommonOptions, 'stage' | 'region' | 'queueUrl'>): Promise<Target> {
  return openTarget({
    stage: opts.stage,
    region: opts.region,
    eventsQueueUrl: opts.queueUrl,
    env: cliIo().env,
    cwd: cliIo().cwd,
  });
}

/** Opens the target, runs `fn`, closes the target; any error becomes one sentence. */
export async function withTarget(opts: CommonOptions, fn: (ctx: Context) => Promise<void>): Promise<void> {
  guardStdout();
  const target = await openTargetOf(opts);
  const where = target.describe;
  const ctx: Context = {
    target,
    c: colorsFor(opts),
    now: Date.now(),
    where,
    out: (text) => void cliIo().stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  };
  try {
    await fn(ctx);
  } catch (err) {
    if (err instanceof TargetError || err instanceof CliError) throw err;
    throw new CliError(`${where}: ${errorSentence(err)}`);
  } finally {
    await target.close();
  }
}

/** A failure already phrased for the user. */
export class CliError extends Error {
  override name = 'CliError';
}

export function printJson(value: unknown): void {
  cliIo().stdout.write(`${jsonText(value, 2)}\n`);
}

const guarded = new WeakSet<object>();
/** What ends the command when the reader of its output goes away: exiting, unless it has its own way to stop. */
let whenClosed: () => void = () => cliIo().exit(0);

/** Output piped into `head` closes early: stop quietly rather than with a stack trace. */
function guardStdout(): void {
  const { stdout } = cliIo();
  if (guarded.has(stdout)) return;
  guarded.add(stdout);
  stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return whenClosed();
    throw err;
  });
}

/**
 * Makes `stop` what happens when stdout's reader goes away (a command that must clean up before it
 * exits); returns what puts back the default.
 */
export function onStdoutClosed(stop: () => void): () => void {
  const previous = whenClosed;
  whenClosed = stop;
  return () => {
    whenClosed = previous;
  };
}

/** Asks a yes/no question on the terminal; anything but y or yes is a no. */
export async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: cliIo().stdin, output: cliIo().stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}
