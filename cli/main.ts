import { Command } from 'commander';
import { register as registerDev } from './commands/dev.ts';
import { register as registerEmulate } from './commands/emulate.ts';
import { register as registerVerify } from './commands/verify.ts';
import { register as registerTasks } from './commands/tasks.ts';
import { register as registerQuarantine } from './commands/quarantine.ts';
import { register as registerDlq } from './commands/dlq.ts';

const program = new Command();
program
  .name('callbacks')
  .description('Receiver of cloud recording and cloud screenshot callbacks: local stack, sender emulator, inspection.')
  .showHelpAfterError();

registerDev(program);
registerEmulate(program);
registerVerify(program);
registerTasks(program);
registerQuarantine(program);
registerDlq(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  // One clear sentence on stderr, never a stack trace.
  process.stderr.write(`callbacks: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = process.exitCode || 1;
}
