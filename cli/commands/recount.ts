// `callbacks recount <id>|--all`: a task's counts computed again from its items into its header
// (lib/aws/dynamo/write/recount.ts). The worker recounts a task itself when a message of it is given up after a
// partial write; this is for operators (after redriving dead letters, restoring items, or to check).
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import {
  type Correction,
  type HeaderCountsSeen,
  recountTasks,
  type RecountResult,
} from '../../lib/aws/dynamo/write/recount.ts';
import { AmbiguousTaskError } from '../../lib/domain/task-store.ts';
import { type Colors, plural, printable, styled, table } from '../format.ts';
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
      else ctx.out(recountReport(result, ctx.where, ctx.c));
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

/** The counts a header keeps, as the report names them, in its order. */
const COUNT_NAMES: [keyof HeaderCountsSeen, string][] = [
  ['files', 'files'],
  ['uploaded', 'uploaded'],
  ['failed', 'failed'],
  ['lost', 'lost'],
  ['pending', 'pending'],
  ['events', 'callbacks'],
];

/** A task's counts in one line: `3 files (2 uploaded, 1 failed of which 1 lost, 0 pending), 9 callbacks`. */
function countsLine(c: HeaderCountsSeen): string {
  const lost = c.lost > 0 ? ` of which ${c.lost} lost` : '';
  return (
    `${plural(c.files, 'file')} (${c.uploaded} uploaded, ${c.failed} failed${lost}, ${c.pending} pending), ` +
    plural(c.events, 'callback')
  );
}

/** One row per count the recount changed: before and after. */
function correctionRows(k: Correction, c: Colors, task: boolean): string[][] {
  return COUNT_NAMES.filter(([key]) => k.before?.[key] !== k.after[key]).map(([key, name]) => [
    ...(task ? [k.taskId, k.appKey] : []),
    name,
    k.before === null ? c.dim('not kept') : c.red(String(k.before[key])),
    c.green(String(k.after[key])),
  ]);
}

/**
 * What the recount changed: each count it corrected, before and after, or that the task was counted right.
 * With several tasks, those it corrected, one row per count, and how many were right.
 */
export function recountReport(r: RecountResult, where: string, c: Colors): string {
  if (r.right) {
    const { taskId, appKey, counts } = r.right;
    return styled`Task ${taskId} (appKey ${appKey}) was counted right in ${where}: ${countsLine(counts)}; ${c.green(
      'nothing changed',
    )}.`;
  }
  if (r.recounted === 1 && r.failed.length === 0 && r.corrected.length === 1) {
    const k = r.corrected[0]!;
    return [
      styled`Recounted task ${k.taskId} (appKey ${k.appKey}) in ${where}: ${c.yellow(
        plural(correctionRows(k, c, false).length, 'count'),
      )} corrected; it now counts ${countsLine(k.after)}.`,
      table(['COUNT', 'BEFORE', 'AFTER'], correctionRows(k, c, false), c),
    ].join('\n');
  }
  const right = r.recounted - r.corrected.length;
  const head = `Recounted ${plural(r.recounted, 'task')} in ${printable(where)}: ${right} counted right, ${
    r.corrected.length
  } corrected${r.corrected.length > 0 ? ':' : '.'}`;
  if (r.corrected.length === 0) return head;
  const rows = r.corrected.flatMap((k) => correctionRows(k, c, true));
  return [head, table(['TASK', 'APP KEY', 'COUNT', 'BEFORE', 'AFTER'], rows, c)].join('\n');
}
