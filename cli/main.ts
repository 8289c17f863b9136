import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { printable } from './format.ts';
import { errorSentence } from '../lib/text.ts';

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
  migrate: () => import('./commands/migrate.ts'),
  console: () => import('./commands/console.ts'),
  doctor: () => import('./commands/doctor.ts'),
  status: () => import('./commands/status.ts'),
  pull: () => import('./commands/pull.ts'),
  recount: () => import('./commands/recount.ts'),
};

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command();
program
  .name('callbacks')
  .description('Receiver of cloud recording and cloud screenshot callbacks: local stack, sender emulator, inspection.')
  .version(version, '-V, --version', 'the version of this package')
  // A mistake on the command line gets its one-line error from commander, then the hint below, never the
  // whole help; exitOverride (inherited by every command) lets the hint name the command.
  .exitOverride()
  // commander puts its "(Did you mean ...?)" on a line of its own: it belongs to the error line.
  .configureOutput({
    // Commander repeats what was typed, which can be pasted from a hostile value: made printable.
    outputError: (text, write) => write(printable(text.replace(/\n(?=\(Did you mean)/, ' '), { lines: true })),
  });

/** `callbacks tasks list`: the command words of argv, as far as they name commands. */
function commandPath(argv: readonly string[]): string {
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

const args = process.argv.slice(2);
try {
  const requested = args[0];
  const names = requested && Object.hasOwn(commands, requested) ? [requested] : Object.keys(commands);
  for (const name of names) (await commands[name]!()).register(program);
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Help and --version end here with their own exit code (0); usage errors were printed by commander.
    if (err.exitCode !== 0 && err.code !== 'commander.help' && err.code !== 'commander.helpDisplayed') {
      process.stderr.write(`Run "${commandPath(args)} --help" for the usage.\n`);
    }
    process.exitCode = err.exitCode;
  } else {
    // One clear sentence on stderr, never a stack trace.
    process.stderr.write(
      `callbacks: ${printable(errorSentence(err, { bare: true, allLines: true, max: Number.POSITIVE_INFINITY }))}\n`,
    );
    process.exitCode = process.exitCode || 1;
  }
}
