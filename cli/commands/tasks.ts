// `callbacks tasks get|list|events`: where a recording or screenshot task stands, which tasks match,
// and exactly what the platform sent for one.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { eventView } from '../../lib/domain/event-view.ts';
import {
  AmbiguousTaskError,
  type StoredEvent,
  type TaskQuery,
  type TaskRef,
  type TaskSummary,
} from '../../lib/domain/task-store.ts';
import { TASK_STATUSES, type FileView, type Task, type TaskStatus } from '../../lib/domain/task.ts';
import { SERVICES, type Service } from '../../lib/domain/services.ts';
import {
  callbackTypeName,
  colorStatus,
  fields,
  humanSize,
  isoTime,
  parseTimePoint,
  plural,
  table,
  timeWithRelative,
  type Colors,
} from '../format.ts';
import { CliError, positiveInt, printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';

/** Everything in one page: the CLI prints whole tasks; the read API serves the same pages in parts. */
const WHOLE = { limit: Number.POSITIVE_INFINITY } as const;

/** A task id used by several appKeys needs --app-key: said in one sentence. */
async function oneTask<T>(ref: TaskRef, read: () => Promise<T>): Promise<T> {
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

const appKeyOption = () => new Option('--app-key <appKey>', 'the task of this appKey (when its id is used by several)');

export function register(program: Command): void {
  const tasks = program
    .command('tasks')
    .description('recording and screenshot tasks: one, a list, or the raw callbacks of one');

  withCommonOptions(
    tasks.command('get <id>').description('one task (recordId or imageId) with its files').addOption(appKeyOption()),
  ).action(async (id: string, opts: CommonOptions & { appKey?: string }) => {
    await withTarget(opts, async (ctx) => {
      const ref: TaskRef = { id, appKey: opts.appKey };
      const found = await oneTask(ref, () => ctx.target.tasks.getTaskPage(ref, WHOLE));
      if (!found) throw new CliError(`no ${describeRef(ref)} in ${ctx.where}`);
      if (opts.json) printJson(found.task);
      else ctx.out(renderTask(found.task, ctx.c, ctx.now));
    });
  });

  withCommonOptions(
    tasks
      .command('list')
      .description('tasks, newest first (by their first callback)')
      .option('--room <roomId>', 'tasks of this room')
      .option('--session <sessionId>', 'tasks of this session')
      .addOption(new Option('--status <status>', 'tasks in this status').choices(TASK_STATUSES))
      .option('--app-key <appKey>', 'tasks of this appKey')
      .addOption(new Option('--service <service>', 'recording or screenshot tasks only').choices(SERVICES))
      .option('--user <userId>', 'tasks of this userId')
      .option(
        '--since <time>',
        'first callback at or after: 30m, 2h, 7d, an ISO date or epoch ms (default: last 30 days)',
        timePoint,
      )
      .option('--until <time>', 'first callback at or before (same forms as --since)', timePoint)
      .option('--limit <n>', 'at most this many tasks', positiveInt, 50)
      .option('--jsonl', 'one JSON object per line, streamed (for large outputs)'),
  ).action(async (opts: CommonOptions & ListOptions) => {
    await withTarget(opts, async (ctx) => {
      const query: TaskQuery = {
        roomId: opts.room,
        sessionId: opts.session,
        status: opts.status,
        appKey: opts.appKey,
        service: opts.service,
        userId: opts.user,
        since: opts.since,
        until: opts.until,
        limit: opts.limit,
      };
      const found = ctx.target.tasks.listTasks(query);
      if (opts.jsonl) {
        for await (const summary of found) ctx.out(JSON.stringify(summary));
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
          opts.since === undefined && !opts.room && !opts.session && !opts.appKey && !opts.user
            ? 'No task matches in the last 30 days (--since reaches further back).'
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
      .option('--raw', 'show each callback body exactly as received'),
  ).action(async (id: string, opts: CommonOptions & { raw?: boolean; appKey?: string }) => {
    await withTarget(opts, async (ctx) => {
      const ref: TaskRef = { id, appKey: opts.appKey };
      const found = await oneTask(ref, () => ctx.target.tasks.listEventsPage(ref, WHOLE));
      if (!found) throw new CliError(`no ${describeRef(ref)} in ${ctx.where}`);
      const events = found.items;
      if (opts.json) {
        printJson(events.map(eventView));
        return;
      }
      if (events.length === 0) {
        ctx.out(`Task ${id} has no raw callbacks left (they expire after their retention period).`);
        return;
      }
      ctx.out(renderEvents(events, ctx.c, opts.raw === true));
    });
  });
}

function describeRef(ref: TaskRef): string {
  return ref.appKey === undefined ? `task ${ref.id}` : `task ${ref.id} of appKey ${ref.appKey}`;
}

interface ListOptions {
  room?: string;
  session?: string;
  status?: TaskStatus;
  appKey?: string;
  service?: Service;
  user?: string;
  since?: number;
  until?: number;
  limit: number;
  jsonl?: boolean;
}

function timePoint(text: string): number {
  try {
    return parseTimePoint(text, Date.now());
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

// ---------------------------------------------------------------------------------------------------

export function renderTask(task: Task, c: Colors, now: number): string {
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
  const summary = `${plural(task.files.length, 'file')}: ${counts.uploaded} uploaded, ${counts.failed} failed, ${counts.pending} pending`;
  return `${header}\n\n${c.bold(summary)}\n${renderFiles(task.files, c, now)}`;
}

function countFiles(files: FileView[]) {
  return {
    uploaded: files.filter((f) => f.upload === 'uploaded').length,
    failed: files.filter((f) => f.upload === 'failed').length,
    pending: files.filter((f) => f.upload === 'pending').length,
  };
}

function renderFiles(files: FileView[], c: Colors, now: number): string {
  return table(
    ['FILE', 'SIZE', 'UPLOAD', 'ATTEMPTS', 'URL', 'PURGED BY THE PLATFORM'],
    files.map((f) => [
      f.fileName,
      humanSize(f.size),
      f.upload === 'failed'
        ? `${colorStatus('failed', c)} (${f.code ?? '?'}${f.message ? `: ${f.message}` : ''})`
        : colorStatus(f.upload, c),
      String(f.attempts),
      f.url ?? '-',
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

function renderEvents(events: StoredEvent[], c: Colors, raw: boolean): string {
  const lines = table(
    ['TYPE', 'TIMESTAMP', 'RECEIVED', 'SIGNATURE', 'EVENT KEY'],
    events.map((e) => [
      callbackTypeName(e.type),
      isoTime(e.timestamp),
      isoTime(e.receivedAt),
      colorStatus(e.verdict, c),
      c.dim(e.key),
    ]),
    c,
  ).split('\n');
  if (!raw) return lines.join('\n');
  // One line per row in a borderless table: each body goes under its row, outside the columns (a
  // trailing line break of the body is not shown).
  return [lines[0]!, ...events.flatMap((e, i) => [lines[i + 1]!, `  ${e.raw.replace(/\r?\n$/, '')}`])].join('\n');
}
