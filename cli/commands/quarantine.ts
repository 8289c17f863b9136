// `callbacks quarantine list|apply`: callbacks kept aside instead of applied (bad body, signature not
// verified, replay, service mismatch), why, and taking them back out once the cause is fixed.
import { SingleBar } from 'cli-progress';
import { Option, type Command } from 'commander';
import { QUARANTINE_REASONS, type QuarantineEntry, type QuarantineQuery } from '../../lib/domain/task-store.ts';
import { defaults as ingestDefaults } from '../../lib/ingest/config.ts';
import type { SecretsByAppKey } from '../../lib/signature/secrets.ts';
import { parseAllowList, type SourceAllowList } from '../../lib/signature/source-ip.ts';
import { recoverAll, type RecoveredEntry, type RecoverResult } from '../../lib/worker/recover.ts';
import { colorStatus, isoTime, plural, printable, table, type Colors } from '../format.ts';
import {
  CliError,
  confirm,
  printJson,
  withCommonOptions,
  withTarget,
  type CommonOptions,
  type Context,
} from '../inspect.ts';
import { checkQuarantineSince, cidrList, positiveInt, quarantineDays, timeRange } from '../option-parsers.ts';
import { taskEventsFor } from '../events-publisher.ts';
import { secretsFor } from '../secrets.ts';
import { cliIo, setExitCode } from '../io.ts';

interface FilterOptions {
  reason?: string;
  task?: string;
  appKey?: string;
  since?: string;
  until?: string;
  days: number;
  limit?: number;
}

/** The filters with the time range parsed (in the --tz zone). */
interface Filters extends Omit<FilterOptions, 'since' | 'until'> {
  since?: number;
  until?: number;
}

interface ApplyOptions extends FilterOptions {
  dryRun?: boolean;
  yes?: boolean;
  acceptUnverified?: boolean;
  /** --all-unverified: --accept-unverified applies every unverified callback the filters select. */
  allUnverified?: boolean;
  /** --source, the ranges of each value (a range or an address, or a comma list of them). */
  source: string[];
  secretsParam?: string;
  eventsTopic?: string;
}

/** The filters `list` and `apply` share. */
function withFilters(cmd: Command): Command {
  return cmd
    .addOption(new Option('--reason <reason>', 'only this reason').choices(QUARANTINE_REASONS))
    .option('--task <id>', 'only callbacks naming this recordId or imageId')
    .option('--app-key <appKey>', 'only callbacks of this appKey')
    .option('--since <time>', 'received at or after: 30m, 2h, 7d, an ISO date or time, or epoch ms (default: --days)')
    .option('--until <time>', 'received at or before (same forms as --since)')
    .option(
      '--days <n>',
      'look back this many days when --since is not given (at most RAW_EVENT_TTL_DAYS, 7)',
      quarantineDays,
      7,
    )
    .option('--limit <n>', 'at most this many entries', positiveInt);
}

function filtersOf<T extends FilterOptions>(opts: T): Omit<T, 'since' | 'until'> & Filters {
  const range = timeRange(opts);
  checkQuarantineSince(range.since);
  return { ...opts, ...range };
}

function queryOf(opts: Filters): QuarantineQuery {
  return {
    reason: opts.reason,
    taskId: opts.task,
    appKey: opts.appKey,
    since: opts.since,
    until: opts.until,
    sinceDays: opts.days,
    limit: opts.limit,
  };
}

/** "in the last 7 days", "since 2025-11-22T08:00:00Z", with the filters that narrowed it. */
function scope(opts: Filters): string {
  const parts = [opts.since === undefined ? `in the last ${plural(opts.days, 'day')}` : `since ${isoTime(opts.since)}`];
  if (opts.until !== undefined) parts.push(`until ${isoTime(opts.until)}`);
  if (opts.reason) parts.push(`reason ${opts.reason}`);
  if (opts.task) parts.push(`task ${opts.task}`);
  if (opts.appKey) parts.push(`appKey ${opts.appKey}`);
  return printable(parts.join(', '));
}

/** The entries `apply` takes: the oldest first, so that --limit leaves out later ones, never an earlier one. */
async function collect(ctx: Context, opts: Filters): Promise<QuarantineEntry[]> {
  const entries: QuarantineEntry[] = [];
  for await (const e of ctx.target.tasks.listQuarantine({ ...queryOf(opts), oldestFirst: true })) entries.push(e);
  return entries;
}

/**
 * The entries a filter left out around the ones `apply` takes, from twice the signature tolerance before the
 * first to the last: a replay that verifies was received within the tolerance of its timestamp, and so was
 * the callback whose signature it repeats. The earliest of a replay key among them makes the run's later
 * entries with that key replays.
 */
async function around(ctx: Context, entries: QuarantineEntry[], toleranceS: number): Promise<QuarantineEntry[]> {
  // `entries` come oldest first (collect).
  const since = entries[0]!.receivedAt - 2 * toleranceS * 1000;
  const query = { since, until: entries.at(-1)!.receivedAt, oldestFirst: true };
  const found: QuarantineEntry[] = [];
  for await (const e of ctx.target.tasks.listQuarantine(query)) found.push(e);
  return found;
}

/**
 * --source as the allow-list it narrows --accept-unverified to, or null without it. Accepting what does not verify
 * is narrowed on purpose: by the sender's addresses (--source) or the reason it was set aside (--reason), or else
 * said to be meant for every such callback (--all-unverified), never by leaving the filters out.
 */
function acceptedSources(
  opts: Pick<ApplyOptions, 'source' | 'acceptUnverified' | 'allUnverified' | 'reason'>,
): SourceAllowList | null {
  if (opts.source.length > 0 && !opts.acceptUnverified) {
    throw new CliError('--source narrows --accept-unverified: give both, or neither');
  }
  if (opts.allUnverified && !opts.acceptUnverified) {
    throw new CliError('--all-unverified goes with --accept-unverified: give both, or neither');
  }
  if (opts.allUnverified && opts.source.length > 0) {
    throw new CliError('--source narrows what --all-unverified would accept whole: give one of them');
  }
  if (opts.acceptUnverified && opts.source.length === 0 && !opts.reason && !opts.allUnverified) {
    throw new CliError(
      '--accept-unverified applies callbacks whose signature does not verify, forgeries included: narrow it with ' +
        "--source <cidr> (the sender's addresses) or --reason <reason>, or give --all-unverified to accept every one",
    );
  }
  if (opts.source.length === 0) return null;
  // Each range was checked as the option was read (cidrList).
  return parseAllowList(opts.source.join(','), '--source');
}

function appliedState(e: QuarantineEntry, c: Colors): string {
  if (!e.applied) return '-';
  const how = e.applied.verdict === 'accepted_unverified' ? ', unverified' : '';
  return c.green(`${e.applied.outcome} ${isoTime(e.applied.at)}${how}`);
}

export function register(program: Command): void {
  const quarantine = program.command('quarantine').description('callbacks kept aside rather than applied to a task');

  withCommonOptions(
    withFilters(quarantine.command('list').description('quarantined callbacks, newest first, with the reason')),
  ).action(async (given: CommonOptions & FilterOptions) => {
    const opts = filtersOf(given);
    // One entry past --limit tells, without reading the rest, whether there are more.
    const query = { ...queryOf(opts), limit: opts.limit === undefined ? undefined : opts.limit + 1 };
    await withTarget(given, async (ctx) => {
      const entries: QuarantineEntry[] = [];
      for await (const e of ctx.target.tasks.listQuarantine(query)) entries.push(e);
      const more = opts.limit !== undefined && entries.length > opts.limit;
      if (more) entries.length = opts.limit!;
      if (opts.json) {
        printJson(entries);
        return;
      }
      if (entries.length === 0) {
        ctx.out(`Nothing quarantined ${scope(opts)}.`);
        return;
      }
      ctx.out(
        table(
          ['RECEIVED', 'REASON', 'SERVICE', 'TASK', 'APP KEY', 'SOURCE', 'SIGNATURE', 'APPLIED', 'DETAIL'],
          entries.map((e) => [
            isoTime(e.receivedAt),
            e.applied ? e.reason : ctx.c.red(e.reason),
            e.service,
            e.taskId ?? '-',
            e.appKey ?? '-',
            e.sourceIp ?? ctx.c.dim('unknown'),
            colorStatus(e.verdict, ctx.c),
            appliedState(e, ctx.c),
            e.detail,
          ]),
          ctx.c,
        ),
      );
      const waiting = entries.filter((e) => !e.applied).length;
      const count = more
        ? `${entries.length} shown of more than ${entries.length} callbacks`
        : plural(entries.length, 'callback');
      ctx.out(
        ctx.c.dim(
          `${count} quarantined ${scope(opts)}, newest first (${waiting} not applied); ` +
            `${more ? `raise --limit (now ${opts.limit}) for the rest; ` : ''}` +
            '`--json` shows their raw bodies, `callbacks quarantine apply` applies them once the cause is fixed.',
        ),
      );
    });
  });

  withCommonOptions(
    withFilters(
      quarantine
        .command('apply')
        .description(
          "apply quarantined callbacks as the worker would, parsed with today's code and checked with today's secrets",
        ),
    )
      .option('--dry-run', 'say what would happen, change nothing')
      .option('--yes', 'do not ask for confirmation')
      .option(
        '--accept-unverified',
        'also apply callbacks whose signature still does not verify (their events say accepted_unverified)',
      )
      .option(
        '--source <cidr>',
        'with --accept-unverified, accept only callbacks sent from this range or address (repeatable)',
        cidrList('--source'),
        [] as string[],
      )
      .option(
        '--all-unverified',
        'with --accept-unverified, instead of --source or --reason: accept every unverified callback selected',
      )
      .option(
        '--events-topic <arn>',
        "task-events topic to publish to (default: the local stack's, TASK_EVENTS_TOPIC_ARN, or the stage's)",
      )
      .option(
        '--secrets-param <name>',
        'SSM parameter holding the secrets (default with --stage: /<service>/<stage>/callback-secrets; ' +
          'CALLBACK_SECRETS wins)',
      ),
  ).action(async (given: CommonOptions & ApplyOptions) => {
    const opts = filtersOf(given);
    const acceptFrom = acceptedSources(opts);
    await withTarget(given, async (ctx) => {
      const entries = await collect(ctx, opts);
      if (entries.length === 0) {
        if (opts.json) printJson(summaryJson(opts, []));
        else ctx.out(`Nothing quarantined ${scope(opts)}: nothing to apply.`);
        return;
      }
      if (!opts.dryRun && !opts.yes) {
        if (!cliIo().stdin.isTTY)
          throw new CliError(
            'quarantine apply writes to the tasks table: pass --yes to confirm when not at a terminal',
          );
        const count = plural(entries.length, 'quarantined callback');
        const question = `Apply ${count} (${scope(opts)}) to ${ctx.where}? [y/N] `;
        if (!(await confirm(question))) {
          ctx.out('Nothing applied.');
          return;
        }
      }
      const toleranceS = Number(cliIo().env.SIGNATURE_TOLERANCE_S) || ingestDefaults.toleranceS;
      const others = await around(ctx, entries, toleranceS);
      const source = secretsFor(ctx.target, opts);
      const taskEvents = opts.dryRun ? null : await taskEventsFor(ctx.target, opts);
      let secrets: Promise<SecretsByAppKey> | undefined;
      const bar =
        cliIo().stderr.isTTY && !opts.json
          ? new SingleBar({
              format: `${opts.dryRun ? 'checking' : 'applying'} [{bar}] {value}/{total} callbacks`,
              hideCursor: true,
              clearOnComplete: true,
              stream: cliIo().stderr as NodeJS.WriteStream,
            })
          : null;
      bar?.start(entries.length, 0);
      let results: RecoveredEntry[];
      try {
        results = await recoverAll(
          entries,
          {
            store: ctx.target.tasks,
            events: taskEvents?.publisher,
            secrets: () => (secrets ??= source.load()),
            toleranceS,
            acceptUnverified: opts.acceptUnverified === true,
            acceptFrom,
            dryRun: opts.dryRun === true,
            now: Date.now,
          },
          { around: others, onResult: () => bar?.increment() },
        );
      } finally {
        bar?.stop();
        taskEvents?.close();
      }
      if (opts.json) printJson(summaryJson(opts, results));
      else ctx.out(renderSummary(opts, results, ctx));
      if (!opts.dryRun && results.some((r) => r.result.outcome === 'failing')) setExitCode(1);
    });
  });
}

function countBy<T>(items: T[], key: (item: T) => string): [string, number][] {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

type ApplyFilters = Omit<ApplyOptions, 'since' | 'until'> & Filters;

function summaryJson(opts: ApplyFilters, results: RecoveredEntry[]) {
  const of = (o: RecoverResult['outcome']) => results.filter((r) => r.result.outcome === o).length;
  const failing = results.filter((r) => r.result.outcome === 'failing');
  return {
    dryRun: opts.dryRun === true,
    matched: results.length,
    applied: of('applied'),
    duplicate: of('duplicate'),
    wouldApply: of('would_apply'),
    stillFailing: failing.length,
    reasons: countBy(failing, (r) => (r.result as { why: string }).why).map(([why, count]) => ({ why, count })),
    entries: results.map(({ entry, result }) => ({
      receivedAt: entry.receivedAt,
      messageId: entry.messageId,
      reason: entry.reason,
      sourceIp: entry.sourceIp ?? null,
      ...result,
    })),
  };
}

/** At most this many replays are named one by one in the human summary (`--json` names them all). */
const REPLAYS_NAMED = 10;

function renderSummary(opts: ApplyFilters, results: RecoveredEntry[], ctx: Context): string {
  const s = summaryJson(opts, results);
  const lines: string[] = [];
  if (opts.dryRun) {
    lines.push(
      `Dry run, nothing changed: of ${plural(s.matched, 'quarantined callback')} (${scope(opts)}), ` +
        `${s.wouldApply} would be applied and ${s.stillFailing} would still fail.`,
    );
  } else {
    const unverified = results.filter(
      (r) => r.result.outcome === 'applied' && r.result.verdict === 'accepted_unverified',
    ).length;
    lines.push(
      `${plural(s.matched, 'quarantined callback')} (${scope(opts)}): ${ctx.c.green(`${s.applied} applied`)}` +
        `${unverified ? ` (${unverified} unverified)` : ''}, ${s.duplicate} duplicate (already applied), ` +
        `${s.stillFailing ? ctx.c.red(`${s.stillFailing} still failing`) : '0 still failing'}.`,
    );
  }
  for (const { why, count } of s.reasons) lines.push(`  ${String(count).padStart(5)}  ${printable(why)}`);
  const replays = results.filter((r) => r.result.outcome === 'failing' && r.result.replayOf !== undefined);
  for (const { entry, result } of replays.slice(0, REPLAYS_NAMED)) {
    const of = (result as { replayOf: string }).replayOf;
    lines.push(
      printable(
        `  replay: ${entry.messageId} (received ${isoTime(entry.receivedAt)}, task ${entry.taskId ?? '-'}, ` +
          `source ${entry.sourceIp ?? 'unknown'}) repeats the signature of ${of}`,
      ),
    );
  }
  if (replays.length > REPLAYS_NAMED) {
    lines.push(ctx.c.dim(`  and ${replays.length - REPLAYS_NAMED} more replays (--json lists them all)`));
  }
  const unverifiable = results.some((r) => r.result.outcome === 'failing' && r.result.kind === 'signature');
  if (unverifiable && !opts.acceptUnverified) {
    lines.push(
      ctx.c.dim(
        'Fix the secret (CALLBACK_SECRETS or the SSM parameter) and run this again, or apply them anyway with ' +
          "--accept-unverified and --source <cidr> (the sender's addresses), --reason, or --all-unverified.",
      ),
    );
  }
  return lines.join('\n');
}
