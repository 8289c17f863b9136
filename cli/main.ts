import { Command } from 'commander';

// Each command's module is loaded only when that command runs: the local stack pulls in the DynamoDB
// and SQS emulators, the others the AWS SDK, and a user waiting for `tasks get` should pay for neither.
const commands: Record<string, () => Promise<{ register(program: Command): void }>> = {
  dev: () => import('./commands/dev.ts'),
  emulate: () => import('./commands/emulate.ts'),
  verify: () => import('./commands/verify.ts'),
  tasks: () => import('./commands/tasks.ts'),
  quarantine: () => import('./commands/quarantine.ts'),
  dlq: () => import('./commands/dlq.ts'),
  events: () => import('./commands/events.ts'),
};

const program = new Command();
program
  .name('callbacks')
  .description('Receiver of cloud recording and cloud screenshot callbacks: local stack, sender emulator, inspection.')
  .showHelpAfterError();

try {
  const requested = process.argv[2];
  const names = requested && Object.hasOwn(commands, requested) ? [requested] : Object.keys(commands);
  for (const name of names) (await commands[name]!()).register(program);
  await program.parseAsync(process.argv);
} catch (err) {
  // One clear sentence on stderr, never a stack trace.
  process.stderr.write(`callbacks: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = process.exitCode || 1;
}
