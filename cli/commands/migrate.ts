// `callbacks migrate`: brings a table written by the earlier layout (one task per id, with a ledger entry
// per callback) over to the current one, and gives headers written before room and session index keys
// held the appKey the keys this version writes, and headers that keep no counts yet their task's counts
// (docs/task-store.md), and arms the tasks written before tasks were armed at their next deadline. Idempotent
// and resumable: a task is done once its old header is gone, a header once its keys are right, it keeps its
// counts and it is armed, so an interrupted run is run again.
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { findMigrationWork, migrateTable, noMigration } from '../../lib/aws/dynamo/migrate.ts';
import { plural } from '../format.ts';
import { CliError, confirm, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { cliIo } from '../io.ts';

export function register(program: Command): void {
  withCommonOptions(
    program
      .command('migrate')
      .description('bring tasks written by the earlier table layout over to the current one')
      .option('--dry-run', 'count what would be brought over, write nothing')
      .option('--yes', 'do not ask for confirmation'),
  ).action(async (opts: CommonOptions & { dryRun?: boolean; yes?: boolean }) => {
    await withTarget(opts, async (ctx) => {
      const { dynamo: client, tableName } = ctx.target;
      const found = await findMigrationWork(client, tableName);
      const waiting = found.legacy.length;
      const idle = [found.legacy, found.rekey, found.uncounted, found.unindexed, found.unlisted, found.unarmed].every(
        (w) => w.length === 0,
      );
      if (idle) {
        if (opts.json) printJson(noMigration());
        else
          ctx.out(
            `No task of the earlier layout, no index key to rewrite, no header to count, no callback to key by ` +
              `time, no task to list by time and no task to arm in ${ctx.where}: nothing to do.`,
          );
        return;
      }
      if (!opts.yes && !opts.dryRun) {
        if (!cliIo().stdin.isTTY)
          throw new CliError('migrate rewrites tasks: pass --yes to confirm when not at a terminal');
        const what = [
          waiting > 0 ? `bring ${plural(waiting, 'task')} over to the current layout` : '',
          found.rekey.length > 0 ? `rewrite the index keys of ${plural(found.rekey.length, 'task header')}` : '',
          found.uncounted.length > 0 ? `count ${plural(found.uncounted.length, 'task')} into their headers` : '',
          found.unindexed.length > 0 ? `key the callbacks of ${plural(found.unindexed.length, 'task')} by time` : '',
          found.unlisted.length > 0 ? `list ${plural(found.unlisted.length, 'task')} by time of change and end` : '',
          found.unarmed.length > 0 ? `arm ${plural(found.unarmed.length, 'task')} at their next deadline` : '',
        ]
          .filter(Boolean)
          .join(' and ');
        if (!(await confirm(`${what[0]!.toUpperCase()}${what.slice(1)} in ${ctx.where}? [y/N] `))) {
          ctx.out('Nothing migrated.');
          return;
        }
      }
      const bar =
        cliIo().stderr.isTTY && !opts.json
          ? new SingleBar({
              format: 'migrate [{bar}] {value}/{total} tasks',
              hideCursor: true,
              stream: cliIo().stderr as NodeJS.WriteStream,
            })
          : null;
      bar?.start(waiting, 0);
      let result: Awaited<ReturnType<typeof migrateTable>>;
      try {
        result = await migrateTable({
          client,
          tableName,
          dryRun: opts.dryRun,
          onTask: (done, total) => {
            if (bar && total !== bar.getTotal()) bar.setTotal(total);
            bar?.update(done);
          },
        });
      } finally {
        bar?.stop();
      }
      if (opts.json) printJson(result);
      else {
        const verb = opts.dryRun ? 'Would bring over' : 'Brought over';
        if (result.tasks > 0)
          ctx.out(
            `${verb} ${plural(result.migrated, 'task')} of ${result.tasks}: ${plural(result.callbacks, 'callback')} ` +
              `with their raw bodies, ${result.carried} counted without (past their retention).`,
          );
        if (result.counted > 0)
          ctx.out(
            `${opts.dryRun ? 'Would count' : 'Counted'} ${plural(result.counted, 'task')} into their headers ` +
              '(written before headers kept their counts).',
          );
        if (result.indexed > 0)
          ctx.out(
            `${opts.dryRun ? 'Would key' : 'Keyed'} the raw callbacks of ${plural(result.indexed, 'task')} by time ` +
              '(written before they were).',
          );
        if (result.listed > 0)
          ctx.out(
            `${opts.dryRun ? 'Would list' : 'Listed'} ${plural(result.listed, 'task')} by time of change and end ` +
              '(written before those listings).',
          );
        if (result.armed > 0)
          ctx.out(
            `${opts.dryRun ? 'Would arm' : 'Armed'} ${plural(result.armed, 'task')} at their next deadline, for the ` +
              'sweeper (written before tasks were armed).',
          );
        if (result.rekeyed > 0)
          ctx.out(
            `${opts.dryRun ? 'Would rewrite' : 'Rewrote'} the room and session index keys of ` +
              `${plural(result.rekeyed, 'task header')} to hold their appKey.`,
          );
      }
      if (result.failed.length) {
        const first = result.failed[0]!;
        throw new CliError(
          `${plural(result.failed.length, 'task')} could not be brought over (task ${first.taskId}: ${first.error}); ` +
            'they keep the earlier layout: fix the cause and run callbacks migrate again.',
        );
      }
    });
  });
}
