import { Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import pc from 'picocolors';
import { durationOption } from '../inspect.ts';
import { openTarget } from '../target.ts';
import { readExpectFile } from '../../lib/emulator/expect.ts';
import { verifyTasks, type VerifyResult } from '../../lib/verify/verify.ts';

interface VerifyCommandOptions {
  expect: string;
  timeout: number;
  stage?: string;
  region?: string;
  json?: boolean;
  progress: boolean;
}

/** Diff lines printed before the rest is summarised; --json always has them all. */
const MAX_PRINTED_LINES = 200;

export function register(program: Command): void {
  program
    .command('verify')
    .description(
      'compare the stored tasks with an expect file written by "callbacks emulate"; exit code 0 only if all match',
    )
    .requiredOption('--expect <file>', 'expect file written by "callbacks emulate --expect"')
    .addOption(
      new Option('--timeout <duration>', 'how long to wait for the queue to drain and the tasks to match')
        .argParser(durationOption)
        .default(60_000, '60s'),
    )
    .option('--stage <stage>', 'a deployed stage instead of the local stack')
    .option('--region <region>', 'AWS region of the deployed stage')
    .option('--json', 'machine-readable result on stdout')
    .option('--no-progress', 'no progress bar')
    .action(async (opts: VerifyCommandOptions) => {
      await verify(opts);
    });
}

async function verify(opts: VerifyCommandOptions): Promise<void> {
  const file = await readExpectFile(opts.expect);
  const target = await openTarget({ stage: opts.stage, region: opts.region });
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
      queueNote = `queue depth unknown (${err instanceof Error ? err.message : String(err)}); polling the tasks only`;
    }

    const showBar = opts.progress && !opts.json && Boolean(process.stderr.isTTY) && file.tasks.length > 0;
    const bar = showBar
      ? new cliProgress.SingleBar(
          {
            stream: process.stderr,
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
      getTask: (id) => target.tasks.getTask(id),
      waitForDrain,
      timeoutMs: opts.timeout,
      onRound: (r) =>
        bar?.update(r.matched, { queue: r.drained === null ? 'unknown' : r.drained ? 'drained' : 'draining' }),
    });
    bar?.stop();

    if (opts.json) {
      process.stdout.write(
        `${JSON.stringify({ target: target.describe, expect: opts.expect, ...result, note: queueNote }, null, 2)}\n`,
      );
    } else {
      printResult(result, target.describe, queueNote);
    }
    if (!result.ok) process.exitCode = 1;
  } finally {
    await target.close();
  }
}

function printResult(result: VerifyResult, describe: string, queueNote: string | null): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
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
      if (printed++ < MAX_PRINTED_LINES) out(line);
    }
  }
  if (total > MAX_PRINTED_LINES) out(`... and ${total - MAX_PRINTED_LINES} more line(s) (--json has them all)`);
  out(pc.red(`${result.checked - result.matched} of ${result.checked} task(s) differ in ${describe}.`));
  if (result.drained === false)
    out('The queue had not drained: the receiver may still be processing (raise --timeout).');
  else if (result.timedOut) out('Timed out while waiting for the tasks to match.');
}
