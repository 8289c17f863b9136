// `callbacks quarantine list`: callbacks kept aside instead of applied (bad body, forged signature,
// replay, service mismatch), and why.
import type { Command } from 'commander';
import type { QuarantineEntry } from '../../lib/domain/task-store.ts';
import { colorStatus, isoTime, plural, table } from '../format.ts';
import { positiveInt, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';

export function register(program: Command): void {
  const quarantine = program.command('quarantine').description('callbacks kept aside rather than applied to a task');

  withCommonOptions(
    quarantine
      .command('list')
      .description('quarantined callbacks, newest first, with the reason')
      .option('--days <n>', 'look back this many days', positiveInt, 7)
      .option('--limit <n>', 'at most this many entries', positiveInt),
  ).action(async (opts: CommonOptions & { days: number; limit?: number }) => {
    await withTarget(opts, async (ctx) => {
      const entries: QuarantineEntry[] = [];
      for await (const e of ctx.target.tasks.listQuarantine({ sinceDays: opts.days, limit: opts.limit }))
        entries.push(e);
      if (opts.json) {
        printJson(entries);
        return;
      }
      if (entries.length === 0) {
        ctx.out(`Nothing quarantined in the last ${plural(opts.days, 'day')}.`);
        return;
      }
      ctx.out(
        table(
          ['RECEIVED', 'REASON', 'DETAIL', 'SERVICE', 'APP KEY', 'TASK', 'SIGNATURE'],
          entries.map((e) => [
            isoTime(e.receivedAt),
            ctx.c.red(e.reason),
            e.detail,
            e.service,
            e.appKey ?? '-',
            e.taskId ?? '-',
            colorStatus(e.verdict, ctx.c),
          ]),
          ctx.c,
        ),
      );
      ctx.out(
        ctx.c.dim(
          `${plural(entries.length, 'callback')} quarantined in the last ${plural(opts.days, 'day')}, newest first; \`--json\` shows their raw bodies.`,
        ),
      );
    });
  });
}
