import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { printable } from './format.ts';
import { errorSentence } from '../lib/text.ts';
import { type CliIo, exitCode, type OutputStream, setExitCode, withCliIo } from './io.ts';

// Each command's module is loaded only when that command runs: the local stack pulls in the DynamoDB
// and SQS emulators, the others the AWS SDK, and a user waiting for `tasks get` should pay for neither.
const commands: Record<string, () => Promise<{ register(program: Command): void }>> = {
  dev: () => import('./commands/dev.ts'),
  emulate: () => import('./commands/emulate.ts'),
  send: () => import('./commands/send.ts'),
  verify: () => import('./commands/verify.ts'),
  tasks: () => import('./commands/tasks.ts'),
  quarantine: () => import('./commands/quarantine.ts'),
  dlq: () => import('./commands/dlq.ts'),
  events: () => import('./commands/events.ts'),
  console: () => import('./commands/console.ts'),
  doctor: () => import('./commands/doctor.ts'),
  status: () => import('./commands/status.ts'),
  pull: () => import('./commands/pull.ts'),
  recount: () => import('./commands/recount.ts'),
  storage: () => import('./commands/storage.ts'),
  archive: () => import('./commands/archive.ts'),
  replay: () => import('./commands/replay.ts'),
};

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The program with its own output (a fresh one per run: commander keeps the options it parsed). */
function createProgram(io: CliIo): Command {
  return (
    new Command()
      .name('callbacks')
      .description(
        'Receiver of cloud recording and cloud screenshot callbacks: local stack, sender emulator, inspection.',
      )
      .version(version, '-V, --version', 'the version of this package')
      // A mistake on the command line gets its one-line error from commander, then the hint below, never the
      // whole help; exitOverride (inherited by every command) lets the hint name the command.
      .exitOverride()
      .configureOutput({
        writeOut: (text) => void io.stdout.write(text),
        writeErr: (text) => void io.stderr.write(text),
        // As commander's defaults, from the run's streams and environment instead of the process's.
        getOutHelpWidth: () => widthOf(io.stdout) as number,
        getErrHelpWidth: () => widthOf(io.stderr) as number,
        getOutHasColors: () => helpColors(io, io.stdout),
        getErrHasColors: () => helpColors(io, io.stderr),
        // commander puts its "(Did you mean ...?)" on a line of its own: it belongs to the error line. It repeats
        // what was typed, which can be pasted from a hostile value: made printable.
        outputError: (text, write) => write(printable(text.replace(/\n(?=\(Did you mean)/, ' '), { lines: true })),
      })
  );
}

type Terminal = OutputStream & { columns?: number; hasColors?(): boolean };

function widthOf(stream: Terminal): number | undefined {
  return stream.isTTY ? stream.columns : undefined;
}

/** Whether the help is coloured: commander's rule (NO_COLOR, FORCE_COLOR, a terminal), on the run's own. */
function helpColors(io: CliIo, stream: Terminal): boolean {
  const { NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE } = io.env;
  if (NO_COLOR || FORCE_COLOR === '0' || FORCE_COLOR === 'false') return false;
  if (FORCE_COLOR || CLICOLOR_FORCE !== undefined) return true;
  return Boolean(stream.isTTY && stream.hasColors?.());
}

/** `callbacks tasks list`: the command words of argv, as far as they name commands. */
function commandPath(program: Command, argv: readonly string[]): string {
  const path = ['callbacks'];
  let cmd: Command = program;
  for (const word of argv) {
    const sub = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!sub) break;
    path.push(word);
    cmd = sub;
  }
  return path.join(' ');
}

/**
 * Runs `callbacks <argv>` (the words after the command's name) with `io`'s streams, environment and folder,
 * and resolves to its exit code. Every failure ends here as one sentence on stderr, never a stack trace.
 */
export function run(argv: readonly string[], io: CliIo): Promise<number> {
  return withCliIo(io, async () => {
    const program = createProgram(io);
    try {
      const requested = argv[0];
      const names = requested && Object.hasOwn(commands, requested) ? [requested] : Object.keys(commands);
      for (const name of names) (await commands[name]!()).register(program);
      await program.parseAsync([...argv], { from: 'user' });
    } catch (err) {
      if (err instanceof CommanderError) {
        // Help and --version end here with their own exit code (0); usage errors were printed by commander.
        if (err.exitCode !== 0 && err.code !== 'commander.help' && err.code !== 'commander.helpDisplayed') {
          io.stderr.write(`Run "${commandPath(program, argv)} --help" for the usage.\n`);
        }
        setExitCode(err.exitCode);
      } else {
        const sentence = errorSentence(err, { bare: true, allLines: true, max: Number.POSITIVE_INFINITY });
        io.stderr.write(`callbacks: ${printable(sentence)}\n`);
        setExitCode(exitCode() || 1);
      }
    }
  });
}
