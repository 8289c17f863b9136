// `callbacks replay --from <time> --to <time> [filters]`: the archived callbacks of a window (one per delivery, as the
// table `raw` keeps them) sent back to the callback queue as the ingest sent them, marked as a replay; then how the
// worker took each, from its notes. The selection is one query of `raw` (cli/archive-query.ts: Athena on a stage,
// DuckDB locally), in the order of their receipt and delivery id, at most --limit of them: the cursor of the last one
// sent continues the replay where it stopped. Idempotent: a callback applied before is a duplicate to the worker,
// and changes nothing. The sending is lib/aws/sqs/replay.ts.
import { randomUUID } from 'node:crypto';
import { SingleBar } from 'cli-progress';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  type ArchivedDelivery,
  REPLAYED_COLUMNS,
  type ReplayMessage,
  replayMessageOf,
  sendReplays,
} from '../../lib/aws/sqs/replay.ts';
import { REPLAY_SENDER } from '../../lib/domain/message-notes.ts';
import { SERVICES, type Service } from '../../lib/platform/services.ts';
import { errorSentence } from '../../lib/text.ts';
import { type Archive, type ArchiveScope, type ArchiveValue, openArchive } from '../archive-query.ts';
import { waitedLine, waitForCopies } from '../copies-outcome.ts';
import { callbackTypeName, type Colors, isoTime, parseTimePoint, plural } from '../format.ts';
import {
  CliError,
  confirm,
  printJson,
  withCommonOptions,
  withTarget,
  type CommonOptions,
  type Context,
} from '../inspect.ts';
import { cliIo, setExitCode } from '../io.ts';
import { durationOption, positiveInt } from '../option-parsers.ts';
import { fitRows, queryProgressLine } from './archive.ts';
import { urlOf } from './dlq.ts';

const DEFAULT_REPLAY_LIMIT = 10_000;

interface ReplayOptions extends CommonOptions {
  from: string;
  to: string;
  appKey?: string;
  service?: Service;
  type?: string;
  task?: string;
  dryRun?: boolean;
  limit: number;
  cursor?: Cursor;
  yes?: boolean;
  wait: boolean;
  /** ms */
  timeout: number;
}

/** Where a replay stopped: the last row sent, in the order of the selection (received_at, then delivery_id). */
interface Cursor {
  receivedAt: string;
  deliveryId: string;
}

const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)\/(.+)$/;

/** `--cursor`, as a replay prints it: `<received_at>/<delivery_id>`. */
function cursorOption(text: string): Cursor {
  const m = CURSOR.exec(text);
  if (!m) throw new InvalidArgumentError('a cursor as replay printed it is needed (<received_at>/<delivery_id>).');
  return { receivedAt: m[1]!, deliveryId: m[2]! };
}

const cursorText = (c: Cursor) => `${c.receivedAt}/${c.deliveryId}`;

export function register(program: Command): void {
  withCommonOptions(
    program
      .command('replay')
      .description(
        'send the archived callbacks of a window back to the callback queue, as the ingest sent them (marked as a ' +
          'replay); the worker applies what it has not yet',
      )
      .requiredOption('--from <time>', 'received at or after: 30m, 2h, 7d, an ISO date or time, or epoch ms')
      .requiredOption('--to <time>', 'received before (same forms): the window ends there')
      .option('--app-key <appKey>', 'only the callbacks of this appKey')
      .addOption(new Option('--service <service>', 'only recording or screenshot callbacks').choices(SERVICES))
      .addOption(
        new Option('--type <type>', 'only callbacks of this type (1 start, 2 slice, 3 end, 4 upload)').choices([
          '1',
          '2',
          '3',
          '4',
        ]),
      )
      .option('--task <id>', 'only the callbacks of this task (recordId or imageId)')
      .option('--dry-run', 'print how many match and what would be sent; send nothing')
      .option('--limit <n>', 'send at most this many (the cursor printed continues)', positiveInt, DEFAULT_REPLAY_LIMIT)
      .option(
        '--cursor <cursor>',
        'continue after the callback of this cursor, as a replay printed it (<received_at>/<delivery_id>)',
        cursorOption,
      )
      .option('--yes', 'do not ask for confirmation')
      .option('--no-wait', 'do not wait for the worker to take them')
      .addOption(
        new Option('--timeout <duration>', 'how long to wait for the worker to take them (10s, 2m)')
          .argParser(durationOption)
          .default(300_000, '5m'),
      ),
  )
    .addHelpText(
      'after',
      `
Each callback goes to the queue as the ingest sent it, in its task's message group, marked resentBy
${REPLAY_SENDER}: the worker applies what its task does not hold yet, the rest are duplicates that change nothing.
It then waits for the worker's notes and reports how many were applied, duplicates, set aside and failed; the cursor
it prints continues with --cursor. The selection runs on Athena on a stage (its archive workgroup), on DuckDB locally.

Examples:
  callbacks replay --from 2025-11-22T02:00:00Z --to 2025-11-22T03:00:00Z --app-key app-1 --dry-run
  callbacks replay --stage prod --region eu-west-1 --from 3h --to 2h --type 4 --yes`,
    )
    .action(async (opts: ReplayOptions) => {
      const window = windowOf(opts, Date.now());
      await withTarget(opts, async (ctx) => {
        const queueUrl = await urlOf(ctx.target, 'queue');
        const progress = queryProgressLine(!opts.json);
        const archive = await openArchive(ctx.target, { onProgress: progress.update, scope: scopeOf(opts, window) });
        const selection = selectionOf(opts, window);
        const described = describeSelection(opts, window);
        if (archive.engine === 'athena' && window.to > Date.now() - FIREHOSE_LAG_MS)
          cliIo().stderr.write(
            `${ctx.c.yellow('note:')} callbacks stored in the last ${FIREHOSE_LAG_MS / 60_000} minutes may not be in ` +
              'the archive yet (Data Firehose writes its objects within about that): replay the window again later ' +
              'for them.\n',
          );
        try {
          if (opts.dryRun) {
            const count = await countOf(archive, selection);
            const rows = await rowsOf(archive, selection, opts.limit);
            progress.clear();
            printDryRun({ opts, window, count, rows, queueUrl, described, archive, out: ctx.out, c: ctx.c });
            return;
          }
          const found = await rowsOf(archive, selection, opts.limit + 1);
          progress.clear();
          const more = found.length > opts.limit;
          const rows = found.slice(0, opts.limit);
          if (rows.length === 0) {
            if (opts.json) printJson({ ...summaryOf(opts, window, archive, queueUrl), sent: 0, cursor: null, more });
            else ctx.out(`No archived callback matches (${described}) in ${archive.describe}.`);
            return;
          }
          const run = randomUUID();
          const messages = rows.map((row) => {
            try {
              return replayMessageOf(row, run);
            } catch (err) {
              throw new CliError(`${archive.describe}: ${errorSentence(err, { bare: true })}`);
            }
          });
          const what = `${plural(rows.length, 'archived callback')} (${described})`;
          if (!(await confirmed(`Send ${what} back to ${queueUrl}? [y/N] `, opts))) {
            ctx.out('Nothing sent.');
            return;
          }
          const result = await sendWithBar(ctx, queueUrl, messages, opts);
          const last = rows[result.through - 1];
          const cursor = last ? cursorText(cursorOf(last)) : opts.cursor ? cursorText(opts.cursor) : null;
          const left = result.through < rows.length || more;
          const copies = result.sent.map((s) => ({ deliveryId: s.deliveryId, copyId: s.messageId }));
          // What was sent, and where to continue, before the wait: a wait cut short by Ctrl-C has said them.
          if (!opts.json) {
            ctx.out(`Sent ${plural(result.sent.length, 'archived callback')} (${described}) to ${queueUrl}.`);
            if (cursor)
              ctx.out(
                left
                  ? ctx.c.yellow(`More callbacks of the window are left: continue with --cursor ${cursor}`)
                  : ctx.c.dim(`Cursor of the last one sent: ${cursor}`),
              );
          }
          const waited = opts.wait && copies.length > 0 ? await waitForWorker(ctx, copies, opts) : null;
          if (opts.json) {
            printJson({
              ...summaryOf(opts, window, archive, queueUrl),
              sent: result.sent.length,
              cursor,
              more: left,
              ...(waited
                ? {
                    waited: {
                      applied: waited.applied,
                      duplicate: waited.duplicate,
                      setAside: waited.quarantined,
                      failed: waited.failedAgain,
                      unseen: waited.unseen,
                      messages: waited.messages,
                    },
                  }
                : {}),
            });
          } else if (waited) {
            ctx.out(waitedLine(waited, opts.timeout, ctx.c, { quarantined: 'set aside', failed: 'failed' }));
          }
          if (result.failed)
            throw new CliError(
              `SQS refused the callback of delivery ${result.failed.deliveryId}, and the replay stopped there ` +
                `(${result.failed.error})${cursor ? `: continue with --cursor ${cursor}` : ''}`,
            );
          if (waited && waited.failedAgain > 0) setExitCode(1);
        } finally {
          progress.clear();
          await archive.close();
        }
      });
    });
}

/** Sends the messages, with a bar of those sent on a terminal; Ctrl-C stops after the batch being sent. */
async function sendWithBar(ctx: Context, queueUrl: string, messages: ReplayMessage[], opts: ReplayOptions) {
  const bar =
    cliIo().stderr.isTTY && !opts.json
      ? new SingleBar({
          format: 'replay [{bar}] {value}/{total} callbacks',
          hideCursor: true,
          stream: cliIo().stderr as NodeJS.WriteStream,
        })
      : null;
  let stopping = false;
  const stopListening = cliIo().onStop(() => {
    stopping = true;
  });
  bar?.start(messages.length, 0);
  try {
    return await sendReplays(ctx.target.sqs, queueUrl, messages, {
      onSent: (sent) => bar?.update(sent),
      stopped: () => stopping,
    });
  } finally {
    bar?.stop();
    stopListening();
  }
}

/** The worker's notes of the copies, awaited with a bar of those it has taken on a terminal. */
async function waitForWorker(ctx: Context, copies: { deliveryId: string; copyId: string }[], opts: ReplayOptions) {
  const bar =
    cliIo().stderr.isTTY && !opts.json
      ? new SingleBar({
          format: 'worker [{bar}] {value}/{total} callbacks taken',
          hideCursor: true,
          stream: cliIo().stderr as NodeJS.WriteStream,
        })
      : null;
  bar?.start(copies.length, 0);
  try {
    return await waitForCopies(ctx, copies, opts.timeout, (noted) => bar?.update(noted));
  } finally {
    bar?.stop();
  }
}

/** --from and --to read at `now`; a time that does not parse, or a window that is empty, is one sentence. */
function windowOf(opts: Pick<ReplayOptions, 'from' | 'to'>, now: number): { from: number; to: number } {
  const point = (name: string, text: string) => {
    try {
      return parseTimePoint(text, now);
    } catch (err) {
      throw new CliError(`${name}: ${errorSentence(err, { bare: true })}`);
    }
  };
  const from = point('--from', opts.from);
  const to = point('--to', opts.to);
  if (from >= to) throw new CliError('--from is not before --to: the window is empty');
  return { from, to };
}

const DAY_MS = 86_400_000;
/** How long after the worker archives a line it is in S3 on a stage: Firehose's 5-minute buffer, 1.5 times over. */
const FIREHOSE_LAG_MS = 8 * 60_000;
/** Beyond this many days, the local copy takes the whole archive rather than a folder per day. */
const MAX_SCOPED_DAYS = 400;

/** The folders the window's callbacks are in: its services, and the UTC days it spans. */
function scopeOf(opts: ReplayOptions, window: { from: number; to: number }): ArchiveScope | undefined {
  const days: string[] = [];
  for (let day = Math.floor(window.from / DAY_MS) * DAY_MS; day < window.to; day += DAY_MS) {
    days.push(new Date(day).toISOString().slice(0, 10));
    if (days.length > MAX_SCOPED_DAYS) return undefined;
  }
  return { services: opts.service ? [opts.service] : SERVICES, days };
}

/** A text as an SQL literal (the same quoting in Athena and DuckDB). */
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** The WHERE clause of the window and filters, after the cursor; the days named first, so only theirs are read. */
function selectionOf(opts: ReplayOptions, window: { from: number; to: number }): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const conditions = [
    `dt BETWEEN ${literal(iso(window.from).slice(0, 10))} AND ${literal(iso(window.to - 1).slice(0, 10))}`,
    `received_at >= ${literal(iso(window.from))}`,
    `received_at < ${literal(iso(window.to))}`,
  ];
  if (opts.service) conditions.push(`service = ${literal(opts.service)}`);
  if (opts.appKey !== undefined) conditions.push(`app_key = ${literal(opts.appKey)}`);
  if (opts.type !== undefined) conditions.push(`type = ${Number(opts.type)}`);
  if (opts.task !== undefined) conditions.push(`task_id = ${literal(opts.task)}`);
  if (opts.cursor) {
    const at = literal(opts.cursor.receivedAt);
    conditions.push(
      `(received_at > ${at} OR (received_at = ${at} AND delivery_id > ${literal(opts.cursor.deliveryId)}))`,
    );
  }
  return conditions.join(' AND ');
}

async function countOf(archive: Archive, selection: string): Promise<number> {
  const { rows } = await archive.query(`SELECT count(*) AS n FROM raw WHERE ${selection}`);
  return Number(rows[0]?.n ?? 0);
}

async function rowsOf(archive: Archive, selection: string, limit: number): Promise<ArchivedDelivery[]> {
  const { rows } = await archive.query(
    `SELECT ${REPLAYED_COLUMNS.join(', ')} FROM raw WHERE ${selection} ` +
      `ORDER BY received_at, delivery_id LIMIT ${limit}`,
  );
  return rows;
}

const cursorOf = (row: ArchivedDelivery): Cursor => ({
  receivedAt: String(row.received_at),
  deliveryId: String(row.delivery_id),
});

/** `received 2025-11-22T02:00:00Z to 2025-11-22T03:00:00Z, appKey app-1, type 4 upload` */
function describeSelection(opts: ReplayOptions, window: { from: number; to: number }): string {
  const parts = [`received ${isoTime(window.from)} to ${isoTime(window.to)}`];
  if (opts.service) parts.push(opts.service);
  if (opts.appKey !== undefined) parts.push(`appKey ${opts.appKey}`);
  if (opts.type !== undefined) parts.push(`type ${callbackTypeName(Number(opts.type))}`);
  if (opts.task !== undefined) parts.push(`task ${opts.task}`);
  if (opts.cursor) parts.push(`after ${cursorText(opts.cursor)}`);
  return parts.join(', ');
}

function summaryOf(opts: ReplayOptions, window: { from: number; to: number }, archive: Archive, queueUrl: string) {
  return {
    from: new Date(window.from).toISOString(),
    to: new Date(window.to).toISOString(),
    filters: {
      appKey: opts.appKey ?? null,
      service: opts.service ?? null,
      type: opts.type === undefined ? null : Number(opts.type),
      task: opts.task ?? null,
      cursor: opts.cursor ? cursorText(opts.cursor) : null,
    },
    archive: archive.describe,
    queue: queueUrl,
  };
}

/** Whether to send: --yes, or a yes at the terminal (not at one, --yes is needed). */
async function confirmed(question: string, opts: Pick<ReplayOptions, 'yes'>): Promise<boolean> {
  if (opts.yes) return true;
  if (!cliIo().stdin.isTTY)
    throw new CliError('replay sends callbacks to the queue: pass --yes to confirm when not at a terminal');
  return confirm(question);
}

function printDryRun(o: {
  opts: ReplayOptions;
  window: { from: number; to: number };
  count: number;
  rows: ArchivedDelivery[];
  queueUrl: string;
  described: string;
  archive: Archive;
  out: (text: string) => void;
  c: Colors;
}): void {
  const { opts, count, rows } = o;
  const run = 'dry-run';
  const last = rows.at(-1);
  const cursor = last ? cursorText(cursorOf(last)) : null;
  if (opts.json) {
    printJson({
      ...summaryOf(opts, o.window, o.archive, o.queueUrl),
      dryRun: true,
      count,
      wouldSend: rows.map((row) => {
        const m = replayMessageOf(row, run);
        return { ...row, groupId: m.groupId, attributes: m.attributes };
      }),
      cursor,
      more: count > rows.length,
    });
    return;
  }
  o.out(
    `${plural(count, 'archived callback matches', 'archived callbacks match')} (${o.described}): ` +
      'a dry run, nothing is sent.',
  );
  if (rows.length === 0) return;
  const shown = rows.map(
    (row): Record<string, ArchiveValue> => ({
      RECEIVED: isoTime(Date.parse(String(row.received_at))),
      SERVICE: String(row.service),
      'APP KEY': String(row.app_key),
      TYPE: typeof row.type === 'number' ? callbackTypeName(row.type) : '-',
      TASK: typeof row.task_id === 'string' ? row.task_id : '-',
      VERDICT: String(row.verdict),
      OUTCOME: String(row.outcome),
      DELIVERY: String(row.delivery_id),
    }),
  );
  const width = cliIo().stdout.isTTY ? (cliIo().stdout as { columns?: number }).columns : undefined;
  o.out(fitRows({ columns: Object.keys(shown[0]!), rows: shown }, o.c, width).text);
  const which = count > rows.length ? `The first ${plural(rows.length, 'callback')} (--limit ${opts.limit})` : 'These';
  o.out(
    o.c.dim(
      `${which} would be sent to ${o.queueUrl}, each in its task's message group, marked as a replay ` +
        `(resentBy ${REPLAY_SENDER})${count > rows.length ? `; the rest after --cursor ${cursor}` : ''}.`,
    ),
  );
}
