// `callbacks status`: the receiver at a glance, as an operator opens a shift with it, or is woken by an alarm: the
// queue's backlog and how old its oldest message is, dead letters, the quarantine waiting by reason, the signature
// settings, the alarms in alarm, then what is wrong with the tasks now (uploads failing, lost files, stalled tasks,
// the next purge deadline: cli/task-facts.ts) and the last callback received. Every read is bounded; a part that
// cannot be read (a permission missing, a metric not published locally) is shown as n/a with why, never fails the
// rest.
import type { Command } from 'commander';
import { QUARANTINE_REASONS, type QuarantineReason } from '../../lib/domain/task-store.ts';
import { errorSentence } from '../../lib/text.ts';
import { fields, plural, printable, styled, type Colors } from '../format.ts';
import {
  type FailingUploads,
  type LastCallback,
  type TaskFacts,
  failingUploadsLine,
  lastCallbackLine,
  lostFilesLine,
  nextPurgeLine,
  readFailingUploads,
  readLastCallback,
  readTaskFacts,
  stalledTasksLine,
} from '../task-facts.ts';
import { printJson, withCommonOptions, withTarget, type CommonOptions } from '../inspect.ts';
import { quarantineDays } from '../option-parsers.ts';
import { stageInsight, type FiringAlarm, type IngestSettings, type StageInsight } from '../stage-insight.ts';
import type { Target } from '../../devkit/local/target.ts';

/** The most quarantine entries read for the counts: beyond, the counts say "at least". */
export const QUARANTINE_READ_LIMIT = 1000;

export interface StatusReport {
  target: string;
  queue: { visible: number; inFlight: number; delayed: number; oldestAgeS: number | null } | null;
  deadLetters: { visible: number; inFlight: number } | null;
  quarantine: {
    days: number;
    /** Every entry received in the window; `waiting` of them not applied since, `applied` applied. */
    total: number;
    waiting: number;
    applied: number;
    /** False when QUARANTINE_READ_LIMIT entries were read: the counts are lower bounds. */
    complete: boolean;
    /** The entries waiting, by reason. */
    byReason: Partial<Record<QuarantineReason, number>>;
  } | null;
  signature: IngestSettings | null;
  /** Null where alarms do not exist (the local stack) or could not be read. */
  alarms: FiringAlarm[] | null;
  failingUploads: FailingUploads | null;
  tasks: TaskFacts | null;
  lastCallback: LastCallback | null;
  /** What could not be read, and why: one sentence each. */
  unavailable: Record<string, string>;
}

export interface StatusOptions {
  days: number;
  now?: number;
  /** A deployed stage's CloudWatch and Lambda readings; null for the local stack or explicit env targets. */
  insight: StageInsight | null;
}

export async function readStatus(target: Target, opts: StatusOptions): Promise<StatusReport> {
  const unavailable: Record<string, string> = {};
  const attempt = async <T>(part: string, read: () => Promise<T>): Promise<T | null> => {
    try {
      return await read();
    } catch (err) {
      unavailable[part] = errorSentence(err);
      return null;
    }
  };
  const { insight } = opts;
  const now = opts.now ?? Date.now();
  const [queue, oldestAgeS, deadLetters, quarantine, signature, alarms, failingUploads, tasks, lastCallback] =
    await Promise.all([
      attempt('queue', () => target.queue.depth()),
      insight ? attempt('queueAge', () => insight.oldestMessageAgeS()) : Promise.resolve(null),
      attempt('deadLetters', () => target.dlq.depth()),
      attempt('quarantine', () => quarantineCounts(target, opts.days)),
      attempt('signature', () => signatureSettings(target, insight)),
      insight ? attempt('alarms', () => insight.alarmsInAlarm()) : Promise.resolve(null),
      attempt('failingUploads', () => readFailingUploads(target, now)),
      attempt('tasks', () => readTaskFacts(target, opts.days, now)),
      attempt('lastCallback', () => readLastCallback(target, opts.days, now)),
    ]);
  // Locally there is no CloudWatch: reading the oldest message's SentTimestamp would count as a receive.
  if (!insight) {
    unavailable.queueAge ??= 'no CloudWatch metrics for this target';
    unavailable.alarms ??= 'no CloudWatch alarms for this target';
  }
  return {
    target: target.describe,
    queue: queue && { ...queue, oldestAgeS },
    deadLetters: deadLetters && { visible: deadLetters.visible, inFlight: deadLetters.inFlight },
    quarantine,
    signature,
    alarms,
    failingUploads,
    tasks,
    lastCallback,
    unavailable,
  };
}

async function quarantineCounts(target: Target, days: number): Promise<NonNullable<StatusReport['quarantine']>> {
  const byReason: Partial<Record<QuarantineReason, number>> = {};
  let total = 0;
  let applied = 0;
  for await (const e of target.tasks.listQuarantine({ sinceDays: days, limit: QUARANTINE_READ_LIMIT })) {
    total++;
    // Applied since (`quarantine apply`): it waits no more.
    if (e.applied) applied++;
    else byReason[e.reason] = (byReason[e.reason] ?? 0) + 1;
  }
  return { days, total, waiting: total - applied, applied, complete: total < QUARANTINE_READ_LIMIT, byReason };
}

async function signatureSettings(target: Target, insight: StageInsight | null): Promise<IngestSettings> {
  if (insight) return insight.ingestSettings();
  if (target.local?.signatureMode) {
    return { signatureMode: target.local.signatureMode, allowedSources: target.local.allowedSources ?? [] };
  }
  throw new Error(
    target.local ? 'the local stack was started by an older version' : 'only known for the local stack or a stage',
  );
}

/** The report as label/value lines. */
export function statusLines(r: StatusReport, now: number, c: Colors): string {
  const na = (part: string) => c.dim(`n/a (${r.unavailable[part] ?? 'unknown'})`);
  const count = (n: number, word: string) => (n > 0 ? c.yellow(plural(n, word)) : plural(n, word));
  const pairs: [string, string][] = [];
  if (r.queue) {
    const age = r.queue.oldestAgeS === null ? na('queueAge') : `${Math.round(r.queue.oldestAgeS)} s`;
    const { visible, inFlight, delayed } = r.queue;
    pairs.push(['queue', styled`${visible} waiting, ${inFlight} in flight, ${delayed} delayed; oldest message ${age}`]);
  } else pairs.push(['queue', na('queue')]);
  const dlq = r.deadLetters;
  const hint = (n: number, command: string) => (n > 0 ? styled`: ${c.dim(command)}` : '');
  pairs.push([
    'dead letters',
    dlq
      ? styled`${count(dlq.visible, 'message')}${dlq.inFlight ? `, ${dlq.inFlight} in flight` : ''}${hint(
          dlq.visible + dlq.inFlight,
          'callbacks dlq list',
        )}`
      : na('deadLetters'),
  ]);
  if (r.quarantine) {
    const q = r.quarantine;
    const reasons = QUARANTINE_REASONS.filter((reason) => q.byReason[reason]).map((reason) => {
      return `${reason} ${q.byReason[reason]}`;
    });
    const waiting = q.complete ? count(q.waiting, 'callback') : c.yellow(`at least ${plural(q.waiting, 'callback')}`);
    const applied = q.applied > 0 ? `; ${q.applied} applied since` : '';
    pairs.push([
      'quarantine',
      styled`${waiting} waiting, received in the last ${plural(q.days, 'day')}${
        reasons.length ? `: ${reasons.join(', ')}` : ''
      }${applied}${hint(q.waiting, 'callbacks quarantine list')}`,
    ]);
  } else pairs.push(['quarantine', na('quarantine')]);
  pairs.push([
    'signatures',
    r.signature
      ? `mode ${r.signature.signatureMode ?? 'unset'}; sources ${r.signature.allowedSources.join(', ') || 'any'}`
      : na('signature'),
  ]);
  pairs.push([
    'alarms',
    r.alarms === null
      ? na('alarms')
      : r.alarms.length === 0
        ? c.green('none in alarm')
        : c.red(`${r.alarms.length} in alarm: ${r.alarms.map((a) => a.name).join(', ')}`),
  ]);
  // What is wrong with the tasks now.
  pairs.push(['failing uploads', r.failingUploads ? failingUploadsLine(r.failingUploads, c) : na('failingUploads')]);
  pairs.push(['lost files', r.tasks ? lostFilesLine(r.tasks, c) : na('tasks')]);
  pairs.push(['stalled tasks', r.tasks ? stalledTasksLine(r.tasks, c, now) : na('tasks')]);
  pairs.push(['next purge', r.tasks ? nextPurgeLine(r.tasks, c, now) : na('tasks')]);
  pairs.push([
    'last callback',
    r.lastCallback
      ? lastCallbackLine(r.lastCallback, c, now)
      : r.unavailable.lastCallback
        ? na('lastCallback')
        : c.yellow(`none received in the last ${plural(r.tasks?.days ?? 0, 'day')}`),
  ]);
  return fields(pairs, c);
}

export function register(program: Command): void {
  withCommonOptions(
    program
      .command('status')
      .description(
        'queue backlog, dead letters, quarantine, signature settings, alarms, what is wrong with the tasks now ' +
          '(failing uploads, lost files, stalled tasks, the next purge) and the last callback received',
      )
      .option(
        '--days <n>',
        'count the quarantine, lost files and stalled tasks of this many days back (at most RAW_EVENT_TTL_DAYS, 7)',
        quarantineDays,
        7,
      ),
  ).action(async (opts: CommonOptions & { days: number }) => {
    await withTarget(opts, async (ctx) => {
      const insight = ctx.target.stage ? await stageInsight(ctx.target.stage, ctx.target.region) : null;
      try {
        const report = await readStatus(ctx.target, { days: opts.days, insight, now: ctx.now });
        if (opts.json) {
          printJson(report);
          return;
        }
        ctx.out(`Status of ${printable(ctx.where)}`);
        ctx.out(statusLines(report, ctx.now, ctx.c));
      } finally {
        insight?.close();
      }
    });
  });
}
