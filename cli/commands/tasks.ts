// `callbacks tasks get|list|events`: where a recording or screenshot task stands, which tasks match,
// and exactly what the platform sent for one.
import { stripVTControlCharacters } from 'node:util';
import { Option, type Command } from 'commander';
import { eventView } from '../../lib/domain/event-view.ts';
import { AmbiguousTaskError, type StoredEvent, type TaskQuery, type TaskRef } from '../../lib/domain/task-store.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { TASK_STATUSES, type FileView, type Task, type TaskStatus } from '../../lib/domain/task.ts';
import { STORAGE_CHANGE_DELAY_MS } from '../../lib/domain/deadlines.ts';
import {
  type FileVerification,
  isMissingState,
  VERIFICATION_STATES,
  type VerificationState,
  type VerifiedFileView,
} from '../../lib/domain/verification.ts';
import { SERVICES, type Service } from '../../lib/platform/services.ts';
import { DEFAULT_LISTING_DAYS, listsDayByDay } from '../../lib/aws/dynamo/read/listing.ts';
import {
  callbackTypeName,
  colorStatus,
  fields,
  humanSize,
  isoTime,
  jsonText,
  plural,
  printable,
  styled,
  table,
  timeWithRelative,
  type Colors,
} from '../format.ts';
import { CliError, printJson, withCommonOptions, withTarget, type CommonOptions, type Context } from '../inspect.ts';
import { cliIo } from '../io.ts';
import { earliestPurge } from '../../lib/aws/dynamo/read/purge-deadlines.ts';
import { TableReader } from '../../lib/aws/dynamo/table/table-client.ts';
import { inParallel } from '../../lib/in-parallel.ts';
import { durationOption, positiveInt, retentionDays, timeRange } from '../option-parsers.ts';
import { parseTimePoint } from '../format.ts';
import { allEventsOf } from '../../lib/domain/all-events.ts';
import { archivedCallbacks, archivedSentence } from '../../lib/domain/archived-callbacks.ts';

/** Everything in one page: the CLI prints whole tasks; the read API serves the same pages in parts. */
const WHOLE = { limit: Number.POSITIVE_INFINITY } as const;

/** A task id used by several appKeys needs --app-key: said in one sentence. */
export async function oneTask<T>(ref: TaskRef, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof AmbiguousTaskError)
      throw new CliError(
        `task id ${ref.id} is used by several appKeys (${err.appKeys.join(', ')}): say which with --app-key`,
      );
    throw err;
  }
}

export const appKeyOption = () =>
  new Option('--app-key <appKey>', 'the task of this appKey (when its id is used by several)');

export function register(program: Command): void {
  const tasks = program
    .command('tasks')
    .description('recording and screenshot tasks: one, a list, or the raw callbacks of one');

  withCommonOptions(
    tasks
      .command('get <id>')
      .description('one task (recordId or imageId) with its files')
      .addOption(appKeyOption())
      .option('--failed', 'only the files whose upload failed')
      .option('--limit <n>', `at most this many files (default ${DEFAULT_FILE_LIMIT}; --json: all)`, positiveInt)
      .option('--wide', 'one line per file with every column (URL, error, purge time), however wide'),
  ).action(async (id: string, opts: CommonOptions & GetOptions) => {
    await withTarget(opts, async (ctx) => {
      const ref: TaskRef = { id, appKey: opts.appKey };
      const [found, quarantined] = await Promise.all([
        oneTask(ref, () => ctx.target.tasks.getTaskPage(ref, WHOLE)),
        ctx.target.tasks.countQuarantined(id),
      ]);
      const seeQuarantine = `callbacks quarantine list --task ${id}`;
      const naming = (verb: string) =>
        plural(quarantined, `quarantined callback ${verb}s`, `quarantined callbacks ${verb}`);
      if (!found) {
        const held = quarantined > 0 ? `; ${naming('name')} it (see them: ${seeQuarantine})` : '';
        throw new CliError(`no ${describeRef(ref)} in ${ctx.where}${held}`);
      }
      const task = found.task;
      if (opts.json) {
        // The contract's object; --failed and an explicit --limit narrow its files.
        const files = opts.failed ? task.files.filter(isFailed) : task.files;
        printJson({ ...task, files: opts.limit ? files.slice(0, opts.limit) : files });
        return;
      }
      ctx.out(renderTask(task, ctx.c, ctx.now, { failed: opts.failed, limit: opts.limit, wide: opts.wide }));
      if (quarantined > 0) ctx.out(`\n${ctx.c.yellow(`${naming('name')} this task: ${seeQuarantine}`)}`);
    });
  });

  withCommonOptions(
    tasks
      .command('list')
      .description('tasks, newest first (by their first callback)')
      .option('--room <roomId>', "tasks of this room (of --app-key's; without it, of every appKey, day by day)")
      .option('--session <sessionId>', "tasks of this session (of --app-key's; without it, of every appKey)")
      .addOption(new Option('--status <status>', 'tasks in this status').choices(TASK_STATUSES))
      .option('--app-key <appKey>', 'tasks of this appKey')
      .addOption(new Option('--service <service>', 'recording or screenshot tasks only').choices(SERVICES))
      .option('--user <userId>', 'tasks of this userId (single-stream recordings)')
      .option(
        '--since <time>',
        'first callback at or after: 30m, 2h, 7d, an ISO date or time, or epoch ms ' +
          '(default without --app-key: last 30 days)',
      )
      .option('--until <time>', 'first callback at or before (same forms as --since)')
      .option('--lost', 'only tasks with lost files (failed uploads the platform has deleted)')
      .option('--stalled', 'only stalled tasks (no end, and no callback for longer than their stall time)')
      .option(
        '--purge-before <duration>',
        'only tasks with a failed file the platform deletes within this time (6h, 90m)',
        durationOption,
      )
      .option(
        '--updated-since <time>',
        'latest callback at or after (30m, 2h, an ISO time, epoch ms): by hour of change, newest hour first',
      )
      .option('--ended-since <time>', 'ended at or after (same forms): by hour of end, newest hour first')
      .addOption(
        new Option('--verification <state>', 'only tasks with a file in this state of its check in storage').choices(
          VERIFICATION_STATES,
        ),
      )
      .option('--limit <n>', 'at most this many tasks', positiveInt, 50)
      .option('--wide', 'every column, however wide the terminal (piped output always has them all)')
      .option('--jsonl', 'one JSON object per line, streamed (for large outputs)'),
  ).action(async (opts: CommonOptions & ListOptions) => {
    const query = listQueryOf(opts, Date.now());
    await withTarget(opts, async (ctx) => {
      const found = ctx.target.tasks.listTasks(query);
      if (opts.jsonl) {
        for await (const summary of found) ctx.out(jsonText(summary));
        return;
      }
      const summaries: TaskSummary[] = [];
      for await (const summary of found) summaries.push(summary);
      if (opts.json) {
        printJson(summaries);
        return;
      }
      if (summaries.length === 0) {
        ctx.out(noneMatches(query, opts));
        return;
      }
      // --purge-before: each task's earliest purge deadline, the soonest first.
      const purges = opts.purgeBefore === undefined ? null : await purgeDeadlines(ctx, summaries);
      if (purges) summaries.sort((a, b) => (purges.get(a) ?? Infinity) - (purges.get(b) ?? Infinity));
      const width = cliIo().stdout.isTTY ? (cliIo().stdout as { columns?: number }).columns : undefined;
      const { text, leftOut } = fitList(summaries, ctx.c, ctx.now, {
        width,
        wide: opts.wide,
        purge: purges ? (s) => purges.get(s) ?? null : undefined,
      });
      ctx.out(text);
      const more = summaries.length === opts.limit ? `; there may be more: raise --limit (now ${opts.limit})` : '';
      const order = purges
        ? 'soonest purge first'
        : byTime(query)
          ? `newest ${query.endedSince !== undefined ? 'end' : 'change'} hour first`
          : 'newest first';
      const hidden = leftOut.length
        ? `; ${leftOut.join(', ')} left out to fit ${width} columns: --wide shows them`
        : '';
      ctx.out(ctx.c.dim(`${plural(summaries.length, 'task')}, ${order}${more}${hidden}.`));
    });
  });

  withCommonOptions(
    tasks
      .command('events <id>')
      .description('the raw callbacks stored for a task, in timestamp order')
      .addOption(appKeyOption())
      .option('--raw', 'show each callback body exactly as received')
      .option('--wide', 'also show each event key'),
  ).action(async (id: string, opts: CommonOptions & { raw?: boolean; wide?: boolean; appKey?: string }) => {
    await withTarget(opts, async (ctx) => {
      const ref: TaskRef = { id, appKey: opts.appKey };
      const found = await oneTask(ref, () => allEventsOf(ctx.target.tasks, ref));
      if (!found) throw new CliError(`no ${describeRef(ref)} in ${ctx.where}`);
      const { events } = found;
      if (opts.json) {
        printJson(events.map(eventView));
        return;
      }
      // The table's older raw callbacks are in the archive: said after those it holds.
      const archived = archivedCallbacks(found.task, ctx.now, retentionDays());
      const note = archived ? archivedSentence(archived) : null;
      if (events.length === 0 && !note) {
        ctx.out(`Task ${printable(id)} has no raw callbacks left (they expire after their retention period).`);
        return;
      }
      if (events.length > 0) ctx.out(renderEvents(events, ctx.c, { raw: opts.raw === true, wide: opts.wide === true }));
      if (note) ctx.out(ctx.c.dim(printable(note)));
    });
  });
}

/** The listing `tasks list` asks for, its times read at `now`; a time that does not parse is one sentence. */
export function listQueryOf(opts: ListOptions, now: number): TaskQuery {
  const { since, until } = timeRange(opts, now);
  const point = (name: string, text: string | undefined) => {
    if (text === undefined) return undefined;
    try {
      return parseTimePoint(text, now);
    } catch (err) {
      throw new CliError(`${name}: ${(err as Error).message}`);
    }
  };
  const query: TaskQuery = {
    roomId: opts.room,
    sessionId: opts.session,
    status: opts.status,
    appKey: opts.appKey,
    service: opts.service,
    userId: opts.user,
    since,
    until,
    limit: opts.limit,
  };
  if (opts.lost) query.lost = true;
  if (opts.stalled) query.stalled = true;
  if (opts.purgeBefore !== undefined) query.purgeWithinMs = opts.purgeBefore;
  if (opts.verification) query.verification = opts.verification;
  const updatedSince = point('--updated-since', opts.updatedSince);
  const endedSince = point('--ended-since', opts.endedSince);
  if (updatedSince !== undefined) query.updatedSince = updatedSince;
  if (endedSince !== undefined) query.endedSince = endedSince;
  return query;
}

/**
 * What an empty listing says: the window it read, and, when --since narrowed it, that --since is by first callback,
 * so that a task that started before it is not listed whatever it did since.
 */
function noneMatches(query: TaskQuery, opts: ListOptions): string {
  if (opts.since !== undefined && !byTime(query))
    return (
      `No task matches: --since ${opts.since} is by first callback, so a task that started earlier is not listed ` +
      `whatever it did since; --updated-since ${opts.since} lists the tasks changed since then.`
    );
  if (query.since === undefined && !byTime(query) && listsDayByDay(query))
    return `No task matches in the last ${DEFAULT_LISTING_DAYS} days (--since reaches further back).`;
  return 'No task matches.';
}

/** Each task's earliest purge deadline (one Query of its failed files each). */
async function purgeDeadlines(ctx: Context, summaries: TaskSummary[]): Promise<Map<TaskSummary, number | null>> {
  const table = new TableReader(ctx.target.dynamo, ctx.target.tableName);
  const found = await inParallel(summaries, PURGE_READS_AT_ONCE, (s) => earliestPurge(table, s.appKey, s.id));
  return new Map(summaries.map((s, i) => [s, found[i]?.purgeAt ?? null]));
}

/** Tasks whose failed files are read at the same time for their purge deadlines. */
const PURGE_READS_AT_ONCE = 8;

/** Whether a listing goes by hour of change or of end rather than by first callback. */
const byTime = (q: TaskQuery): boolean => q.updatedSince !== undefined || q.endedSince !== undefined;

/** A lost file is a failed one whose purge time has passed: `--failed` shows both. */
const isFailed = (f: FileView): boolean => f.upload === 'failed' || f.upload === 'lost';

function describeRef(ref: TaskRef): string {
  return ref.appKey === undefined ? `task ${ref.id}` : `task ${ref.id} of appKey ${ref.appKey}`;
}

interface GetOptions {
  appKey?: string;
  failed?: boolean;
  limit?: number;
  wide?: boolean;
}

interface ListOptions {
  room?: string;
  session?: string;
  status?: TaskStatus;
  appKey?: string;
  service?: Service;
  user?: string;
  since?: string;
  until?: string;
  lost?: boolean;
  stalled?: boolean;
  /** ms, parsed as the option is read. */
  purgeBefore?: number;
  updatedSince?: string;
  endedSince?: string;
  verification?: VerificationState;
  limit: number;
  wide?: boolean;
  jsonl?: boolean;
}

// ---------------------------------------------------------------------------------------------------

/** Files shown by `tasks get` unless --limit says otherwise: a 50,000-image task is not printed whole unasked. */
export const DEFAULT_FILE_LIMIT = 50;

export function renderTask(
  task: Task,
  c: Colors,
  now: number,
  opts: { failed?: boolean; limit?: number; wide?: boolean } = {},
): string {
  const pairs: [string, string][] = [
    ['app key', task.appKey],
    ['room', task.roomId ?? '-'],
    ['session', task.sessionId ?? '-'],
    ['user', task.userId ?? '-'],
  ];
  if (task.service === 'recording') {
    pairs.push([
      'mode',
      task.mode === null || task.mode === undefined ? '-' : `${task.mode} (${task.modeName ?? 'unknown'})`,
    ]);
  }
  pairs.push(
    ['started', timeWithRelative(task.startedAt, now)],
    ['ended', timeWithRelative(task.endedAt, now)],
    ['updated', timeWithRelative(task.updatedAt, now)],
    ['extra', task.extra || '-'],
    ['config', task.config ? JSON.stringify(task.config) : '-'],
  );
  if (task.service === 'recording' && task.startFileName) pairs.push(['start file', task.startFileName]);
  pairs.push(['events', String(task.eventCount)]);
  if (typeof task.stalledSince === 'number')
    pairs.push(['stalled', c.yellow(`since ${timeWithRelative(task.stalledSince, now)}`)]);
  if (typeof task.settledAt === 'number') pairs.push(['settled', c.green(timeWithRelative(task.settledAt, now))]);
  if (task.lastError) {
    const e = task.lastError;
    pairs.push([
      'last error',
      c.red(
        `${callbackTypeName(e.type)} callback, code ${e.code}${e.message ? ` "${e.message}"` : ''} at ${isoTime(e.at)}`,
      ),
    ]);
  }
  const header = `${c.bold(`${task.service} task ${task.id}`)}  ${colorStatus(task.status, c)}\n${fields(pairs, c)}`;
  // The header's counts: the same whichever files are shown.
  const counts = task.counts;
  if (counts.total === 0 && task.files.length === 0) return `${header}\n\nNo files yet.`;
  const lost = counts.lost > 0 ? ` (${counts.lost} lost)` : '';
  const summary =
    `${plural(counts.total, 'file')}: ${counts.uploaded} uploaded, ${counts.failed} failed${lost}, ` +
    `${counts.pending} pending`;
  const selected = opts.failed ? task.files.filter(isFailed) : task.files;
  const limit = opts.limit ?? DEFAULT_FILE_LIMIT;
  const shown = selected.slice(0, limit);
  const lines = [header, '', c.bold(summary)];
  if (shown.length > 0) lines.push(opts.wide ? renderFilesWide(shown, c, now) : renderFiles(shown, c, now));
  else if (opts.failed) lines.push('No file failed to upload.');
  const left = selected.length - shown.length;
  if (left > 0) {
    const which = opts.failed ? 'failed files' : 'files';
    lines.push(
      c.dim(`${plural(left, 'more file', `more ${which}`)} not shown: --limit ${selected.length} shows them all.`),
    );
  }
  return lines.join('\n');
}

function uploadState(f: FileView, c: Colors): string {
  if (f.upload === 'lost') return styled`${c.red('lost')} ${f.code ?? '?'}`;
  return f.upload === 'failed' ? styled`${colorStatus('failed', c)} ${f.code ?? '?'}` : colorStatus(f.upload, c);
}

/**
 * What the platform does with a failed file: the countdown to its purge, or that it has deleted it. A new
 * storage configuration takes up to 30 minutes to apply, so a file purged sooner is past saving that way.
 */
export function purgeNote(f: FileView, now: number): string {
  if (f.purgeAt === null) return '';
  return `; ${f.upload === 'lost' ? 'deleted' : 'purged'} by the platform at ${purgeTime(f, now)}`;
}

/** When the platform deletes a failed file: with the countdown, or `(lost)` once it has. */
function purgeTime(f: FileView, now: number): string {
  if (f.purgeAt === null) return '-';
  if (f.upload === 'lost') return `${isoTime(f.purgeAt)} (lost)`;
  const left = f.purgeAt - now;
  if (left <= 0) return timeWithRelative(f.purgeAt, now);
  const late = left < STORAGE_CHANGE_DELAY_MS ? ', sooner than a storage change applies' : '';
  return `${isoTime(f.purgeAt)} (in ${durationText(left)}${late})`;
}

/** A duration in its two largest units: `45 s`, `12 min`, `3 h 05 min`, `2 d 4 h`. */
export function durationText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/**
 * The files in short columns, each followed by indented lines for what does not fit 100 columns: the URL
 * (on a line of its own, whole, to copy), or the failure and the platform's purge deadline.
 */
function renderFiles(files: FileView[], c: Colors, now: number): string {
  const lines = table(
    ['FILE', 'SIZE', 'UPLOAD', 'TRIES'],
    files.map((f) => [f.fileName, humanSize(f.size), uploadState(f, c), String(f.attempts)]),
    c,
  ).split('\n');
  const out = [lines[0]!];
  files.forEach((f, i) => {
    out.push(lines[i + 1]!);
    if (f.url) out.push(`  ${c.dim(f.url)}`);
    const check = storageNote(f, c, now);
    if (check) out.push(`  ${check}`);
    if (isFailed(f)) {
      const note = `${f.message ?? 'upload failed'}${purgeNote(f, now)}`;
      out.push(`  ${f.upload === 'lost' ? c.red(note) : c.yellow(note)}`);
    }
  });
  return out.join('\n');
}

function renderFilesWide(files: FileView[], c: Colors, now: number): string {
  return table(
    ['FILE', 'SIZE', 'UPLOAD', 'TRIES', 'URL', 'ERROR', 'PURGED BY THE PLATFORM', 'IN STORAGE'],
    files.map((f) => {
      const v = verificationOfView(f);
      return [
        f.fileName,
        humanSize(f.size),
        uploadState(f, c),
        String(f.attempts),
        f.url ?? '-',
        isFailed(f) ? (f.message ?? '-') : '-',
        f.purgeAt === null ? '-' : c.yellow(purgeTime(f, now)),
        v ? colorVerification(v.state, c) : '-',
      ];
    }),
    c,
  );
}

/** A file's verification, when the read that gave it checked its storage (docs/verification.md). */
const verificationOfView = (f: FileView): FileVerification | null =>
  (f as Partial<VerifiedFileView>).verification ?? null;

function colorVerification(state: VerificationState, c: Colors): string {
  const text = state.replace('_', ' ');
  if (isMissingState(state)) return c.red(text);
  if (state === 'verified') return c.green(text);
  return state === 'unverifiable' ? c.yellow(text) : c.dim(text);
}

/** What the check of an uploaded file in its storage found, when it is not simply there as reported. */
function storageNote(f: FileView, c: Colors, now: number): string | null {
  const v = verificationOfView(f);
  if (!v || (v.state === 'verified' && v.reason === null)) return null;
  if (v.state === 'pending') return c.dim('in storage: not checked yet');
  const when = v.checkedAt === null ? '' : ` (checked ${timeWithRelative(v.checkedAt, now)})`;
  return styled`in storage: ${colorVerification(v.state, c)}${v.reason ? `: ${v.reason}` : ''}${when}`;
}

/** A column of `tasks list`: its heading and its cell of a row. */
interface ListColumn {
  head: string;
  cell: (s: TaskSummary) => string;
}

function listColumns(c: Colors, now: number, purge?: (s: TaskSummary) => number | null): ListColumn[] {
  const columns: ListColumn[] = [
    { head: 'ID', cell: (s) => s.id },
    { head: 'APP KEY', cell: (s) => s.appKey },
    { head: 'SERVICE', cell: (s) => s.service },
    { head: 'STATUS', cell: (s) => statusCell(s, c, now) },
    { head: 'ROOM', cell: (s) => s.roomId ?? '-' },
    { head: 'SESSION', cell: (s) => s.sessionId ?? '-' },
    { head: 'USER', cell: (s) => s.userId || '-' },
    { head: 'STARTED', cell: (s) => isoTime(s.startedAt) },
    { head: 'ENDED', cell: (s) => isoTime(s.endedAt) },
    { head: 'DURATION', cell: (s) => (typeof s.durationMs === 'number' ? durationText(s.durationMs) : '-') },
    { head: 'UPLOADED', cell: (s) => String(s.fileCount - s.failedFiles - s.pendingFiles) },
    {
      head: 'FAILED',
      cell: (s) =>
        s.failedFiles > 0
          ? c.red(s.lostFiles > 0 ? `${s.failedFiles} (${s.lostFiles} lost)` : String(s.failedFiles))
          : '0',
    },
    { head: 'PENDING', cell: (s) => String(s.pendingFiles) },
    { head: 'EVENTS', cell: (s) => String(s.eventCount) },
  ];
  if (purge) columns.push({ head: 'PURGE', cell: (s) => purgeCell(purge(s), c, now) });
  return columns;
}

/**
 * The columns left out, in this order, while the table is wider than the terminal: the least useful to an operator
 * first. The id, status, failed files and purge deadline always stay.
 */
const LEFT_OUT_FIRST = [
  'USER',
  'SESSION',
  'EVENTS',
  'ENDED',
  'PENDING',
  'DURATION',
  'UPLOADED',
  'SERVICE',
  'ROOM',
  'APP KEY',
  'STARTED',
];

export interface ListLayout {
  /** The terminal's width in columns: columns are left out until the table fits (none without it). */
  width?: number | undefined;
  /** Every column, however wide. */
  wide?: boolean | undefined;
  /** The earliest purge deadline of each row (`--purge-before`): a PURGE column. */
  purge?: ((s: TaskSummary) => number | null) | undefined;
}

/** The rows as a table that fits `width`, and the headings of the columns left out to fit it. */
export function fitList(
  summaries: TaskSummary[],
  c: Colors,
  now: number,
  layout: ListLayout = {},
): { text: string; leftOut: string[] } {
  const columns = listColumns(c, now, layout.purge);
  const cells = summaries.map((s) => columns.map((col) => col.cell(s)));
  const render = (shown: ListColumn[]) => {
    const at = shown.map((col) => columns.indexOf(col));
    return table(
      shown.map((col) => col.head),
      cells.map((row) => at.map((i) => row[i]!)),
      c,
    );
  };
  const fits = (text: string) =>
    text.split('\n').every((line) => stripVTControlCharacters(line).length <= (layout.width ?? Infinity));
  let shown = columns;
  let text = render(shown);
  const leftOut: string[] = [];
  if (layout.wide || !layout.width) return { text, leftOut };
  for (const head of LEFT_OUT_FIRST) {
    if (fits(text)) break;
    shown = shown.filter((col) => col.head !== head);
    leftOut.push(head);
    text = render(shown);
  }
  return { text, leftOut };
}

export function renderList(summaries: TaskSummary[], c: Colors, now: number, layout: ListLayout = {}): string {
  return fitList(summaries, c, now, layout).text;
}

/** A purge deadline in a PURGE cell: when, and how long from now; red under the time a storage change takes. */
function purgeCell(purgeAt: number | null, c: Colors, now: number): string {
  if (purgeAt === null) return '-';
  const left = purgeAt - now;
  if (left <= 0) return c.red(`${isoTime(purgeAt)} (passed)`);
  const text = `${isoTime(purgeAt)} (in ${durationText(left)})`;
  return left < STORAGE_CHANGE_DELAY_MS ? c.red(text) : c.yellow(text);
}

/** The status, and whether the task is stalled (for how long) or settled. */
function statusCell(s: TaskSummary, c: Colors, now: number): string {
  const status = colorStatus(s.status, c);
  if (typeof s.stalledSince === 'number')
    return styled`${status} ${c.yellow(`stalled ${durationText(now - s.stalledSince)}`)}`;
  if (typeof s.settledAt === 'number') return styled`${status} ${c.dim('settled')}`;
  return status;
}

/** The callback's code as sent (the platform sends some numbers as strings). */
function codeOf(e: StoredEvent): string {
  const body = eventView(e).body as { code?: unknown } | null;
  const code = body && typeof body === 'object' ? body.code : undefined;
  return typeof code === 'number' || typeof code === 'string' ? String(code) : '-';
}

function renderEvents(events: StoredEvent[], c: Colors, opts: { raw: boolean; wide: boolean }): string {
  const head = ['TYPE', 'TIMESTAMP', 'CODE', 'FILE', 'RECEIVED', 'SIGNATURE'];
  const lines = table(
    opts.wide ? [...head, 'EVENT KEY'] : head,
    events.map((e) => {
      const code = codeOf(e);
      const row = [
        callbackTypeName(e.type),
        isoTime(e.timestamp),
        code === '200' || code === '-' ? code : c.red(code),
        e.fileName ?? '-',
        isoTime(e.receivedAt),
        colorStatus(e.verdict, c),
      ];
      return opts.wide ? [...row, c.dim(e.key)] : row;
    }),
    c,
  ).split('\n');
  if (!opts.raw) return lines.join('\n');
  // One line per row in a borderless table: each body goes under its row, outside the columns, each of its
  // lines indented (a trailing line break of the body is not shown).
  const body = (raw: string) =>
    printable(raw.replace(/\r?\n$/, '').replace(/\r\n/g, '\n'), { lines: true })
      .split('\n')
      .map((line) => `  ${line}`);
  return [lines[0]!, ...events.flatMap((e, i) => [lines[i + 1]!, ...body(e.raw)])].join('\n');
}
