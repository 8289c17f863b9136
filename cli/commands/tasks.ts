// `callbacks tasks get|list|events`: where a recording or screenshot task stands, which tasks match,
// and exactly what the platform sent for one.
import { Option, type Command } from 'commander';
import { eventView } from '../../lib/domain/event-view.ts';
import {
  allEvents,
  AmbiguousTaskError,
  type StoredEvent,
  type TaskQuery,
  type TaskRef,
} from '../../lib/domain/task-store.ts';
import type { TaskSummary } from '../../lib/domain/task-summary.ts';
import { TASK_STATUSES, type FileView, type Task, type TaskStatus } from '../../lib/domain/task.ts';
import { SERVICES, type Service } from '../../lib/platform/services.ts';
import { DEFAULT_LISTING_DAYS, listsDayByDay } from '../../lib/aws/dynamo/listing.ts';
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
import { CliError, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { positiveInt, timeRange } from '../option-parsers.ts';

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
        const files = opts.failed ? task.files.filter((f) => f.upload === 'failed') : task.files;
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
      .option('--limit <n>', 'at most this many tasks', positiveInt, 50)
      .option('--jsonl', 'one JSON object per line, streamed (for large outputs)'),
  ).action(async (opts: CommonOptions & ListOptions) => {
    const { since, until } = timeRange(opts);
    await withTarget(opts, async (ctx) => {
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
        ctx.out(
          since === undefined && listsDayByDay(query)
            ? `No task matches in the last ${DEFAULT_LISTING_DAYS} days (--since reaches further back).`
            : 'No task matches.',
        );
        return;
      }
      ctx.out(renderList(summaries, ctx.c));
      const more = summaries.length === opts.limit ? `; there may be more: raise --limit (now ${opts.limit})` : '';
      ctx.out(ctx.c.dim(`${plural(summaries.length, 'task')}, newest first${more}.`));
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
      const events = await oneTask(ref, () => allEvents(ctx.target.tasks, ref));
      if (!events) throw new CliError(`no ${describeRef(ref)} in ${ctx.where}`);
      if (opts.json) {
        printJson(events.map(eventView));
        return;
      }
      if (events.length === 0) {
        ctx.out(`Task ${printable(id)} has no raw callbacks left (they expire after their retention period).`);
        return;
      }
      ctx.out(renderEvents(events, ctx.c, { raw: opts.raw === true, wide: opts.wide === true }));
    });
  });
}

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
  limit: number;
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
  if (task.files.length === 0) return `${header}\n\nNo files yet.`;
  const counts = countFiles(task.files);
  const summary =
    `${plural(task.files.length, 'file')}: ${counts.uploaded} uploaded, ${counts.failed} failed, ` +
    `${counts.pending} pending`;
  const selected = opts.failed ? task.files.filter((f) => f.upload === 'failed') : task.files;
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

function countFiles(files: FileView[]) {
  return {
    uploaded: files.filter((f) => f.upload === 'uploaded').length,
    failed: files.filter((f) => f.upload === 'failed').length,
    pending: files.filter((f) => f.upload === 'pending').length,
  };
}

function uploadState(f: FileView, c: Colors): string {
  return f.upload === 'failed' ? styled`${colorStatus('failed', c)} ${f.code ?? '?'}` : colorStatus(f.upload, c);
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
    if (f.upload === 'failed') {
      const purge = f.purgeAt === null ? '' : `; purged by the platform at ${timeWithRelative(f.purgeAt, now)}`;
      out.push(`  ${c.yellow(`${f.message ?? 'upload failed'}${purge}`)}`);
    }
  });
  return out.join('\n');
}

function renderFilesWide(files: FileView[], c: Colors, now: number): string {
  return table(
    ['FILE', 'SIZE', 'UPLOAD', 'TRIES', 'URL', 'ERROR', 'PURGED BY THE PLATFORM'],
    files.map((f) => [
      f.fileName,
      humanSize(f.size),
      uploadState(f, c),
      String(f.attempts),
      f.url ?? '-',
      f.upload === 'failed' ? (f.message ?? '-') : '-',
      f.purgeAt === null ? '-' : c.yellow(timeWithRelative(f.purgeAt, now)),
    ]),
    c,
  );
}

export function renderList(summaries: TaskSummary[], c: Colors): string {
  return table(
    ['ID', 'SERVICE', 'STATUS', 'ROOM', 'SESSION', 'STARTED', 'UPLOADED', 'FAILED', 'PENDING', 'EVENTS'],
    summaries.map((s) => [
      s.id,
      s.service,
      colorStatus(s.status, c),
      s.roomId ?? '-',
      s.sessionId ?? '-',
      isoTime(s.startedAt),
      String(s.fileCount - s.failedFiles - s.pendingFiles),
      s.failedFiles > 0 ? c.red(String(s.failedFiles)) : '0',
      String(s.pendingFiles),
      String(s.eventCount),
    ]),
    c,
  );
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
