// `callbacks recount <id>|--all`: a task's counts computed again from its items into its header
// (lib/aws/dynamo/recount.ts). The worker recounts a task itself when a message of it is given up after a
// partial write; this is for operators (after redriving dead letters, restoring items, or to check).
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { recountTasks } from '../../lib/aws/dynamo/recount.ts';
import { AmbiguousTaskError } from '../../lib/domain/task-store.ts';
import { plural } from '../format.ts';
import { CliError, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { cliIo } from '../io.ts';

export function register(program: Command): void {
  withCommonOptions(
    program
      .command('recount')
      .description("count a task's files and callbacks again from its items into its header")
      .argument('[id]', 'the task (recordId or imageId)')
      .option('--app-key <appKey>', 'the task of this appKey (when its id is used by several)')
      .option('--all', 'every task of the table (one Scan of it)'),
  ).action(async (id: string | undefined, opts: CommonOptions & { appKey?: string; all?: boolean }) => {
    if ((id === undefined) === !opts.all) throw new CliError('recount takes a task id or --all, not both');
    await withTarget(opts, async (ctx) => {
      const bar =
        opts.all && cliIo().stderr.isTTY && !opts.json
          ? new SingleBar({
              format: 'recount [{bar}] {value}/{total} tasks',
              hideCursor: true,
              stream: cliIo().stderr as NodeJS.WriteStream,
            })
          : null;
      bar?.start(0, 0);
      let result: Awaited<ReturnType<typeof recountTasks>>;
      try {
        result = await recountTasks({
          client: ctx.target.dynamo,
          tableName: ctx.target.tableName,
          ...(id !== undefined ? { task: { id, appKey: opts.appKey } } : {}),
          onTask: (done, total) => {
            if (bar && total !== bar.getTotal()) bar.setTotal(total);
            bar?.update(done);
          },
        });
      } catch (err) {
        if (err instanceof AmbiguousTaskError)
          throw new CliError(
            `task id ${err.id} is used by several appKeys (${err.appKeys.join(', ')}): say which with --app-key`,
          );
        throw err;
      } finally {
        bar?.stop();
      }
      if (opts.json) printJson(result);
      else if (id !== undefined && result.recounted === 0 && result.failed.length === 0)
        throw new CliError(`no task ${id} in ${ctx.where}`);
      else ctx.out(`Recounted ${plural(result.recounted, 'task')} in ${ctx.where}.`);
      if (result.failed.length) {
        const first = result.failed[0]!;
        throw new CliError(
          `${plural(result.failed.length, 'task')} could not be recounted (task ${first.taskId}: ${first.error}); ` +
            'run callbacks recount again.',
        );
      }
    });
  });
}
