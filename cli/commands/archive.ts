// `callbacks archive query "<SQL>"`: SQL over the archive of raw callbacks, the table `raw` (docs/archive.md), on
// a stage with Athena or on the local stack with DuckDB (cli/archive-query.ts); the rows as a table fitted to the
// terminal, or --json.
import type { Command } from 'commander';
import { stripVTControlCharacters } from 'node:util';
import type { AthenaProgress } from '../../lib/aws/athena/query.ts';
import { type ArchiveRows, type ArchiveValue, openArchive } from '../archive-query.ts';
import { type Colors, humanSize, plural, printable, table } from '../format.ts';
import { printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { cliIo } from '../io.ts';

export function register(program: Command): void {
  const archive = program
    .command('archive')
    .description('the archive of raw callbacks: SQL over months of them (Athena on a stage, DuckDB locally)');

  withCommonOptions(
    archive
      .command('query <sql>')
      .description(
        'run SQL against the table raw (one row per delivery; docs/archive.md has its columns), print the rows',
      )
      .option('--wide', 'every cell whole, however wide the terminal (piped output always has them whole)'),
  )
    .addHelpText(
      'after',
      `
On a stage the query runs on Athena, in the stage's archive workgroup and database (its stack's outputs); locally
on DuckDB, over the local stack's archive. Name the days a query reads (dt): only their folders are read.

Examples:
  callbacks archive query "SELECT type, outcome, count(*) AS n FROM raw WHERE dt = '2025-11-22' GROUP BY 1, 2"
  callbacks archive query --stage prod --region eu-west-1 --json \\
    "SELECT received_at, type, body FROM raw WHERE dt >= '2025-11-20' AND task_id = 'rec-123' ORDER BY received_at"`,
    )
    .action(async (sql: string, opts: CommonOptions & { wide?: boolean }) => {
      await withTarget(opts, async (ctx) => {
        const progress = queryProgressLine(!opts.json);
        const source = await openArchive(ctx.target, { onProgress: progress.update });
        let result: ArchiveRows;
        try {
          result = await source.query(sql);
        } finally {
          progress.clear();
          await source.close();
        }
        if (opts.json) {
          printJson(result.rows);
          return;
        }
        const scanned = result.scannedBytes === null ? '' : `, ${humanSize(result.scannedBytes)} scanned`;
        if (result.rows.length === 0) {
          ctx.out(ctx.c.dim(`No rows (${source.describe}${scanned}).`));
          return;
        }
        const width = cliIo().stdout.isTTY ? (cliIo().stdout as { columns?: number }).columns : undefined;
        const { text, cut } = fitRows(result, ctx.c, opts.wide ? undefined : width);
        ctx.out(text);
        const cutNote = cut.length
          ? `; ${cut.join(', ')} cut to fit ${width} columns: --wide or --json shows them whole`
          : '';
        ctx.out(ctx.c.dim(`${plural(result.rows.length, 'row')} from ${source.describe}${scanned}${cutNote}.`));
      });
    });
}

/**
 * A progress line on stderr while Athena runs a query, on a terminal only: its state, the time so far and what it
 * has read. `clear` rubs it out before the answer is printed.
 */
export function queryProgressLine(wanted: boolean): {
  update?: (progress: AthenaProgress) => void;
  clear(): void;
} {
  const { stderr } = cliIo();
  if (!wanted || !stderr.isTTY) return { clear() {} };
  let shown = false;
  return {
    update(p) {
      const scanned = p.scannedBytes === null ? '' : `, ${humanSize(p.scannedBytes)} scanned`;
      stderr.write(`\r\x1b[KAthena: query ${p.state.toLowerCase()}, ${Math.round(p.elapsedMs / 1000)} s${scanned}`);
      shown = true;
    },
    clear() {
      if (shown) stderr.write('\r\x1b[K');
    },
  };
}

/** The narrowest a cell is cut to, however many columns there are. */
const MIN_CUT_WIDTH = 12;
const GAP = 2;

/** A value in a cell: text made printable, null dimmed. */
function cellOf(value: ArchiveValue, c: Colors): string {
  if (value === null) return c.dim('null');
  return printable(typeof value === 'string' ? value : String(value));
}

/**
 * The rows as a table within `width` columns (none: whole): the widest columns are cut first, each cell that is too
 * long ending in `…`, never narrower than its header or MIN_CUT_WIDTH; answers which columns were cut.
 */
export function fitRows(
  result: Pick<ArchiveRows, 'columns' | 'rows'>,
  c: Colors,
  width: number | undefined,
): { text: string; cut: string[] } {
  const cells = result.rows.map((row) => result.columns.map((name) => cellOf(row[name] ?? null, c)));
  const visible = (text: string) => stripVTControlCharacters(text).length;
  const widths = result.columns.map((name, i) => Math.max(name.length, ...cells.map((row) => visible(row[i]!))));
  const caps = [...widths];
  const total = () => caps.reduce((a, b) => a + b, 0) + GAP * (caps.length - 1);
  if (width !== undefined) {
    const floor = (i: number) => Math.max(result.columns[i]!.length, MIN_CUT_WIDTH);
    while (total() > width) {
      const widest = caps.reduce((best, w, i) => (w - floor(i) > caps[best]! - floor(best) ? i : best), 0);
      if (caps[widest]! <= floor(widest)) break;
      caps[widest] = Math.max(floor(widest), caps[widest]! - (total() - width));
    }
  }
  const cut = result.columns.filter((_, i) => caps[i]! < widths[i]!);
  const shown = cells.map((row) =>
    row.map((cell, i) => (visible(cell) > caps[i]! ? c.dim(`${cell.slice(0, caps[i]! - 1)}…`) : cell)),
  );
  return { text: table(result.columns, shown, c), cut };
}
